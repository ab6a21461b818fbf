// Programs that die: everything they allocated before is in the trace, and
// heapgen exits like a shell would.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class ProgramDeathTests: XCTestCase {
    /// heapgen leaves no process behind: the symbolizer it started to store a trace's
    /// symbols was left unreaped when heapgen ended by `exit` after a signal, a zombie that
    /// a container's init may never reap (probe of PostgreSQL). Checked as a subreaper would
    /// see it: heapgen's orphans come back to the harness, which lists what is left.
    func testNoChildOfHeapgensIsLeftBehind() throws {
        let exe = try Fixture.build("slow.c")
        let dir = try TestPaths.freshDirectory("orphans")
        let harness = """
            import ctypes, os, signal, subprocess, sys, time
            ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER
            p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while not os.path.exists(sys.argv[-3]): time.sleep(0.02)
            time.sleep(0.3)
            p.send_signal(signal.SIGTERM)
            print("heapgen", p.wait())
            time.sleep(0.5)
            left = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try: stat = open(f"/proc/{pid}/stat").read()
                except OSError: continue
                if int(stat[stat.rfind(")") + 2:].split()[1]) == os.getpid(): left.append(stat[:stat.rfind(")") + 1])
            print("left", left)
            """
        let r = try runProcess(try tool("python3", hint: "apt-get install -y python3"),
                               ["-c", harness, try TestPaths.heapgen(), "record", "-o", dir + "/trace", "--",
                                exe, dir + "/pid", dir + "/done", "3000"], timeout: 120)
        XCTAssertStatus(r, 0)
        XCTAssertEqual(r.stdoutText, "heapgen 143\nleft []\n", r.transcript)
    }

    func testSIGKILLKeepsEveryAllocation() throws {
        try check(mode: "kill", status: 137, signal: 9, name: "SIGKILL")
    }

    func testAbortKeepsEveryAllocation() throws {
        try check(mode: "abort", status: 134, signal: 6, name: "SIGABRT")
    }

    func testSegfaultKeepsEveryAllocation() throws {
        try check(mode: "segv", status: 139, signal: 11, name: "SIGSEGV")
    }

    /// dies.c: 100,000 mallocs of 16 bytes, kept live, then death.
    private func check(mode: String, status: Int32, signal: Int, name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let exe = try Fixture.build("dies.c")
        let rec = try HeapGenCLI.recording(exe, [mode])
        XCTAssertStatus(rec.result, status, "heapgen's status for a program killed by signal \(signal)", file: file, line: line)
        XCTAssertFalse(rec.result.signaled, "heapgen itself must exit, not die", file: file, line: line)
        let s = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(s.calls("malloc"), 100_000, "\(s)", file: file, line: line)
        XCTAssertEqual(s.bytes("malloc"), 1_600_000, file: file, line: line)
        XCTAssertEqual(s.allocationCount, 100_000, "nothing but the fixture's mallocs", file: file, line: line)
        XCTAssertEqual(s.freeCount, 0, file: file, line: line)
        XCTAssertEqual(s.liveObjects, 100_000, file: file, line: line)
        XCTAssertEqual(s.lostEvents, 0, file: file, line: line)
        XCTAssertEqual(s.uint("end.tornEvents"), 0, file: file, line: line)
        XCTAssertEqual(s.endReason, "signaled", "\(s)", file: file, line: line)
        XCTAssertEqual(s.endStatus, signal, file: file, line: line)
        // A shell says nothing about a status of 128+N, so heapgen names the signal, once.
        let said = rec.result.stderrLines.filter { $0.contains("was killed by") }
        XCTAssertEqual(said, ["heapgen: the program (pid \(s.processPid ?? 0)) was killed by signal \(signal) (\(name))"],
                       rec.result.transcript, file: file, line: line)
    }
}
