// Issue 7: the shim <-> collector transport and the process lifecycle. The
// program must behave exactly as without heapgen (its descriptors, sockets,
// environment, address space), and every process it starts must be
// accounted for: traced with its own trace, with its real exit status, or
// left alone with a clean environment.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class TransportTests: XCTestCase {
    /// The program without heapgen, with the same environment.
    private func plain(_ program: String, _ arguments: [String] = [], environment: [String: String]? = nil) throws -> ProcessResult {
        try runProcess(program, arguments, environment: environment, timeout: 120)
    }

    private func summaries(_ rec: Recording) throws -> [Summary] {
        try rec.allTraces.map { try HeapGenCLI.summary($0) }
    }

    /// Item 2: the program closes every inherited descriptor, puts a socket of
    /// its own on fds 500...505 (where heapgen's descriptors were) and forks; the
    /// child writes WORKER-HELLO on each. heapgen must neither speak on nor
    /// close them: the parent's peer receives exactly what it receives without
    /// heapgen, and the child still gets its own trace.
    func testProgramsSocketOnHeapgensOldNumbersIsLeftAlone() throws {
        let exe = try Fixture.build("ownsocket.c")
        let without = try plain(exe)
        XCTAssertStatus(without, 0)
        var expected = "received 102 bytes:\n"
        for fd in 500...505 { expected += "\(fd):WORKER-HELLO\n" }
        expected += "child status 0\n"
        XCTAssertEqual(without.stdoutText, expected, without.transcript)

        let rec = try HeapGenCLI.recording(exe)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, without.stdout, "byte for byte as without heapgen\n\(rec.result.transcript)")
        let programErrors = rec.result.stderrLines.filter { !$0.hasPrefix("heapgen: ") }
        XCTAssertEqual(programErrors, without.stderrLines, "the child could write on all six")
        XCTAssertFalse(rec.result.stderrText.contains("warning"), rec.result.transcript)
        XCTAssertEqual(rec.allTraces.count, 2, "\(rec.allTraces)\n\(rec.result.transcript)")
        let parent = try HeapGenCLI.summary(rec.trace)
        XCTAssertGreaterThanOrEqual(parent.bytes("malloc"), 100, "\(parent)")
        guard let childPath = rec.allTraces.first(where: { $0 != rec.trace }) else { return XCTFail("no child trace") }
        let child = try HeapGenCLI.summary(childPath)
        XCTAssertEqual(child.processOrigin, "fork")
        XCTAssertEqual(child.calls("malloc"), 6, "\(child)")
        XCTAssertEqual(child.frees("free"), 6)
        XCTAssertEqual(child.endReason, "exited")
        XCTAssertEqual(child.endStatus, 0)
    }

    /// Item 13: a program that closes every inherited descriptor (closefrom(3))
    /// and execs another: the exec'd program is traced all the same.
    func testProgramExecdAfterClosefromIsTraced() throws {
        let exe = try Fixture.build("closefds.c")
        let next = try Fixture.build("fdchild.c")
        let without = try plain(exe, [next])
        XCTAssertEqual(without.stdoutText, "fdchild keeps 5 blocks\n", without.transcript)

        let rec = try HeapGenCLI.recording(exe, [next])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, without.stdout, rec.result.transcript)
        XCTAssertFalse(rec.result.stderrText.contains("warning"), rec.result.transcript)
        let first = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(first.calls("malloc"), 1, "\(first)")
        XCTAssertEqual(first.endReason, "execed", "\(first)")
        guard let pid = first.processPid else { return XCTFail("no pid") }
        XCTAssertEqual(rec.allTraces, [rec.trace, rec.trace + ".\(pid).1"])
        let second = try HeapGenCLI.summary(rec.trace + ".\(pid).1")
        XCTAssertEqual(second.processOrigin, "exec")
        XCTAssertEqual(second.calls("malloc"), 9, "\(second)")
        XCTAssertEqual(second.bytes("malloc"), 9 * 91)
        XCTAssertEqual(second.frees("free"), 4)
        XCTAssertEqual(second.liveObjects, 5)
        XCTAssertEqual(second.endReason, "exited")
        XCTAssertEqual(second.endStatus, 0)
    }

    /// Item 13: Python's subprocess closes the child's inherited descriptors
    /// (close_fds=True, its default); the child is traced anyway.
    func testPythonSubprocessWithCloseFdsIsTraced() throws {
        let python = "/usr/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw TestSupportError("\(python) not found: install python3")
        }
        let next = try Fixture.build("fdchild.c")
        let script = "import subprocess, sys\nr = subprocess.run([sys.argv[1]], close_fds=True)\nprint('child returned', r.returncode)\n"
        let without = try plain(python, ["-c", script, next])
        XCTAssertEqual(without.stdoutText, "fdchild keeps 5 blocks\nchild returned 0\n", without.transcript)

        let rec = try HeapGenCLI.recording(python, ["-c", script, next])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, without.stdout, rec.result.transcript)
        XCTAssertFalse(rec.result.stderrText.contains("warning"), rec.result.transcript)
        let all = try summaries(rec)
        let children = all.filter { $0.string("process.executable")?.hasSuffix("/fdchild") ?? false }
        XCTAssertEqual(children.count, 1, "one trace of the child among \(rec.allTraces)")
        guard let child = children.first else { return }
        XCTAssertEqual(child.calls("malloc"), 9, "\(child)")
        XCTAssertEqual(child.frees("free"), 4)
        XCTAssertEqual(child.endReason, "exited")
    }

    /// Item 13: Foundation's Process starts its child with the inherited
    /// descriptors closed; the child is traced anyway.
    func testFoundationProcessChildIsTraced() throws {
        let exe = try Fixture.build("ProcessSpawner.swift")
        let next = try Fixture.build("fdchild.c")
        let without = try plain(exe, [next])
        XCTAssertEqual(without.stdoutText, "fdchild keeps 5 blocks\nchild returned 0\n", without.transcript)

        let rec = try HeapGenCLI.recording(exe, [next])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, without.stdout, rec.result.transcript)
        XCTAssertFalse(rec.result.stderrText.contains("warning"), rec.result.transcript)
        XCTAssertEqual(rec.allTraces.count, 2, "\(rec.allTraces)")
        let children = try summaries(rec).filter { $0.string("process.executable")?.hasSuffix("/fdchild") ?? false }
        XCTAssertEqual(children.count, 1, "\(rec.allTraces)")
        guard let child = children.first else { return }
        XCTAssertEqual(child.calls("malloc"), 9, "\(child)")
        XCTAssertEqual(child.frees("free"), 4)
        XCTAssertEqual(child.endReason, "exited")
        XCTAssertEqual(child.endStatus, 0)
    }

    /// Item 3: with --no-follow-exec the program, its forked child and the
    /// `env` they exec all see the environment they would have had without
    /// heapgen, byte for byte: the user's own LD_PRELOAD restored exactly, no
    /// HEAPGEN_* variable, and no shim in `env` (no third trace).
    func testNoFollowExecGivesEveryoneTheirOwnEnvironment() throws {
        let exe = try Fixture.build("printenv.c")
        for userPreload in [nil, "/lib/x86_64-linux-gnu/libm.so.6"] {
            var env = ProcessInfo.processInfo.environment
            env["LD_PRELOAD"] = userPreload
            for name in ["HEAPGEN_SOCK", "HEAPGEN_COLLECTOR", "HEAPGEN_FOLLOW", "HEAPGEN_PRELOAD"] { env[name] = nil }
            let without = try plain(exe, environment: env)
            XCTAssertStatus(without, 0)
            let text = without.stdoutText
            XCTAssertEqual(text.contains("LD_PRELOAD="), userPreload != nil, text)

            let dir = try TestPaths.freshDirectory("trace")
            let result = try runProcess(try TestPaths.heapgen(),
                                        ["record", "--output", dir + "/x.trace", "--no-follow-exec", "--", exe],
                                        environment: env, timeout: 120)
            XCTAssertStatus(result, 0)
            XCTAssertEqual(result.stdoutText, text, "LD_PRELOAD=\(userPreload ?? "(none)")\n\(result.transcript)")
            for name in ["HEAPGEN_SOCK=", "HEAPGEN_COLLECTOR=", "HEAPGEN_FOLLOW=", "HEAPGEN_PRELOAD="] {
                XCTAssertFalse(result.stdoutText.contains(name), result.transcript)
            }
            // The program and its forked child are traced; `env` is not.
            let traces = Recording(result: result, trace: dir + "/x.trace", directory: dir).allTraces
            XCTAssertEqual(traces.count, 2, "\(traces)")
        }
    }

    /// Item 3: with --no-follow-fork the forked child (and the `env` it execs)
    /// gets the environment it would have had without heapgen; the program
    /// itself is traced and still carries heapgen's settings (exec is followed).
    func testNoFollowForkGivesTheChildItsOwnEnvironment() throws {
        let exe = try Fixture.build("printenv.c")
        var env = ProcessInfo.processInfo.environment
        env["LD_PRELOAD"] = "/lib/x86_64-linux-gnu/libm.so.6"
        let without = try plain(exe, environment: env)
        XCTAssertStatus(without, 0)
        let dir = try TestPaths.freshDirectory("trace")
        let result = try runProcess(try TestPaths.heapgen(),
                                    ["record", "--output", dir + "/x.trace", "--no-follow-fork", "--", exe],
                                    environment: env, timeout: 120)
        XCTAssertStatus(result, 0)
        func descendants(_ text: String) -> [Substring] {
            text.split(separator: "\n").filter { !$0.hasPrefix("parent: ") }
        }
        XCTAssertEqual(descendants(result.stdoutText), descendants(without.stdoutText), result.transcript)
        XCTAssertGreaterThan(descendants(without.stdoutText).count, 4)
        XCTAssertTrue(result.stdoutText.contains("parent: HEAPGEN_SOCK="), "the traced program keeps them\n\(result.stdoutText)")
        let traces = Recording(result: result, trace: dir + "/x.trace", directory: dir).allTraces
        XCTAssertEqual(traces, [dir + "/x.trace"])
    }

    /// Item 5: a child made by a raw clone(SIGCHLD) system call (no fork
    /// handlers) allocates 1,000 blocks and frees 400: none of them reaches the
    /// parent's trace; the child has a trace of its own with all of them.
    func testRawCloneChildNeverWritesIntoItsParentsRing() throws {
        let exe = try Fixture.build("rawclone.c")
        let without = try plain(exe)
        let rec = try HeapGenCLI.recording(exe)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, without.stdout, rec.result.transcript)
        XCTAssertEqual(rec.result.stdoutText, "child status 0\n")
        let parent = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(parent.calls("malloc"), 10, "\(parent)")
        XCTAssertEqual(parent.bytes("malloc"), 100)
        XCTAssertEqual(parent.freeCount, 0)
        XCTAssertEqual(parent.liveObjects, 10)
        XCTAssertEqual(rec.allTraces.count, 2, "\(rec.allTraces)")
        guard let childPath = rec.allTraces.first(where: { $0 != rec.trace }) else { return }
        let child = try HeapGenCLI.summary(childPath)
        XCTAssertEqual(child.processOrigin, "fork")
        XCTAssertEqual(child.uint("process.ppid"), parent.processPid.map { UInt64($0) })
        XCTAssertEqual(child.calls("malloc"), 1000, "\(child)")
        XCTAssertEqual(child.bytes("malloc"), 33_000)
        XCTAssertEqual(child.frees("free"), 400)
        XCTAssertEqual(child.liveObjects, 600)
        XCTAssertEqual(child.unknownFrees, 0)
        XCTAssertEqual(child.endReason, "exited")
        XCTAssertEqual(child.endStatus, 0)
    }

    /// Item 6: 50 children end at once and are reaped at once (wait, waitpid,
    /// wait3, wait4, waitid in turn); every child's trace ends with the status
    /// its parent got: 48 exit codes, SIGTERM and SIGKILL.
    func testChildrenReapedAtOnceKeepTheirExitStatus() throws {
        let exe = try Fixture.build("reaper.c")
        let rec = try HeapGenCLI.recording(exe)
        XCTAssertStatus(rec.result, 0)
        var reaped: [Int32: (String, Int)] = [:]
        for line in rec.result.stdoutText.split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count == 3, let pid = Int32(f[0]), let n = Int(f[2]) else { return XCTFail("bad line \(line)") }
            reaped[pid] = (String(f[1]), n)
        }
        XCTAssertEqual(reaped.count, 50, rec.result.stdoutText)
        let codes = reaped.values.filter { $0.0 == "exit" }.map(\.1).sorted()
        XCTAssertEqual(codes, (0..<50).filter { $0 != 7 && $0 != 13 })
        XCTAssertEqual(reaped.values.filter { $0.0 == "signal" }.map(\.1).sorted(), [9, 15])

        XCTAssertEqual(rec.allTraces.count, 51, "\(rec.allTraces.count) traces")
        var checked = 0
        for path in rec.allTraces where path != rec.trace {
            let child = try HeapGenCLI.summary(path)
            guard let pid = child.processPid, let (how, n) = reaped[pid] else {
                XCTFail("a trace of a process the parent did not reap: \(path)")
                continue
            }
            XCTAssertEqual(child.endReason, how == "exit" ? "exited" : "signaled", "\(pid): \(how) \(n)")
            XCTAssertEqual(child.endStatus, n, "\(pid): \(how) \(n)")
            XCTAssertEqual(child.calls("malloc"), 1)
            checked += 1
        }
        XCTAssertEqual(checked, 50)
    }

    /// Item 16: under RLIMIT_AS the segment is sized to the limit: a program
    /// that allocates 416 MiB under a 512 MiB limit gets all of it, as without
    /// heapgen (the default segment alone would take 265 MiB).
    func testAddressSpaceLimitLeavesTheProgramItsRoom() throws {
        let exe = try Fixture.build("aslimit.c")
        let without = try plain(exe, ["512", "416"])
        XCTAssertStatus(without, 0)
        XCTAssertEqual(without.stdoutText, "allocated 416 of 416 MiB under a 512 MiB address-space limit\n")
        let rec = try HeapGenCLI.recording(exe, ["512", "416"])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, without.stdout, rec.result.transcript)
        let first = try HeapGenCLI.summary(rec.trace)
        guard let pid = first.processPid else { return XCTFail("no pid") }
        let worker = try HeapGenCLI.summary(rec.trace + ".\(pid).1")
        XCTAssertEqual(worker.bytes("malloc") / (1 << 20), 416, "\(worker)")
        XCTAssertEqual(worker.frees("free"), 417, "416 blocks and their table")
        XCTAssertEqual(worker.lostEvents, 0)
    }

    /// Item 2 with a dying collector: the program took heapgen's descriptor
    /// numbers for a socket of its own; heapgen is SIGKILLed (and left a
    /// zombie) while the ring is full. The shim must find out without its
    /// connection (asking the rendezvous path, never polling the program's
    /// socket), detach, and let the program finish; the program's peer never
    /// receives a byte.
    func testProgramWithoutHeapgensConnectionSurvivesCollectorKill() throws {
        let exe = try Fixture.build("closedslow.c")
        let dir = try TestPaths.freshDirectory("survive")
        let pidFile = dir + "/pid", doneFile = dir + "/done"
        let (heapgen, _) = try HeapGenCLI.start(exe, [pidFile, doneFile, "300"], flags: ["--ring-slots", "1024", "--quiet"])
        defer { _ = heapgen.wait(timeout: 1) }
        var childPid: Int32 = 0
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && childPid == 0 {
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8) {
                childPid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            }
            usleep(10_000)
        }
        guard childPid > 0 else {
            _ = kill(heapgen.pid, SIGKILL)
            return XCTFail("the fixture never wrote its pid\n\(heapgen.wait(timeout: 10).transcript)")
        }
        defer { if !FileManager.default.fileExists(atPath: doneFile) { kill(childPid, SIGKILL) } }
        usleep(300_000)
        XCTAssertFalse(FileManager.default.fileExists(atPath: doneFile), "still running when the collector dies")
        XCTAssertEqual(kill(heapgen.pid, SIGKILL), 0)   // not reaped: a zombie collector
        let finish = Date().addingTimeInterval(40)
        while Date() < finish && !FileManager.default.fileExists(atPath: doneFile) { usleep(20_000) }
        let done = try? String(contentsOfFile: doneFile, encoding: .utf8)
        XCTAssertEqual(done, "done 0\n", "the program finished, and nothing was written on its socket")
    }
}
