// The analyzer's compact tables against plain dictionaries and arrays.

@testable import HeapGenAnalysis
import HeapGenTrace
import XCTest

final class CompactTablesTests: XCTestCase {
    /// Dense runs go to pages, scattered ids to the dictionary; an id that went to the
    /// dictionary before its page was made is still found.
    func testIdMapMatchesADictionary() {
        var rng = SplitMix64(state: 9)
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
        for _ in 0..<10_000 {
            let id = UInt32(truncatingIfNeeded: rng.next())
            XCTAssertEqual(map[id], reference[id] ?? 0, "id \(id)")
        }
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
