// Unit tests of the shared live-heap model (LiveHeap: table and realloc rule) and of IdSet.

import HeapGenTestSupport
import XCTest
@testable import HeapGenTrace

final class LiveHeapTests: XCTestCase {
    /// A consumer's block record, as small as the analyzer's.
    struct TestBlock: Equatable {
        var size: UInt64
        var tag: UInt32
    }

    typealias Heap = LiveHeap<TestBlock>

    func block(_ size: UInt64, _ tag: UInt32 = 0) -> TestBlock {
        TestBlock(size: size, tag: tag)
    }

    // MARK: Table

    func testInsertRemoveAgainstAModel() {
        let heap = Heap(capacity: 16)
        var model: [UInt64: TestBlock] = [:]
        var rng = SeededRandom(seed: 11)
        for _ in 0..<200_000 {
            // Few distinct keys with the same low bits (0 among them): long probe clusters, wrap-around.
            let key = (rng.next() % 512) << 12
            if rng.next() % 3 == 0 {
                XCTAssertEqual(heap.remove(key), model.removeValue(forKey: key))
            } else {
                let value = block(rng.next(), UInt32(truncatingIfNeeded: rng.next()))
                XCTAssertEqual(heap.insert(key, value), model[key])
                model[key] = value
            }
            XCTAssertEqual(heap.count, model.count)
        }
        for key in 0..<512 as Range<UInt64> {
            XCTAssertEqual(heap.lookup(key << 12), model[key << 12])
            XCTAssertEqual(heap.contains(key << 12), model[key << 12] != nil)
        }
        var seen: [UInt64: TestBlock] = [:]
        heap.forEach { address, block in
            XCTAssertNil(seen.updateValue(block, forKey: address), "address \(address) walked twice")
        }
        XCTAssertEqual(seen, model)
    }

    func testGrowthKeepsEveryBlock() {
        checkGrowth(Heap(capacity: 1))
        checkGrowth(Heap(capacity: 1, maxLoadPercent: 50)) // the collector's
    }

    func checkGrowth(_ heap: Heap) {
        let n: UInt64 = 100_000
        for i in 1...n { heap.insert(i &* 16, block(i, UInt32(truncatingIfNeeded: i))) }
        XCTAssertEqual(heap.count, Int(n))
        for i in 1...n { XCTAssertEqual(heap.lookup(i &* 16), block(i, UInt32(truncatingIfNeeded: i))) }
        XCTAssertNil(heap.lookup(8))
        var walked = 0
        var bytes: UInt64 = 0
        heap.forEach { _, b in
            walked += 1
            bytes &+= b.size
        }
        XCTAssertEqual(walked, Int(n))
        XCTAssertEqual(bytes, n * (n + 1) / 2)
        for i in stride(from: 1, through: n, by: 2) { XCTAssertNotNil(heap.remove(i &* 16)) }
        XCTAssertEqual(heap.count, Int(n / 2))
        for i in 1...n { XCTAssertEqual(heap.contains(i &* 16), i % 2 == 0) }
    }

    func testZeroAddressIsABlockLikeAnyOther() {
        let heap = Heap()
        XCTAssertNil(heap.lookup(0))
        XCTAssertNil(heap.insert(0, block(5)))
        XCTAssertEqual(heap.count, 1)
        XCTAssertEqual(heap.lookup(0), block(5))
        XCTAssertEqual(heap.insert(0, block(6)), block(5), "replaced, not added")
        XCTAssertEqual(heap.count, 1)
        var walked: [UInt64] = []
        heap.forEach { address, _ in walked.append(address) }
        XCTAssertEqual(walked, [0])
        // The rule applies at 0 too.
        let change = heap.apply(.reallocFree(address: 0))
        XCTAssertEqual(change.removed, block(6))
        XCTAssertEqual(heap.count, 0)
        XCTAssertEqual(heap.apply(.reallocUndo(address: 0)).added, block(6))
        XCTAssertEqual(heap.remove(0), block(6))
        XCTAssertNil(heap.remove(0))
        XCTAssertEqual(heap.count, 0)
    }

    func testCopyIsDeep() {
        let heap = Heap()
        heap.insert(0x10, block(1))
        heap.insert(0x20, block(2))
        _ = heap.apply(.reallocFree(address: 0x20))
        let copy = heap.copy()
        heap.insert(0x30, block(3))
        _ = heap.apply(.reallocUndo(address: 0x20))
        XCTAssertEqual(copy.count, 1)
        XCTAssertNil(copy.lookup(0x30))
        XCTAssertEqual(copy.pendingCount, 1)
        XCTAssertEqual(copy.apply(.reallocUndo(address: 0x20)).added, block(2))
        XCTAssertEqual(heap.count, 3)
    }

