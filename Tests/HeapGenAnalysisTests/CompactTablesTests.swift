// The analyzer's compact tables against plain dictionaries and arrays.

@testable import HeapGenAnalysis
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class CompactTablesTests: XCTestCase {
    /// Dense runs go to pages, scattered ids to the dictionary; an id that went to the
    /// dictionary before its page was made is still found.
    func testIdMapMatchesADictionary() {
        var rng = SeededRandom(seed: 9)
        var map = IdMap()
        var reference: [UInt32: UInt32] = [:]
        func insert(_ id: UInt32) {
            guard reference[id] == nil else { return }
            let value = UInt32(reference.count + 1)
            map.insert(id, value)
            reference[id] = value
        }
        // Scattered first: pages would be nearly empty, so most go to the dictionary.
        var scattered: [UInt32] = []
        for _ in 0..<2000 { scattered.append(UInt32(truncatingIfNeeded: rng.next())) }
        for id in scattered { insert(id) }
        // Then a dense run (pages), and ids of the pages the scattered ones fell into.
        for id in UInt32(1 << 24)..<UInt32(1 << 24) + 50_000 { insert(id) }
        for id in scattered.prefix(100) { insert(id ^ 1) }
        for (id, value) in reference { XCTAssertEqual(map[id], value, "id \(id)") }
        var listed: [UInt32: UInt32] = [:]
        map.forEach { id, value in
            XCTAssertNil(listed[id], "id \(id) listed twice")
            listed[id] = value
        }
        XCTAssertEqual(listed, reference)
        for _ in 0..<10_000 {
            let id = UInt32(truncatingIfNeeded: rng.next())
            XCTAssertEqual(map[id], reference[id] ?? 0, "id \(id)")
        }
    }

    /// The shape of a test suite's trace: sparse epoch-0 refs first (about one per 20
    /// slots), then a dense run of later-epoch ids from 2^24. The dense run goes to pages
    /// even though the pages made for the sparse ids are nearly empty.
    func testIdMapPagesADenseRunAfterSparseIds() {
        var map = IdMap()
        var value: UInt32 = 0
        for id in stride(from: UInt32(10), to: 1 << 21, by: 20) {
            value += 1
            map.insert(id, value)
        }
        let sparse = Int(value)
        let dense = 300_000
        for id in UInt32(1 << 24)..<UInt32(1 << 24 + dense) {
            value += 1
            map.insert(id, value)
        }
        XCTAssertLessThanOrEqual(map.unpagedCount, sparse + IdMap.pageSize, "the dense run is paged (but for its first ids)")
        XCTAssertEqual(map[10], 1)
        XCTAssertEqual(map[UInt32(1 << 24)], UInt32(sparse + 1))
        XCTAssertEqual(map[UInt32(1 << 24 + dense - 1)], value)
        XCTAssertEqual(map[UInt32(1 << 24 + dense)], 0)
        XCTAssertEqual(map[11], 0)
    }

    func testChunkedArrayAcrossChunks() {
        var array = ChunkedArray<Int>()
        let n = 3 * ChunkedArray<Int>.chunkSize + 5
        for i in 0..<n { array.append(i) }
        XCTAssertEqual(array.count, n)
        for i in array.indices { array[i] += 1 }
        XCTAssertEqual(array.indices.map { array[$0] }, Array(1...n))
    }

    /// Copies are values: writing or appending to one leaves the other as it was, also
    /// past the chunk table's first growth (16 chunks), and elements with references
    /// (strings) are released with the last copy.
    func testChunkedArrayCopiesAreValues() {
        var a = ChunkedArray<String>()
        let n = 17 * ChunkedArray<String>.chunkSize + 3
        for i in 0..<n { a.append(String(i)) }
        var b = a
        b[5] = "five"
        b.append("last")
        XCTAssertEqual(a[5], "5")
        XCTAssertEqual(a.count, n)
        XCTAssertEqual(b[5], "five")
        XCTAssertEqual(b[n], "last")
        XCTAssertEqual(b[n - 1], String(n - 1))
        var c = b
        c.append("more")   // grows the copy only
        XCTAssertEqual(b.count, n + 1)
        XCTAssertEqual(c.count, n + 2)
        XCTAssertEqual(c[17 * ChunkedArray<String>.chunkSize], String(17 * ChunkedArray<String>.chunkSize))
    }

    /// Enough stacks to grow the table several times; each code path is defined again in
    /// a later module epoch (same frames) and answers its first id.
    func testStackIdentityAcrossTableGrowth() {
        var identity = StackIdentity()
        let paths = 5000
        for i in 0..<paths {
            let id = UInt32(1000 + i)
            XCTAssertEqual(identity.canonical(id, frames: [0x1000 + UInt64(i) * 16, 0x2000]), id)
        }
        identity.load(ModuleRecord(loadBias: 0x7000_0000, path: "/lib/other.so", buildID: [1, 2],
                                   segments: [.init(vaddr: 0, memsz: 0x1000, flags: 5)]))
        for i in stride(from: 0, to: paths, by: 7) {
            let again = UInt32(100_000 + i)
            XCTAssertEqual(identity.canonical(again, frames: [0x1000 + UInt64(i) * 16, 0x2000]), UInt32(1000 + i))
        }
        XCTAssertEqual(identity.canonical(7, frames: [0x1000, 0x2001]), 7, "other frames: a new path")
    }
}
