// Programs that start a PID namespace of their own (unshare, bwrap, container
// runtimes): the processes in it know themselves by other numbers than the
// collector does, and cannot see the collector's pid.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class PIDNamespaceTests: XCTestCase {
    /// pidns.c: the program, its namespace's init (pid 1 there, 100 × 48 B, exits 3) and
    /// that init's child (pid 2 there, 200 × 24 B of its own, exits 7). Every process has a
    /// trace under the collector's pids, with its parent, its blocks and its exit status; a
    /// leak scan reads the processes in the namespace too.
    func testProcessesInANewPIDNamespaceAreTracedUnderTheCollectorsPids() throws {
        let exe = try Fixture.build("pidns.c")
        let native = try runProcess(exe, [], timeout: 60)
        XCTAssertStatus(native, 0, "the fixture needs unshare(CLONE_NEWPID), as root or in a user namespace")
        let rec = try HeapGenCLI.recording(exe, flags: ["--leaks"])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, native.stdout, "the program's output is its own")
        XCTAssertEqual(rec.result.stderrLines.filter { !$0.hasPrefix("heapgen: wrote ") }, [],
                       "no warning (the hello of pid 1 was refused as 'malformed'): \(rec.result.transcript)")

        let traces = rec.allTraces
        XCTAssertEqual(traces.count, 3, "the program, its namespace's init and the init's child: \(traces)")
        let program = try HeapGenCLI.summary(rec.trace)
        let others = try traces.filter { $0 != rec.trace }.map { try HeapGenCLI.summary($0) }
        guard let programPid = program.processPid,
              let initTrace = others.first(where: { $0.uint("process.ppid") == UInt64(programPid) }),
              let initPid = initTrace.processPid,
              let child = others.first(where: { $0.uint("process.ppid") == UInt64(initPid) }),
              let childPid = child.processPid else {
            return XCTFail("traces not linked by the collector's pids: \(others.map(\.description))")
        }
        XCTAssertNotEqual(initPid, 1, "the collector's pid, not the namespace's")
        XCTAssertNotEqual(childPid, 2)

        XCTAssertEqual(program.calls("malloc"), 11, "10 × 16 B and stdout's buffer: \(program)")
        XCTAssertEqual(program.endReason, "exited")
        XCTAssertEqual(program.endStatus, 0)

        XCTAssertEqual(initTrace.processOrigin, "fork")
        XCTAssertEqual(initTrace.calls("malloc"), 100, "\(initTrace)")
        XCTAssertEqual(initTrace.bytes("malloc"), 100 * 48)
        XCTAssertEqual(initTrace.endReason, "exited")
        XCTAssertEqual(initTrace.endStatus, 3)

        // The init reaps its child and reports it as pid 2: the collector maps that back.
        XCTAssertEqual(child.processOrigin, "fork")
        XCTAssertEqual(child.calls("inherited"), 100, "\(child)")
        XCTAssertEqual(child.calls("malloc"), 200)
        XCTAssertEqual(child.bytes("malloc"), 200 * 24)
        XCTAssertEqual(child.endReason, "exited", "\(child)")
        XCTAssertEqual(child.endStatus, 7)
        XCTAssertEqual(child.lostEvents, 0)
    }
}