    // MARK: The realloc rule

    func testAllocationAndFree() {
        let heap = Heap()
        var change = heap.apply(.allocation(address: 0x100, block: block(10, 1)))
        XCTAssertTrue(change.matched)
        XCTAssertNil(change.removed)
        XCTAssertEqual(change.added, block(10, 1))
        // An address allocated twice: the newer block replaces the older.
        change = heap.apply(.allocation(address: 0x100, block: block(20, 2)))
        XCTAssertEqual(change.removed, block(10, 1))
        XCTAssertEqual(change.added, block(20, 2))
        XCTAssertEqual(heap.count, 1)
        change = heap.apply(.free(address: 0x100))
        XCTAssertTrue(change.matched)
        XCTAssertEqual(change.removed, block(20, 2))
        XCTAssertNil(change.added)
        // A free of an address that is not live changes nothing.
        change = heap.apply(.free(address: 0x100))
        XCTAssertFalse(change.matched)
        XCTAssertNil(change.removed)
        XCTAssertEqual(heap.count, 0)
        XCTAssertEqual(heap.pendingCount, 0, "a plain free sets nothing aside")
    }

    func testFailedReallocBringsTheBlockBack() {
        let heap = Heap()
        _ = heap.apply(.allocation(address: 0x100, block: block(10, 7)))
        var change = heap.apply(.reallocFree(address: 0x100))
        XCTAssertEqual(change.removed, block(10, 7))
        XCTAssertEqual(heap.count, 0)
        XCTAssertEqual(heap.pendingCount, 1)
        change = heap.apply(.reallocUndo(address: 0x100))
        XCTAssertTrue(change.matched)
        XCTAssertEqual(change.added, block(10, 7), "its old size and record")
        XCTAssertNil(change.removed)
        XCTAssertEqual(heap.lookup(0x100), block(10, 7))
        XCTAssertEqual(heap.pendingCount, 0)
        // A second undo has nothing to bring back.
        change = heap.apply(.reallocUndo(address: 0x100))
        XCTAssertFalse(change.matched)
        XCTAssertNil(change.added)
        XCTAssertEqual(heap.count, 1)
    }

    func testUndoReplacesABlockLiveAtTheAddress() {
        let heap = Heap()
        _ = heap.apply(.allocation(address: 0x100, block: block(10)))
        _ = heap.apply(.reallocFree(address: 0x100))
        heap.insert(0x100, block(99)) // outside the rule: the pending entry stays
        let change = heap.apply(.reallocUndo(address: 0x100))
        XCTAssertEqual(change.removed, block(99))
        XCTAssertEqual(change.added, block(10))
        XCTAssertEqual(heap.count, 1)
    }

    func testAllocationAtAPendingAddressEndsTheRealloc() {
        // realloc(p) moved the block, and p was handed out again: no undo can bring the old block back.
        let heap = Heap()
        _ = heap.apply(.allocation(address: 0x100, block: block(10)))
        _ = heap.apply(.reallocFree(address: 0x100))
        _ = heap.apply(.allocation(address: 0x200, block: block(20)))
        _ = heap.apply(.allocation(address: 0x100, block: block(30)))
        XCTAssertEqual(heap.pendingCount, 0)
        let change = heap.apply(.reallocUndo(address: 0x100))
        XCTAssertFalse(change.matched)
        XCTAssertEqual(heap.lookup(0x100), block(30))
    }

    func testReallocFreeOfAnAddressNotLiveDropsAStaleEntry() {
        // realloc(p, 0) leaves p pending; a later realloc of p (not live: unknown to the trace)
        // must not have its undo revive the old block.
        let heap = Heap()
        _ = heap.apply(.allocation(address: 0x100, block: block(10)))
        _ = heap.apply(.reallocFree(address: 0x100))
        let change = heap.apply(.reallocFree(address: 0x100))
        XCTAssertFalse(change.matched)
        XCTAssertNil(change.removed)
        XCTAssertEqual(heap.pendingCount, 0)
        XCTAssertFalse(heap.apply(.reallocUndo(address: 0x100)).matched)
        XCTAssertEqual(heap.count, 0)
    }

    func testPendingReallocsAreBoundedOldestFirst() {
        let heap = Heap()
        let n: UInt64 = 10_000
        for i in 1...n {
            _ = heap.apply(.allocation(address: i << 8, block: block(i)))
            _ = heap.apply(.reallocFree(address: i << 8)) // realloc(p, 0): never completed
            XCTAssertLessThanOrEqual(heap.pendingCount, Heap.maxPendingReallocs)
        }
        XCTAssertGreaterThan(heap.pendingCount, Heap.maxPendingReallocs / 2)
        // The most recent ones can still fail; the oldest were dropped.
        XCTAssertEqual(heap.apply(.reallocUndo(address: n << 8)).added, block(n))
        XCTAssertFalse(heap.apply(.reallocUndo(address: 1 << 8)).matched)
        XCTAssertEqual(heap.count, 1)
    }

