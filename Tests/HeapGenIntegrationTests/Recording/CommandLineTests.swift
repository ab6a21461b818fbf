// What the user sees: pass-through of the program's I/O and status, and
// heapgen's own refusals and failures (one line, the right exit status).

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class PassThroughTests: XCTestCase {
    func testStdinStdoutStderrPassUnchanged() throws {
        let exe = try Fixture.build("passthru.c")
        var input = Data("first line\nsecond line\n\nlast line without newline".utf8)
        input.append(contentsOf: (0...255).map { UInt8($0) })          // every byte value
        input.append(Data(repeating: 0x41, count: 100_000))             // more than a pipe buffer
        let rec = try HeapGenCLI.recording(exe, [], flags: ["--quiet"], stdin: input)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, input, "stdout is stdin, byte for byte")
        XCTAssertEqual(rec.result.stderrText, "passthru: to stderr\n", "stderr is the program's only (--quiet)")
    }

    /// The program starts with the signal mask and ignored signals heapgen was started with:
    /// the mask was emptied (a supervisor's blocked SIGUSR1 lost), and glibc's posix_spawn
    /// left its two internal signals (32, 33) ignored across the exec.
    func testSignalMaskAndIgnoredSignalsPassUnchanged() throws {
        let exe = try Fixture.build("sigstate.c")
        let native = try runProcess(exe, ["launch", exe, "show"])
        XCTAssertStatus(native, 0)
        XCTAssertTrue(native.stdoutText.contains("SigBlk:\t0000000000000200\n"), native.stdoutText)   // SIGUSR1
        XCTAssertTrue(native.stdoutText.hasSuffix("SigIgn:\t0000000000000800\n"), native.stdoutText)      // SIGUSR2
        let trace = try TestPaths.freshDirectory("sigstate") + "/trace"
        let traced = try runProcess(exe, ["launch", try TestPaths.heapgen(), "record", "--quiet", "-o", trace, "--", exe, "show"])
        XCTAssertStatus(traced, 0)
        XCTAssertEqual(traced.stdoutText, native.stdoutText, traced.transcript)
    }

    func testExitStatusesPassThrough() throws {
        let exe = try Fixture.build("passthru.c")
        for code: Int32 in [0, 3, 42] {
            let rec = try HeapGenCLI.recording(exe, ["\(code)"], flags: ["--quiet"], stdin: Data("x\n".utf8))
            XCTAssertStatus(rec.result, code)
            XCTAssertEqual(rec.result.stdoutText, "x\n")
            let s = try HeapGenCLI.summary(rec.trace)
            XCTAssertEqual(s.endReason, "exited")
            XCTAssertEqual(s.endStatus, Int(code))
        }
    }

    func testSummaryLineWithoutQuiet() throws {
        let exe = try Fixture.build("passthru.c")
        let rec = try HeapGenCLI.recording(exe, [], stdin: Data())
        XCTAssertStatus(rec.result, 0)
        let own = rec.result.stderrLines.filter { $0.hasPrefix("heapgen:") }
        XCTAssertEqual(own.count, 1, "one summary line: \(rec.result.stderrText)")
    }
}

