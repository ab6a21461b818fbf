// The ring's record forms (heapgen_protocol.h, "hg_slot"): the shim's producer and the
// collector's consumer, compiled from their own sources into one program.

import Foundation
import HeapGenTestSupport
import XCTest

final class RingRecordTests: XCTestCase {
    /// ring_records.c publishes with heapgen_ring.h and drains with the collector's ring.c on
    /// an 8-slot ring: one-slot and two-slot records come back field for field over 39 laps
    /// (two-slot records split by the ring's end too); a claimed, unpublished slot stops the
    /// drain and reads as pending; torn records at a process's end are skipped and counted by
    /// the slot, a torn two-slot record's second slot never read as a record; an impossible
    /// lap tag reads as corrupt (hg_ring_check 4).
    func testRecordsOfOneAndTwoSlotsAcrossLaps() throws {
        let exe = try Fixture.buildWithCollector("ring_records.c", ["ring.c"])
        let r = try runProcess(exe, [], timeout: 60)
        XCTAssertStatus(r, 0)
        XCTAssertEqual(r.stdoutText, """
            slots malloc 1, free 1, swift object 2, 4 GiB block 2, mark 2, high addr 2
            laps 39, records 201, two-slot 111, drained 201, mismatched 0
            claimed, unpublished: drained 0, check 1
            published: drained 2, in order 1, check 0
            final: drained 2, torn 3, records 1, at the head 1
            scribbled: drained 0, check 4
            failures 0

            """)
    }
}