    /// The rule against a plain-dictionary reference of it, on random events over few
    /// addresses, with enough realloc frees to overflow the pending bound many times.
    func testTheRuleAgainstAReference() {
        let heap = Heap(capacity: 16)
        var live: [UInt64: TestBlock] = [:]
        var pending: [UInt64: (block: TestBlock, serial: UInt64)] = [:]
        var serial: UInt64 = 0
        var rng = SeededRandom(seed: 21)
        for step in 0..<300_000 {
            let address = (rng.next() % 20_000) << 4
            let expected: LiveHeapChange<TestBlock>
            let change: LiveHeapChange<TestBlock>
            switch rng.next() % 8 {
            case 0, 1, 2:
                let b = block(rng.next() % 1000, UInt32(step))
                pending[address] = nil
                expected = LiveHeapChange(removed: live.updateValue(b, forKey: address), added: b, matched: true)
                change = heap.apply(.allocation(address: address, block: b))
            case 3:
                let old = live.removeValue(forKey: address)
                expected = LiveHeapChange(removed: old, added: nil, matched: old != nil)
                change = heap.apply(.free(address: address))
            case 4, 5, 6:
                if let old = live.removeValue(forKey: address) {
                    pending[address] = (old, serial)
                    serial += 1
                    if pending.count > Heap.maxPendingReallocs {
                        let cutoff = pending.values.map(\.serial).sorted()[pending.count / 2]
                        pending = pending.filter { $0.value.serial >= cutoff }
                    }
                    expected = LiveHeapChange(removed: old, added: nil, matched: true)
                } else {
                    pending[address] = nil
                    expected = LiveHeapChange(removed: nil, added: nil, matched: false)
                }
                change = heap.apply(.reallocFree(address: address))
            default:
                if let kept = pending.removeValue(forKey: address) {
                    expected = LiveHeapChange(removed: live.updateValue(kept.block, forKey: address), added: kept.block,
                                              matched: true)
                } else {
                    expected = LiveHeapChange(removed: nil, added: nil, matched: false)
                }
                change = heap.apply(.reallocUndo(address: address))
            }
            XCTAssertEqual(change.removed, expected.removed, "step \(step)")
            XCTAssertEqual(change.added, expected.added, "step \(step)")
            XCTAssertEqual(change.matched, expected.matched, "step \(step)")
            XCTAssertEqual(heap.count, live.count, "step \(step)")
            XCTAssertEqual(heap.pendingCount, pending.count, "step \(step)")
            if change.removed != expected.removed || heap.pendingCount != pending.count { return }
        }
    }
}

final class IdSetTests: XCTestCase {
    func testInsertAndContains() {
        var set = IdSet()
        XCTAssertFalse(set.contains(0))
        XCTAssertFalse(set.contains(UInt32.max))
        let ids: [UInt32] = [1, 63, 64, 65_535, 65_536, 1 << 24, 1 << 31, UInt32.max]
        for id in ids {
            XCTAssertTrue(set.insert(id))
            XCTAssertFalse(set.insert(id), "\(id) is there already")
        }
        XCTAssertEqual(set.count, ids.count)
        for id in ids { XCTAssertTrue(set.contains(id)) }
        for id in [0, 2, 62, 66, 65_537, (1 << 24) + 1, (1 << 31) - 1, UInt32.max - 1] as [UInt32] {
            XCTAssertFalse(set.contains(id), "\(id)")
        }
    }

    /// A large id in one of 64 ranges spread over the whole 32 bits (a few pages, not thousands).
    static func scattered(_ rng: inout SeededRandom) -> UInt32 {
        UInt32(rng.next() % 64) << 26 | UInt32(rng.next() % 20_000)
    }

    func testAgainstAModel() {
        var set = IdSet()
        var model = Set<UInt32>()
        var rng = SeededRandom(seed: 3)
        for _ in 0..<50_000 {
            // Dense small ids (a trace's) and scattered large ones (the collector's arena references).
            let id = rng.next() % 2 == 0 ? UInt32(rng.next() % 5000) : Self.scattered(&rng)
            XCTAssertEqual(set.insert(id), model.insert(id).inserted)
        }
        XCTAssertEqual(set.count, model.count)
        for _ in 0..<50_000 {
            let id = rng.next() % 3 == 0 ? UInt32(rng.next() % 5000) : Self.scattered(&rng)
            XCTAssertEqual(set.contains(id), model.contains(id))
        }
        for id in model { XCTAssertTrue(set.contains(id)) }
    }
}