final class FaultTests: XCTestCase {
    /// One line on stderr, starting with "heapgen:", no crash text.
    private func assertOneLine(_ r: ProcessResult, mentioning: String? = nil, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.stderrLines.count, 1, "exactly one line on stderr\n\(r.transcript)", file: file, line: line)
        XCTAssertTrue(r.stderrText.hasPrefix("heapgen"), "\(r.transcript)", file: file, line: line)
        if let mentioning {
            XCTAssertTrue(r.stderrText.contains(mentioning), "stderr names \(mentioning)\n\(r.transcript)", file: file, line: line)
        }
        XCTAssertNoCrashText(r.stderrText + r.stdoutText, file: file, line: line)
    }

    func testStaticallyLinkedProgramIsRefusedQuickly() throws {
        let exe = try Fixture.build("hello.c", flags: ["-static"], output: "hello-static")
        let rec = try HeapGenCLI.recording(exe, [], timeout: 60)
        XCTAssertStatus(rec.result, 126)
        XCTAssertLessThan(rec.result.seconds, 10, "refused quickly, not after a hang")
        assertOneLine(rec.result, mentioning: "static")
    }

    /// A setuid or setgid program that would run as another user or group: the loader
    /// ignores LD_PRELOAD there, so heapgen refuses it at once. As root, copies given to
    /// nobody and to nogroup; as anyone else, the system's setuid-root `passwd` and
    /// setgid-shadow `chage` (never run: heapgen refuses them before).
    func testSetuidProgramIsRefused() throws {
        var programs: [String] = []
        if getuid() == 0 {
            let exe = try Fixture.build("hello.c")
            let dir = try TestPaths.freshDirectory("setuid")
            for (name, mode, owner, group) in [("hello-setuid", 0o4755, uid_t(65534), gid_t.max),
                                               ("hello-setgid", 0o2755, uid_t.max, gid_t(65534))] {
                let copy = dir + "/" + name
                try FileManager.default.copyItem(atPath: exe, toPath: copy)
                XCTAssertEqual(chown(copy, owner, group), 0)
                XCTAssertEqual(chmod(copy, mode_t(mode)), 0)
                programs.append(copy)
            }
        } else {
            programs = ["/usr/bin/passwd", "/usr/bin/chage"].filter { FileManager.default.fileExists(atPath: $0) }
            if programs.isEmpty { throw XCTSkip("no setuid or setgid program of another user here to refuse") }
        }
        for program in programs {
            let rec = try HeapGenCLI.recording(program, [], timeout: 60)
            XCTAssertStatus(rec.result, 126, program)
            assertOneLine(rec.result, mentioning: "setuid or setgid to another user or group")
        }
    }

    /// A setuid program of our own changes nobody's identity (root running su, ping or
    /// mount): the loader preloads it as any other, and heapgen traces it. It refused
    /// these, saying the loader would not.
    func testASetuidProgramOfOurOwnIsTraced() throws {
        let exe = try Fixture.build("child.c")
        let dir = try TestPaths.freshDirectory("setuid-own")
        let copy = dir + "/hello-own"
        try FileManager.default.copyItem(atPath: exe, toPath: copy)
        XCTAssertEqual(chmod(copy, 0o6755), 0)
        let native = try runProcess(copy, [], timeout: 60)
        let rec = try HeapGenCLI.recording(copy, [], flags: ["--quiet"], timeout: 60)
        XCTAssertStatus(rec.result, native.status)
        XCTAssertEqual(rec.result.stdout, native.stdout)
        XCTAssertEqual(rec.result.stderrText, native.stderrText, "nothing but the program's own")
        XCTAssertEqual(try HeapGenCLI.summary(rec.trace).calls("calloc"), 6)
    }

    func testMissingProgram() throws {
        let rec = try HeapGenCLI.recording("/nonexistent/heapgen-no-such-program", [], timeout: 60)
        XCTAssertStatus(rec.result, 127)
        assertOneLine(rec.result, mentioning: "heapgen-no-such-program")
        let rec2 = try HeapGenCLI.recording("heapgen-no-such-program-on-path", [], timeout: 60)
        XCTAssertStatus(rec2.result, 127)
        assertOneLine(rec2.result)
    }

    func testNotExecutableProgram() throws {
        let dir = try TestPaths.freshDirectory("noexec")
        let path = dir + "/plain.txt"
        _ = FileManager.default.createFile(atPath: path, contents: Data("hello\n".utf8))
        let rec = try HeapGenCLI.recording(path, [], timeout: 60)
        XCTAssertStatus(rec.result, 126)
        assertOneLine(rec.result)
    }

    func testBadFlags() throws {
        let heapgen = try TestPaths.heapgen()
        let cases: [[String]] = [
            ["record", "--no-such-flag", "--", "/bin/true"],
            ["record", "--output", "/tmp/x.trace"],                            // no program
            ["record", "--ring-slots", "1000", "--", "/bin/true"],             // not a power of two
            ["record", "--ring-slots", "many", "--", "/bin/true"],
            ["record", "--mark-every", "0", "--", "/bin/true"],             // would mean "never"
            ["run", "--mark-every", "0ms", "--", "/bin/true"],
            ["record", "--retention-at", "", "--", "/bin/true"],
            // Nine 500-byte labels: more than the shim's 4 KiB list holds.
            ["record"] + (0 ..< 9).flatMap { ["--retention-at", String(repeating: Character("\($0)"), count: 500)] } + ["--", "/bin/true"],
            ["info"],
            ["info", "a.trace", "--format", "xml"],
            ["no-such-subcommand"],
        ]
        for args in cases {
            let r = try runProcess(heapgen, args, timeout: 60)
            XCTAssertStatus(r, 64, "heapgen \(args.joined(separator: " "))")
            XCTAssertNoCrashText(r.stderrText)
            XCTAssertFalse(r.stderrText.isEmpty, "a usage message for \(args)")
        }
    }

    /// A real trace, then damaged copies of it.
    func testDamagedTracesAreRejectedWithOneLine() throws {
        let exe = try Fixture.build("functions.c")
        let rec = try HeapGenCLI.recording(exe)
        XCTAssertStatus(rec.result, 0)
        let good = try Data(contentsOf: URL(fileURLWithPath: rec.trace))
        XCTAssertGreaterThan(good.count, 100)
        let dir = try TestPaths.freshDirectory("damaged")

        var variants: [(String, Data)] = []
        var flipped = good
        for i in stride(from: good.count / 2, to: min(good.count / 2 + 8, good.count), by: 1) { flipped[i] ^= 0xA5 }
        variants.append(("flipped-middle.trace", flipped))
        var flippedEnd = good
        flippedEnd[good.count - 3] ^= 0x01
        variants.append(("flipped-end.trace", flippedEnd))
        var flippedLength = good
        flippedLength[16] ^= 0x40     // the first chunk's length field
        variants.append(("flipped-length.trace", flippedLength))
        // Cut later, a trace is salvaged (SalvageCommandTests); cut inside the process chunk it is not.
        variants.append(("truncated-in-process-chunk.trace", good.prefix(20)))
        variants.append(("header-only.trace", good.prefix(16)))
        variants.append(("short-header.trace", good.prefix(10)))
        variants.append(("empty.trace", Data()))
        variants.append(("text.trace", Data("this is not a heapgen trace\n".utf8)))
        var badVersion = good
        badVersion[8] = 9
        variants.append(("bad-version.trace", badVersion))
        var random = Data(count: 4096)
        var x: UInt64 = 0x1234_5678_9ABC_DEF1
        for i in 0..<random.count { x ^= x << 13; x ^= x >> 7; x ^= x << 17; random[i] = UInt8(truncatingIfNeeded: x) }
        random.replaceSubrange(0..<16, with: good.prefix(16))   // valid header, garbage chunks
        variants.append(("garbage-after-header.trace", random))

        let heapgen = try TestPaths.heapgen()
        for (name, bytes) in variants {
            let path = dir + "/" + name
            _ = FileManager.default.createFile(atPath: path, contents: bytes)
            for args in [["info", path, "--format", "json"], ["info", path], ["dump", path]] {
                let r = try runProcess(heapgen, args, timeout: 60)
                XCTAssertStatus(r, 65, "heapgen \(args.joined(separator: " "))")
                assertOneLine(r, mentioning: path)
            }
        }

        let missing = dir + "/missing.trace"
        for args in [["info", missing, "--format", "json"], ["dump", missing]] {
            let r = try runProcess(heapgen, args, timeout: 60)
            XCTAssertStatus(r, 66, "heapgen \(args.joined(separator: " "))")
            assertOneLine(r, mentioning: missing)
        }
        // A directory cannot be opened as a trace either.
        let r = try runProcess(heapgen, ["info", dir, "--format", "json"], timeout: 60)
        XCTAssertTrue(r.status == 66 || r.status == 65, "directory: \(r.transcript)")
        assertOneLine(r, mentioning: dir)
    }
}

