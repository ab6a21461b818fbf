// A program that writes over its own heapgen segment must never make heapgen hang
// (issue 7, item 7), and heapgen must stop waiting for a program that ignores the
// signal heapgen got.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class SegmentCorruptionTests: XCTestCase {
    /// scribble.c prints this line whatever happens to its segment.
    private func expectedOutput(_ mode: String) -> Data { Data("scribble \(mode): 1000 + 1000 blocks\n".utf8) }

    /// Runs scribble MODE under `heapgen record` three times, each under a time limit:
    /// heapgen ends with the program's status (0), prints one warning naming what the
    /// program broke, and the trace holds the fixture's first 1,000 allocations (24 bytes
    /// each), none of the 1,000 made after the damage, and ends with reason `corrupt`.
    private func checkCorrupt(_ mode: String, reason: String, limit: Double = 20, runs: Int = 3,
                              file: StaticString = #filePath, line: UInt = #line) throws {
        let exe = try Fixture.build("scribble.c")
        let native = try runProcess(exe, [mode], timeout: 60)
        XCTAssertStatus(native, 0, file: file, line: line)
        XCTAssertEqual(native.stdout, expectedOutput(mode), file: file, line: line)
        for run in 0..<runs {
            let rec = try HeapGenCLI.recording(exe, [mode], timeout: limit)
            XCTAssertFalse(rec.result.timedOut, "run \(run): heapgen hung\n\(rec.result.transcript)", file: file, line: line)
            XCTAssertStatus(rec.result, 0, "run \(run): the program's own status", file: file, line: line)
            XCTAssertEqual(rec.result.stdout, native.stdout, "run \(run): the program's output is its own", file: file, line: line)
            let warnings = rec.result.stderrLines.filter { $0.hasPrefix("heapgen: warning:") }
            XCTAssertEqual(warnings.count, 1, "run \(run): one message\n\(rec.result.transcript)", file: file, line: line)
            XCTAssertTrue(warnings.first?.contains("wrote over its recording segment (\(reason)") ?? false,
                          "run \(run): names \(reason)\n\(rec.result.transcript)", file: file, line: line)
            XCTAssertTrue(warnings.first?.contains("the program ran on untraced") ?? false, rec.result.transcript, file: file, line: line)
            XCTAssertEqual(rec.result.stderrLines.count, 2, "the summary line and the warning\n\(rec.result.transcript)", file: file, line: line)
            XCTAssertNoCrashText(rec.result.stderrText, file: file, line: line)
            XCTAssertFalse(rec.result.stderrText.contains("18,446,744"), rec.result.transcript, file: file, line: line)

            let records = try HeapGenCLI.records(rec.trace) // strict: a complete trace
            let sizes = records.compactMap { r -> UInt64? in
                if case let .allocation(.malloc, _, size, _, _) = r { return size } else { return nil }
            }
            XCTAssertEqual(sizes.filter { $0 == 24 }.count, 1000, "run \(run): the first 1,000 allocations", file: file, line: line)
            XCTAssertEqual(sizes.filter { $0 == 40 }.count, 0, "run \(run): nothing after the damage", file: file, line: line)
            guard case let .end(end)? = records.last else { return XCTFail("no end record", file: file, line: line) }
            XCTAssertEqual(end.reason, .corrupt, file: file, line: line)
            for (name, value) in [("waits", end.producerWaits), ("lost", end.lostEvents), ("arenaFull", end.arenaFull),
                                  ("freeNull", end.freeNullCalls), ("unwindFallbacks", end.unwindFallbacks)] {
                XCTAssertLessThan(value, 1_000_000_000_000, "run \(run): \(name) is a plausible number", file: file, line: line)
            }
            let info = try runProcess(try TestPaths.heapgen(), ["info", rec.trace], timeout: 60)
            XCTAssertStatus(info, 0, file: file, line: line)
            XCTAssertTrue(info.stdoutText.contains("the program corrupted its recording segment"), info.transcript, file: file, line: line)
        }
    }

    func testRandomBytesOverTheHeader() throws {
        // The header's tail word is random: the first thing the collector sees.
        try checkCorrupt("header", reason: "its ring's read position (tail) was overwritten")
    }

    func testHeadSetHuge() throws {
        try checkCorrupt("head", reason: "its ring's write position (head)")
    }

    func testTailSetHuge() throws {
        try checkCorrupt("tail", reason: "its ring's read position (tail) was overwritten")
    }

    func testLapTagsTrashed() throws {
        try checkCorrupt("seq", reason: "the slot at ring position")
    }

    /// A slot claimed and never published: the ring is given up after 10 s without movement.
    func testClaimedSlotNeverPublished() throws {
        try checkCorrupt("stuck", reason: "the event at ring position", limit: 40, runs: 1)
    }

    /// Counters set to UINT64_MAX (the ring stays sane): the recording goes on, the impossible
    /// values are neither written nor printed.
    func testImpossibleCountersAreDropped() throws {
        let exe = try Fixture.build("scribble.c")
        let rec = try HeapGenCLI.recording(exe, ["counters"], timeout: 20)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, expectedOutput("counters"))
        XCTAssertEqual(rec.result.stderrLines, [
            rec.result.stderrLines.first ?? "",
            "heapgen: warning: \(rec.trace): counters the program overwrote with impossible values were dropped",
        ], rec.result.transcript)
        XCTAssertFalse(rec.result.stderrText.contains("waited"), rec.result.transcript)
        let s = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(s.endReason, "exited")
        XCTAssertEqual(s.producerWaits, 0)
        XCTAssertEqual(s.uint("end.lostEvents"), 0)
        XCTAssertEqual(s.uint("end.arenaFull"), 0)
        XCTAssertEqual(s.uint("end.unwindFallbacks"), 0)
        XCTAssertEqual(s.freeNullCalls, 0)
        let records = try HeapGenCLI.records(rec.trace)
        let sizes = records.compactMap { r -> UInt64? in
            if case let .allocation(.malloc, _, size, _, _) = r { return size } else { return nil }
        }
        XCTAssertEqual(sizes.filter { $0 == 24 }.count, 1000)
        XCTAssertEqual(sizes.filter { $0 == 40 }.count, 1000, "still recording after the counters were overwritten")
    }

    // MARK: - Signals

    /// slow.c running for ~30 s; heapgen gets SIGINT (the program does not): heapgen stops
    /// recording 10 s later and exits 130, and the trace is complete up to there.
    func testProgramThatDoesNotExitAfterSIGINT() throws {
        try checkSignalStop(signal: SIGINT, secondAfter: nil, expectedSeconds: 10)
    }

    /// A second SIGINT a second and a half after the first stops at once (130).
    func testSecondSignalStopsAtOnce() throws {
        try checkSignalStop(signal: SIGINT, secondAfter: 1.5, expectedSeconds: 1.5)
    }

    /// Waits for `path` to hold a pid; 0 after 30 s.
    private func pid(in path: String) -> Int32 {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: path, encoding: .utf8),
               let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) { return pid }
            usleep(10_000)
        }
        return 0
    }

    /// SIGHUP to heapgen is passed on and asks nothing of heapgen: a server reloads and runs
    /// on, recorded. It started the stop timer, so the SIGTERM two seconds later (a second
    /// signal) stopped recording at once, the server's exit status lost (probe of nginx).
    func testSIGHUPIsPassedOnAndRecordingGoesOn() throws {
        let exe = try Fixture.build("reload.c")
        let dir = try TestPaths.freshDirectory("sighup")
        let (heapgen, trace) = try HeapGenCLI.start(exe, [dir + "/pid", dir + "/reloaded"])
        let server = pid(in: dir + "/pid")
        defer { if server > 0 { kill(server, SIGKILL) } }
        guard server > 0 else { heapgen.killIfRunning(); return XCTFail("the fixture never wrote its pid") }
        XCTAssertEqual(kill(heapgen.pid, SIGHUP), 0)
        usleep(1_500_000)
        XCTAssertEqual(kill(heapgen.pid, SIGTERM), 0)
        let r = heapgen.wait(timeout: 40)
        XCTAssertFalse(r.timedOut, r.transcript)
        XCTAssertStatus(r, 0, "the server's own status")
        XCTAssertFalse(r.stderrText.contains("stopped recording"), r.transcript)
        XCTAssertEqual(try String(contentsOfFile: dir + "/reloaded", encoding: .utf8), "reloaded 1\n")
        let s = try HeapGenCLI.summary(trace)
        XCTAssertEqual(s.endReason, "exited")
        XCTAssertEqual(s.endStatus, 0)
    }

    /// SIGINT sent to heapgen's pid by a process (a service manager's stop, a script's
    /// `kill -INT $!`) is for the program: it was never passed on (only the terminal's reaches
    /// the program, in heapgen's process group), so PostgreSQL never began its fast shutdown.
    /// A non-interactive shell starts background jobs with SIGINT ignored: passed on all the same.
    func testSIGINTFromAProcessIsPassedOn() throws {
        let exe = try Fixture.build("reload.c")
        let dir = try TestPaths.freshDirectory("sigint")
        // Started by the test: SIGINT at its default in heapgen.
        let (heapgen, _) = try HeapGenCLI.start(exe, [dir + "/pid", dir + "/reloaded"])
        let server = pid(in: dir + "/pid")
        defer { if server > 0 { kill(server, SIGKILL) } }
        guard server > 0 else { heapgen.killIfRunning(); return XCTFail("the fixture never wrote its pid") }
        XCTAssertEqual(kill(heapgen.pid, SIGINT), 0)
        let r = heapgen.wait(timeout: 40)
        XCTAssertFalse(r.timedOut, r.transcript)
        XCTAssertStatus(r, 7, "the program's fast shutdown")
        XCTAssertFalse(r.stderrText.contains("stopped recording"), r.transcript)

        // A background job of a script: heapgen starts with SIGINT ignored.
        let script = """
            "$0" record --quiet -o "$1/trace" -- "$2" "$1/pid2" "$1/reloaded2" & job=$!
            while [ ! -s "$1/pid2" ]; do sleep 0.05; done
            kill -INT $job; wait $job; echo "status $?"
            """
        let shell = try runProcess("/bin/sh", ["-c", script, try TestPaths.heapgen(), dir, exe], timeout: 60)
        XCTAssertEqual(shell.stdoutText, "status 7\n", shell.transcript)
    }

    /// A daemon's launcher has exited; heapgen records the daemon and gets SIGTERM. It passed
    /// the signal to the launcher's reaped pid (which could be anyone's by then) and exited 0
    /// without a word. Now it passes nothing on, stops, and says who runs on untraced (143).
    func testASignalAfterTheLauncherExitedStopsAndNamesTheDaemon() throws {
        let exe = try Fixture.build("reload.c")
        let dir = try TestPaths.freshDirectory("daemonstop")
        let (heapgen, trace) = try HeapGenCLI.start(exe, [dir + "/pid", dir + "/reloaded", "daemon"])
        let daemon = pid(in: dir + "/pid")
        defer { if daemon > 0 { kill(daemon, SIGKILL) } }
        guard daemon > 0 else { heapgen.killIfRunning(); return XCTFail("the fixture never wrote its pid") }
        usleep(500_000)
        XCTAssertEqual(kill(heapgen.pid, SIGTERM), 0)
        let r = heapgen.wait(timeout: 40)
        XCTAssertFalse(r.timedOut, r.transcript)
        XCTAssertStatus(r, 128 + SIGTERM, "128 + the signal, like a shell")
        let launcher = try XCTUnwrap(try HeapGenCLI.summary(trace).processPid)
        XCTAssertEqual(r.stderrLines.last, "heapgen: stopped recording after signal 15: the program (pid \(launcher)) had exited, "
            + "a process it started (pid \(daemon)) had not; it runs on untraced", r.transcript)
        XCTAssertEqual(kill(daemon, 0), 0, "the daemon runs on: the signal was heapgen's")
    }

    /// The program exits and leaves a traced process running (a detached child, a daemon it
    /// started): recording goes on until that one ends, which looked like a hang (probe of
    /// Node's detached spawn: 16 s without a word). After 2 s heapgen says whom it waits for.
    func testWaitingForAProcessTheProgramLeftRunningIsSaid() throws {
        let dir = try TestPaths.freshDirectory("leftrunning")
        let trace = dir + "/t.trace"
        let r = try HeapGenCLI.run(["record", "-q", "-o", trace, "--", "/bin/sh", "-c", "sleep 3 & echo $!"])
        XCTAssertStatus(r, 0)
        let sleeper = r.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let sh = try XCTUnwrap(try HeapGenCLI.summary(trace).processPid)
        XCTAssertEqual(r.stderrLines, ["heapgen: the program (pid \(sh)) exited; recording goes on until the process it left "
            + "running (pid \(sleeper)) ends (SIGINT or SIGTERM to heapgen stops it now)"], r.transcript)
        // A program that leaves nothing behind gets no such line.
        XCTAssertEqual(try HeapGenCLI.run(["record", "-q", "-o", trace, "--", "/bin/sh", "-c", "sleep 0.1"]).stderrLines, [])
    }

    private func checkSignalStop(signal: Int32, secondAfter: Double?, expectedSeconds: Double,
                                 file: StaticString = #filePath, line: UInt = #line) throws {
        let exe = try Fixture.build("slow.c")
        let dir = try TestPaths.freshDirectory("sigstop")
        let pidFile = dir + "/pid", doneFile = dir + "/done"
        // heapgen passes the signal on (a process sent it); slow.c, exec'd by a shell that
        // ignores it, runs on.
        let (heapgen, trace) = try HeapGenCLI.start("/bin/sh", ["-c", "trap '' INT QUIT; exec \"$0\" \"$@\"", exe,
                                                                pidFile, doneFile, "3000"])
        var childPid: Int32 = 0
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline && childPid == 0 {
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
               let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) { childPid = pid }
            usleep(10_000)
        }
        defer { if childPid > 0 { kill(childPid, SIGKILL) } }
        guard childPid > 0 else {
            heapgen.killIfRunning()
            return XCTFail("the fixture never wrote its pid", file: file, line: line)
        }
        usleep(500_000)
        let sent = Date()
        XCTAssertEqual(kill(heapgen.pid, signal), 0, file: file, line: line)
        if let secondAfter {
            usleep(UInt32(secondAfter * 1_000_000))
            XCTAssertEqual(kill(heapgen.pid, signal), 0, file: file, line: line)
        }
        let r = heapgen.wait(timeout: 40)
        let took = Date().timeIntervalSince(sent)
        XCTAssertFalse(r.timedOut, r.transcript, file: file, line: line)
        XCTAssertStatus(r, 128 + signal, "128 + the signal, like a shell", file: file, line: line)
        XCTAssertGreaterThanOrEqual(took, expectedSeconds - 0.2, r.transcript, file: file, line: line)
        XCTAssertLessThan(took, expectedSeconds + 5, r.transcript, file: file, line: line)
        XCTAssertEqual(r.stderrLines.last,
                       "heapgen: stopped recording after signal \(signal): the program (pid \(childPid)) had not exited; it runs on untraced",
                       r.transcript, file: file, line: line)
        XCTAssertEqual(kill(childPid, 0), 0, "the program still runs", file: file, line: line)
        XCTAssertFalse(FileManager.default.fileExists(atPath: doneFile), file: file, line: line)
        // The program's trace (the shell exec'd it) is complete (strict read) and ends "collector stopped".
        let records = try HeapGenCLI.records(trace + ".\(childPid).1")
        guard case let .end(end)? = records.last else { return XCTFail("no end record", file: file, line: line) }
        XCTAssertEqual(end.reason, .collectorStopped, file: file, line: line)
        let allocations = records.filter { if case .allocation = $0 { true } else { false } }.count
        XCTAssertGreaterThanOrEqual(allocations, 2000, "at least the first round", file: file, line: line)
    }
}
