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
        try check(nested: false)
    }

    /// The same run inside a process that is pid 1 of a namespace itself: the nested
    /// namespace's init has its parent's pid number, and must still get a trace of its own
    /// (it wrote into its parent's segment, which the pid compare took for its own).
    func testAChildWithItsParentsPidNumberIsANewProcess() throws {
        try check(nested: true)
    }

    private func check(nested: Bool) throws {
        let exe = try Fixture.build("pidns.c")
        let arguments = nested ? ["nested"] : []
        let native = try runProcess(exe, arguments, timeout: 60)
        XCTAssertStatus(native, 0, "the fixture needs unshare(CLONE_NEWPID), as root or in a user namespace")
        let rec = try HeapGenCLI.recording(exe, arguments, flags: ["--leaks"])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, native.stdout, "the program's output is its own")
        XCTAssertEqual(rec.result.stderrLines.filter { !$0.hasPrefix("heapgen: wrote ") }, [],
                       "no warning (the hello of pid 1 was refused as 'malformed'): \(rec.result.transcript)")

        let traces = rec.allTraces
        XCTAssertEqual(traces.count, nested ? 4 : 3,
                       "the program, (the outer namespace's init,) its namespace's init and the init's child: \(traces)")
        var program = try HeapGenCLI.summary(rec.trace)
        var others = try traces.filter { $0 != rec.trace }.map { try HeapGenCLI.summary($0) }
        if nested {
            // The outer init runs the whole fixture; the program only waits for it.
            XCTAssertEqual(program.calls("malloc"), 0, "\(program)")
            guard let outerPid = program.processPid,
                  let outer = others.firstIndex(where: { $0.uint("process.ppid") == UInt64(outerPid) }) else {
                return XCTFail("no trace of the outer namespace's init: \(others.map(\.description))")
            }
            program = others.remove(at: outer)
        }
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