final class CollectorDeathTests: XCTestCase {
    /// slow.c allocates in rounds for ~3 s with a 1,024-slot ring; the collector is
    /// SIGKILLed early (and reaped at once, as a shell would): the program must
    /// notice, detach, and finish on its own.
    func testProgramSurvivesCollectorKill() throws {
        try survive(reapCollector: true)
    }

    /// The same, but heapgen's parent does not reap it right away (a zombie
    /// collector): the program must not wait for a collector that is gone.
    func testProgramSurvivesCollectorKillBeforeItIsReaped() throws {
        try survive(reapCollector: false)
    }

    private func survive(reapCollector: Bool, file: StaticString = #filePath, line: UInt = #line) throws {
        let exe = try Fixture.build("slow.c")
        let dir = try TestPaths.freshDirectory("survive")
        let pidFile = dir + "/pid", doneFile = dir + "/done"
        let (heapgen, _) = try HeapGenCLI.start(exe, [pidFile, doneFile, "300"], flags: ["--ring-slots", "1024", "--quiet"])
        defer { _ = heapgen.wait(timeout: 1) }

        var childPid: Int32 = 0
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
               let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                childPid = pid
                break
            }
            usleep(10_000)
        }
        guard childPid > 0 else {
            _ = kill(heapgen.pid, SIGKILL)
            return XCTFail("the fixture never wrote its pid\n\(heapgen.wait(timeout: 10).transcript)", file: file, line: line)
        }
        defer { if !FileManager.default.fileExists(atPath: doneFile) { kill(childPid, SIGKILL) } }
        usleep(300_000)   // let it fill the ring a few times
        XCTAssertFalse(FileManager.default.fileExists(atPath: doneFile), "still running when the collector dies", file: file, line: line)
        XCTAssertEqual(kill(heapgen.pid, SIGKILL), 0, file: file, line: line)
        if reapCollector {
            let collector = heapgen.wait(timeout: 30)
            XCTAssertTrue(collector.signaled && collector.status == 137, "heapgen killed\n\(collector.transcript)", file: file, line: line)
        }

        // The program goes on (about 3 s of work) and finishes.
        let finish = Date().addingTimeInterval(reapCollector ? 90 : 40)
        while Date() < finish && !FileManager.default.fileExists(atPath: doneFile) { usleep(20_000) }
        XCTAssertTrue(FileManager.default.fileExists(atPath: doneFile),
                      "the program never finished after the collector died (blocked on a full ring?)", file: file, line: line)
        // And it is gone (or a zombie waiting for init): not stuck.
        var gone = false
        let exitDeadline = Date().addingTimeInterval(20)
        while Date() < exitDeadline {
            if let stat = try? String(contentsOfFile: "/proc/\(childPid)/stat", encoding: .utf8) {
                if let close = stat.lastIndex(of: ")"), stat[stat.index(close, offsetBy: 2)] == "Z" { gone = true; break }
            } else {
                gone = true; break
            }
            usleep(20_000)
        }
        if !gone { kill(childPid, SIGKILL) }
        XCTAssertTrue(gone, "the program did not exit after finishing", file: file, line: line)
    }
}
