// malloc and free are not cancellation points, and under heapgen they must stay so: the
// shim's waits for the collector sleep in nanosleep, which is one. A thread cancelled there
// lost the block it had just allocated (47 of 20 rounds with a 1,024-slot ring, 9 with the
// default one), and its event.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class ThreadCancellationTests: XCTestCase {
    /// cancelled.c, with a ring of 1,024 slots so that the four workers wait for the collector
    /// all the time: no thread is cancelled inside malloc or free, and the trace holds every
    /// allocation the program completed, each freed, nothing lost.
    func testNoThreadIsCancelledInsideTheAllocator() throws {
        let exe = try Fixture.build("cancelled.c")
        let native = try runProcess(exe, ["10"], timeout: 120)
        XCTAssertStatus(native, 0)
        XCTAssertTrue(native.stdoutText.hasSuffix("cancelled inside malloc/free: 0\n"), native.transcript)

        let rec = try HeapGenCLI.recording(exe, ["10"], flags: ["--quiet", "--ring-slots", "1024"])
        XCTAssertStatus(rec.result, 0)
        let lines = rec.result.stdoutText.split(separator: "\n")
        XCTAssertEqual(lines.last, "cancelled inside malloc/free: 0", rec.result.transcript)
        guard let first = lines.first, first.hasPrefix("allocations "), let completed = UInt64(first.dropFirst(12)) else {
            return XCTFail("unexpected output:\n\(rec.result.transcript)")
        }
        XCTAssertGreaterThan(completed, 0)

        let s = try HeapGenCLI.summary(rec.trace)
        XCTAssertGreaterThan(s.uint("end.producerWaits") ?? 0, 0, "the workers should have waited: \(s)")
        XCTAssertEqual(s.lostEvents, 0, "\(s)")
        XCTAssertEqual(s.unknownFrees, 0, "\(s)")
        XCTAssertEqual(s.doubleAllocations, 0, "\(s)")
        var allocated: UInt64 = 0, freed: UInt64 = 0
        var live: [UInt64: UInt64] = [:]
        for r in try HeapGenCLI.records(rec.trace) {
            switch r {
            case let .allocation(_, address, size, _, _):
                live[address] = size
                if (1000..<1200).contains(size) { allocated += 1 }
            case let .free(_, address):
                if let size = live.removeValue(forKey: address), (1000..<1200).contains(size) { freed += 1 }
            default: break
            }
        }
        XCTAssertEqual(allocated, completed, "the workers' allocations in the trace")
        XCTAssertEqual(freed, completed, "each freed (the cleanup handler frees the table)")
    }
}
