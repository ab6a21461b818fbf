// What heapgen's readers accept and its writers touch (issue 7): a trace that is not a
// regular file is refused without blocking (item 9); a trace whose collector was killed is
// salvaged (item 16); outputs never change the mode of a device or FIFO (item 8).

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class TraceFileHandlingTests: XCTestCase {
    /// Every command that reads a trace, with the arguments it needs besides the trace.
    private func readers(_ trace: String) -> [[String]] {
        [["info", trace], ["info", trace, "--format", "json"], ["report", trace], ["dump", trace], ["check", trace],
         ["export", trace, "--format", "collapsed"], ["diff", trace, "--from", "start", "--to", "end"], ["diff", trace, trace]]
    }

    // MARK: - Item 9: non-regular traces

    func testFIFODirectoryAndDeviceAreRefusedAt66() throws {
        let dir = try TestPaths.freshDirectory("nonregular")
        let fifo = dir + "/fifo.trace"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let sub = dir + "/a-directory"
        try FileManager.default.createDirectory(atPath: sub, withIntermediateDirectories: false)
        for (path, kind) in [(fifo, "a FIFO"), (sub, "a directory"), ("/dev/zero", "a character device")] {
            for args in readers(path) {
                let r = try HeapGenCLI.run(args, timeout: 20)
                XCTAssertFalse(r.timedOut, "heapgen \(args.joined(separator: " ")) blocked\n\(r.transcript)")
                XCTAssertStatus(r, 66, "heapgen \(args.joined(separator: " "))")
                XCTAssertEqual(r.stderrLines, ["heapgen: \(path): I/O error: \(kind), not a trace file (traces are regular files)"],
                               r.transcript)
                XCTAssertTrue(r.stdout.isEmpty, r.transcript)
            }
        }
    }

    // MARK: - Item 16: salvage

    /// Chunk boundaries (offsets where a chunk header starts, and the end) of a trace file.
    private func chunkBoundaries(_ bytes: [UInt8]) -> [Int] {
        var offsets: [Int] = []
        var o = 16
        while o + 8 <= bytes.count {
            offsets.append(o)
            // Bit 31 of the length word marks a compressed chunk (trace minor version 5).
            let n = Int(bytes[o]) | Int(bytes[o + 1]) << 8 | Int(bytes[o + 2]) << 16 | Int(bytes[o + 3] & 0x7F) << 24
            o += 8 + n
        }
        offsets.append(o)
        return offsets
    }

    /// dies.c's 100,000 mallocs of 16 bytes (kept live), cut at several offsets: every
    /// reader succeeds on the whole chunks before the cut and says once what it ignored.
    func testTruncatedTracesAreSalvaged() throws {
        let exe = try Fixture.build("dies.c")
        // Without stored symbols, the trace's last chunk is its end record (alone in its chunk).
        let rec = try HeapGenCLI.recording(exe, ["kill"], flags: ["--no-symbols"])
        XCTAssertStatus(rec.result, 137)
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: rec.trace)))
        let boundaries = chunkBoundaries(bytes)
        XCTAssertEqual(boundaries.last, bytes.count)
        XCTAssertGreaterThan(boundaries.count, 6, "several chunks")
        let dir = try TestPaths.freshDirectory("salvage")
        let mid = boundaries[boundaries.count / 2]
        // (cut, bytes ignored): at a chunk boundary, inside a chunk header, inside a payload
        // (halfway: compressed chunks of these regular events are small),
        // one byte short of the last chunk of events (the end record has a chunk of its own).
        let lastEvents = boundaries[boundaries.count - 2]
        let inside = 8 + (boundaries[boundaries.count / 2 + 1] - mid - 8) / 2
        let cuts = [(mid, 0), (mid + 3, 3), (mid + inside, inside), (lastEvents - 1, lastEvents - 1 - boundaries[boundaries.count - 3])]
        var previous: UInt64 = 0
        for (cut, ignored) in cuts {
            let path = dir + "/cut-\(cut).trace"
            try Data(bytes.prefix(cut)).write(to: URL(fileURLWithPath: path))
            let notice = ignored == 0 ? "no end record: the collector was killed or is still recording"
                : "truncated: \(ignored.formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US")))) bytes at the end ignored; no end record: the collector was killed or is still recording"
            let warning = "heapgen: warning: \(path): \(notice) (read the records before the cut)"
            let info = try HeapGenCLI.run(["info", path, "--format", "json"], timeout: 60)
            XCTAssertStatus(info, 0, "cut at \(cut)")
            XCTAssertEqual(info.stderrLines, [warning], info.transcript)
            let s = try Summary(json: info.stdout)
            XCTAssertEqual(s.endReason, "unknown")
            XCTAssertEqual(s.uint("end.salvage.ignoredBytes"), UInt64(ignored))
            XCTAssertEqual(s.uint("end.salvage.readBytes"), UInt64(cut - ignored))
            // Only 16-byte mallocs, all live; fewer than all, more than at the previous cut.
            let n = s.calls("malloc")
            XCTAssertEqual(s.bytes("malloc"), 16 * n)
            XCTAssertEqual(s.liveObjects, n)
            XCTAssertLessThan(n, 100_000, "cut at \(cut)")
            if cut <= mid + inside {
                // The first three cuts keep the same whole chunks: those before `mid`.
                if previous > 0 { XCTAssertEqual(n, previous, "cut at \(cut): the same chunks as the cut at \(mid)") }
                XCTAssertGreaterThan(n, 0)
            } else {
                XCTAssertGreaterThan(n, previous, "cut at \(cut): more whole chunks than at \(mid)")
            }
            previous = n
            // The other readers work on the same records, and say so once.
            for args in readers(path) where args[0] != "info" {
                let r = try HeapGenCLI.run(args, timeout: 120)
                XCTAssertStatus(r, 0, "heapgen \(args.joined(separator: " "))")
                XCTAssertEqual(r.stderrLines.filter { $0.hasPrefix("heapgen: warning: \(path)") }, [warning], r.transcript)
                XCTAssertNoCrashText(r.stderrText)
                if args[0] == "check" {
                    XCTAssertTrue(r.stderrText.contains("heapgen: note: the gate judged an incomplete trace"), r.transcript)
                }
                if args[0] == "report" {
                    XCTAssertTrue(r.stdoutText.contains("is incomplete (\(notice))"), r.transcript)
                }
                if args[0] == "dump" {
                    XCTAssertEqual(r.stdoutText.split(separator: "\n").filter { $0.hasPrefix("alloc ") }.count, Int(n))
                }
            }
        }
    }

    /// The collector SIGKILLed mid-run (slow.c allocates and frees 2,000 blocks a round):
    /// info and report read what it wrote.
    func testKilledCollectorTraceIsReadable() throws {
        let exe = try Fixture.build("slow.c")
        let dir = try TestPaths.freshDirectory("killed")
        let pidFile = dir + "/pid", doneFile = dir + "/done"
        let (heapgen, trace) = try HeapGenCLI.start(exe, [pidFile, doneFile, "300"])
        var childPid: Int32 = 0
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && childPid == 0 {
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
               let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) { childPid = pid }
            usleep(10_000)
        }
        guard childPid > 0 else {
            heapgen.killIfRunning()
            return XCTFail("the fixture never wrote its pid")
        }
        defer { kill(childPid, SIGKILL) }
        usleep(1_000_000)
        XCTAssertEqual(kill(heapgen.pid, SIGKILL), 0)
        _ = heapgen.wait(timeout: 30)
        let finish = Date().addingTimeInterval(60)
        while Date() < finish && !FileManager.default.fileExists(atPath: doneFile) { usleep(20_000) }

        let info = try HeapGenCLI.run(["info", trace, "--format", "json"], timeout: 60)
        XCTAssertStatus(info, 0)
        XCTAssertEqual(info.stderrLines.count, 1, info.transcript)
        XCTAssertTrue(info.stderrText.contains("no end record: the collector was killed or is still recording"), info.transcript)
        let s = try Summary(json: info.stdout)
        XCTAssertEqual(s.endReason, "unknown")
        XCTAssertGreaterThanOrEqual(s.allocationCount, 20_000, "about a second of 2,000-block rounds")
        XCTAssertLessThanOrEqual(s.liveObjects, 2_100, "each round frees what it allocated")
        let report = try HeapGenCLI.run(["report", trace], timeout: 120)
        XCTAssertStatus(report, 0)
        XCTAssertTrue(report.stdoutText.contains("is incomplete"), report.transcript)
    }

    // MARK: - Item 8: outputs never chmod a device or FIFO

    private func mode(_ path: String) -> mode_t {
        var st = stat()
        XCTAssertEqual(stat(path, &st), 0, path)
        return st.st_mode & 0o7777
    }

    /// Every writer: report, diff, export, and the gate's JUnit, SARIF, Markdown and baseline files.
    private func writers(trace: String, output: String) -> [[String]] {
        [["report", trace, "--output", output], ["report", trace, "--format", "json", "--output", output],
         ["diff", trace, "--from", "start", "--to", "end", "--output", output],
         ["export", trace, "--format", "collapsed", "--output", output],
         ["export", trace, "--format", "pprof", "--output", output],
         ["check", trace, "--max-live-at-exit", "1GB", "--junit", output, "--sarif", output, "--summary", output, "--write-baseline", output]]
    }

    /// `record -o DIR` with an existing directory writes the default name in it, and the
    /// children's traces beside it: it failed with "it is a directory" (two probes tried it).
    /// A symbolic link to a directory is still refused: traces are never written through links.
    func testOutputIntoADirectoryTakesTheDefaultName() throws {
        let dir = try TestPaths.freshDirectory("outdir")
        let r = try HeapGenCLI.run(["record", "-q", "-o", dir, "--", "/bin/sh", "-c", "/bin/true; exit 3"])
        XCTAssertStatus(r, 3)
        let names = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        let root = try XCTUnwrap(names.first { $0.hasPrefix("heapgen-sh-") && $0.hasSuffix(".trace") }, "\(names)")
        XCTAssertTrue(names.contains { $0.hasPrefix(root + ".") }, "the child's trace beside it: \(names)")
        let s = try HeapGenCLI.summary(dir + "/" + root)
        XCTAssertEqual(s.endStatus, 3)
        XCTAssertEqual(root, "heapgen-sh-\(try XCTUnwrap(s.processPid)).trace")

        let link = dir + "/link"
        XCTAssertEqual(symlink(dir, link), 0)
        let refused = try HeapGenCLI.run(["record", "-q", "-o", link, "--", "/bin/true"])
        XCTAssertStatus(refused, 125)
    }

    func testOutputsLeaveDevicesAndFIFOsAlone() throws {
        let exe = try Fixture.build("functions.c")
        let rec = try HeapGenCLI.recording(exe)
        XCTAssertStatus(rec.result, 0)
        let dir = try TestPaths.freshDirectory("outputs")

        // A device node of our own (like /dev/null: 1,3) when root may make one; /dev/null itself otherwise.
        var device = dir + "/null-device"
        if getuid() == 0 {
            XCTAssertEqual(mknod(device, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) /* makedev(1, 3) */, 0, String(cString: strerror(errno)))
            XCTAssertEqual(chmod(device, 0o666), 0)
        } else {
            device = "/dev/null"
        }
        let devNullMode = mode("/dev/null")
        for args in writers(trace: rec.trace, output: device) {
            let r = try HeapGenCLI.run(args, timeout: 120)
            XCTAssertStatus(r, 0, "heapgen \(args.joined(separator: " "))")
            XCTAssertEqual(mode(device), 0o666, "heapgen \(args.joined(separator: " ")) changed the device's mode")
        }
        XCTAssertEqual(mode("/dev/null"), devNullMode)

        // A FIFO with a reader.
        let fifo = dir + "/out.fifo"
        XCTAssertEqual(mkfifo(fifo, 0o644), 0)
        XCTAssertEqual(chmod(fifo, 0o644), 0)
        for args in writers(trace: rec.trace, output: fifo) where args[0] != "check" {
            let reader = try RunningProcess("/bin/cat", [fifo])
            let r = try HeapGenCLI.run(args, timeout: 60)
            let read = reader.wait(timeout: 30)
            XCTAssertStatus(r, 0, "heapgen \(args.joined(separator: " "))")
            XCTAssertFalse(read.stdout.isEmpty, "the reader got the output")
            XCTAssertEqual(mode(fifo), 0o644, "heapgen \(args.joined(separator: " ")) changed the FIFO's mode")
        }

        // A file heapgen creates is 0600; an existing regular file it truncates becomes 0600.
        let fresh = dir + "/fresh.txt"
        XCTAssertStatus(try HeapGenCLI.run(["report", rec.trace, "--output", fresh]), 0)
        XCTAssertEqual(mode(fresh), 0o600)
        let existing = dir + "/existing.txt"
        XCTAssertTrue(FileManager.default.createFile(atPath: existing, contents: Data("old".utf8)))
        XCTAssertEqual(chmod(existing, 0o644), 0)
        XCTAssertStatus(try HeapGenCLI.run(["report", rec.trace, "--output", existing]), 0)
        XCTAssertEqual(mode(existing), 0o600)
        // A Markdown summary appended to an existing file (GITHUB_STEP_SUMMARY) keeps its mode.
        let summary = dir + "/step-summary.md"
        XCTAssertTrue(FileManager.default.createFile(atPath: summary, contents: Data("# before\n".utf8)))
        XCTAssertEqual(chmod(summary, 0o644), 0)
        XCTAssertStatus(try HeapGenCLI.run(["check", rec.trace, "--max-live-at-exit", "1GB", "--summary", summary]), 0)
        XCTAssertEqual(mode(summary), 0o644)
        XCTAssertTrue(try String(contentsOfFile: summary, encoding: .utf8).hasPrefix("# before\n"))
    }
}
