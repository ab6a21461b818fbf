// Programs that die: everything they allocated before is in the trace, and
// heapgen exits like a shell would.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class ProgramDeathTests: XCTestCase {
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
