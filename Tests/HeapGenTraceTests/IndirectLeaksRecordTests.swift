// The `indirectLeaks` (0x1A) and `programSuppressions` (0x1B) records: round trip,
// ordering, splitting, and the event delta base left alone.

import Foundation
@testable import HeapGenTrace
import XCTest

final class IndirectLeaksRecordTests: XCTestCase {
    private func path() -> String {
        NSTemporaryDirectory() + "/heapgen-indirect-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).trace"
    }

    private func records(_ file: String) throws -> [TraceRecord] {
        var reader = try TraceReader(path: file, strict: true)
        var out: [TraceRecord] = []
        try reader.forEach { out.append($0) }
        return out
    }

    /// A trace with two allocations, the given leak records, then a free.
    private func write(_ body: (TraceWriter) -> Void) throws -> String {
        let file = path()
        let w = try TraceWriter(path: file, process: ProcessRecord(pid: 42, ppid: 1, origin: .root, executable: "/bin/x",
                                                                   arguments: ["x"], startUnixNanoseconds: 7))
        w.appendAllocation(.malloc, address: 0x5000, size: 64, stack: 0, type: 0)
        w.appendAllocation(.malloc, address: 0x4000, size: 32, stack: 0, type: 0)
        body(w)
        w.appendFree(.free, address: 0x4000)
        var end = EndRecord(reason: .exited, status: 0)
        end.eventCount = 3
        try w.finish(end)
        return file
    }

    func testRoundTripSortsByAddressAndKeepsOwners() throws {
        let file = try write { w in
            w.unreachable([0x5000, 0x4000, 0x10])
            w.indirectLeaks([IndirectLeak(address: 0x5000, owner: 0x10), IndirectLeak(address: 0x4000, owner: 0x5000 + 0x10)])
            w.indirectLeaks([])   // nothing written
            w.programSuppressions("leak:owner_function\nleak:libfoo.so\n")
        }
        defer { unlink(file) }
        let all = try records(file)
        XCTAssertEqual(all.count, 8, "\(all)")
        XCTAssertEqual(all[3], .unreachable([0x10, 0x4000, 0x5000]))
        XCTAssertEqual(all[4], .indirectLeaks([IndirectLeak(address: 0x4000, owner: 0x5010), IndirectLeak(address: 0x5000, owner: 0x10)]))
        XCTAssertEqual(all[5], .programSuppressions("leak:owner_function\nleak:libfoo.so\n"))
        XCTAssertEqual(all[6], .free(function: .free, address: 0x4000), "event deltas untouched")
    }

    func testLongListsAreSplit() throws {
        let many = (0..<UInt64(TraceFormat.maxUnreachable + 3)).map { IndirectLeak(address: 0x10_0000 + $0 * 16, owner: 0x8) }
        let file = try write { $0.indirectLeaks(many.reversed()) }
        defer { unlink(file) }
        let lists: [[IndirectLeak]] = try records(file).compactMap { if case .indirectLeaks(let l) = $0 { return l } else { return nil } }
        XCTAssertEqual(lists.map(\.count), [TraceFormat.maxUnreachable, 3])
        XCTAssertEqual(lists.flatMap { $0 }, many)
    }
}
