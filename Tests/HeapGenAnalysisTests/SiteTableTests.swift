// SiteTable against the plain 64-bit counters it replaces.

@testable import HeapGenAnalysis
import HeapGenTestSupport
import XCTest

final class SiteTableTests: XCTestCase {
    /// The counters of one site as the analyzer kept them before (wrapping Ints).
    private struct Reference {
        var liveObjects: UInt32 = 0
        var liveBytes = 0
        var peakBytes = 0
        var peakEpoch: UInt32 = 0
        var allocations: UInt64 = 0
        var allocatedBytes: UInt64 = 0
        var live: [UInt64] = []
    }

    private func check(_ table: SiteTable, _ reference: [Reference],
                       file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(table.count, reference.count, file: file, line: line)
        for s in reference.indices {
            let state = table[s], r = reference[s]
            XCTAssertEqual(state.type, UInt32(s % 3), "site \(s)", file: file, line: line)
            XCTAssertEqual(table.type(s), UInt32(s % 3), "site \(s)", file: file, line: line)
            XCTAssertEqual(state.liveObjects, r.liveObjects, "site \(s)", file: file, line: line)
            XCTAssertEqual(state.liveBytes, r.liveBytes, "site \(s)", file: file, line: line)
            XCTAssertEqual(state.peakBytes, r.peakBytes, "site \(s)", file: file, line: line)
            XCTAssertEqual(state.peakEpoch, r.peakEpoch, "site \(s)", file: file, line: line)
            XCTAssertEqual(state.allocations, r.allocations, "site \(s)", file: file, line: line)
            XCTAssertEqual(state.allocatedBytes, r.allocatedBytes, "site \(s)", file: file, line: line)
        }
    }

    /// Random allocations and frees, with sizes up to 2^40 (some sites outgrow 32 bits,
    /// by one block or by many,) and epochs that start at 0 and grow.
    func testMatchesSixtyFourBitCounters() {
        var rng = SeededRandom(seed: 5)
        var table = SiteTable()
        var reference: [Reference] = []
        var epoch: UInt32 = 0
        for step in 0..<200_000 {
            if step % 50_000 == 49_999 { epoch += 1 }
            if reference.isEmpty || rng.next() % 50 == 0 {
                table.append(type: UInt32(reference.count % 3))
                reference.append(Reference())
            }
            let s = Int(rng.next() % UInt64(reference.count))
            if !reference[s].live.isEmpty && rng.next() % 2 == 0 {
                let size = reference[s].live.removeLast()
                table.remove(s, size: size)
                reference[s].liveObjects &-= 1
                reference[s].liveBytes &-= Int(truncatingIfNeeded: size)
            } else {
                let r = rng.next()
                let size: UInt64 = r % 1000 == 0 ? r >> 24 : (r % 7 == 0 ? r >> 34 : r % 4096)
                table.allocated(s, size: size)
                table.add(s, size: size, epoch: epoch)
                reference[s].allocations &+= 1
                reference[s].allocatedBytes &+= size
                reference[s].liveObjects &+= 1
                reference[s].liveBytes &+= Int(truncatingIfNeeded: size)
                if reference[s].liveBytes > reference[s].peakBytes {
                    reference[s].peakBytes = reference[s].liveBytes
                    reference[s].peakEpoch = epoch
                }
                reference[s].live.append(size)
            }
        }
        XCTAssertGreaterThan(table.wideCount, 0, "some sites outgrew 32 bits")
        XCTAssertLessThan(table.wideCount, table.count, "most stayed compact")
        check(table, reference)
    }

    /// The edges: a block of exactly 2^32 - 1 bytes stays compact, one byte more widens;
    /// a site allocated 2^32 - 2 times is compact, once more wide; a peak in epoch 0 after
    /// one in a later epoch reads 0.
    func testEdges() {
        var table = SiteTable()
        table.append(type: 0)
        table.append(type: 1)
        table.allocated(0, size: UInt64(UInt32.max))
        table.add(0, size: UInt64(UInt32.max), epoch: 0)
        XCTAssertEqual(table.wideCount, 0)
        XCTAssertEqual(table[0].liveBytes, Int(UInt32.max))
        table.allocated(0, size: 1)
        table.add(0, size: 1, epoch: 3)
        XCTAssertEqual(table.wideCount, 1)
        XCTAssertEqual(table[0].liveBytes, 1 << 32)
        XCTAssertEqual(table[0].peakBytes, 1 << 32)
        XCTAssertEqual(table[0].peakEpoch, 3)
        XCTAssertEqual(table[0].allocatedBytes, 1 << 32)
        XCTAssertEqual(table[0].allocations, 2)
        XCTAssertEqual(table[0].liveObjects, 2)
        table.remove(0, size: UInt64(UInt32.max))
        XCTAssertEqual(table[0].liveBytes, 1)
        XCTAssertEqual(table[0].liveObjects, 1)
        XCTAssertEqual(table[0].peakBytes, 1 << 32)

        // Site 1: a peak in epoch 2, then a higher one in epoch 0 (epochs given out of order).
        table.add(1, size: 10, epoch: 2)
        table.add(1, size: 10, epoch: 0)
        XCTAssertEqual(table[1].peakEpoch, 0)
        XCTAssertEqual(table[1].peakBytes, 20)
        XCTAssertEqual(table.type(1), 1)
    }

    /// Allocated bytes that reach 2^32 - 1 stay compact; one byte more widens the site.
    func testAllocatedBytesWidenPastThirtyTwoBits() {
        var table = SiteTable()
        table.append(type: 0)
        table.allocated(0, size: UInt64(UInt32.max) - 1)
        table.allocated(0, size: 1)
        XCTAssertEqual(table.wideCount, 0)
        XCTAssertEqual(table[0].allocatedBytes, UInt64(UInt32.max))
        table.allocated(0, size: 1)
        XCTAssertEqual(table.wideCount, 1)
        XCTAssertEqual(table[0].allocatedBytes, 1 << 32)
        XCTAssertEqual(table[0].allocations, 3)
        XCTAssertEqual(table[0].liveBytes, 0)
        XCTAssertEqual(table[0].peakBytes, 0)
    }
}
