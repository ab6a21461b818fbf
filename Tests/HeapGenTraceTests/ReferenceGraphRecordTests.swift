// The `referenceGraph` record (0x1C, minor version 4): round trip through its parts,
// splitting, and rejection of malformed part runs.

import Foundation
@testable import HeapGenTrace
import XCTest

typealias Graph = ReferenceGraphRecord

/// A graph with every kind of entry (seed for round trips and fuzzing).
func sampleGraph(blocks count: Int = 5, trigger: Graph.Trigger = .mark("cycle5 \"ü\"")) -> Graph {
    let blocks = (0..<UInt64(count)).map { 0x5555_0000_1000 + $0 * 48 }
    var g = Graph(trigger: trigger, blocks: blocks, bytesRead: 1 << 20, nanoseconds: 123_456)
    let n = UInt32(count)
    g.edges = (0..<n).flatMap { i in [Graph.Edge(from: i, to: (i + 1) % n, offset: 24), Graph.Edge(from: i, to: 0, offset: 8 * (i % 5))] }
    g.roots = [Graph.RootRegion(kind: .global, start: 0x5555_0000_0000, end: 0x5555_0000_1000, modulePath: "/bin/app"),
               Graph.RootRegion(kind: .stack, start: 0x7ffc_0000_0000, end: 0x7ffc_0002_0000, tid: 77),
               Graph.RootRegion(kind: .registers, start: 0, end: 0, tid: 77),
               Graph.RootRegion(kind: .other, start: 0x7f00_0000_0000, end: 0x7f00_0000_2000)]
    g.rootEdges = [Graph.RootEdge(region: 0, slot: 0x5555_0000_0080, to: 0),
                   Graph.RootEdge(region: 1, slot: 0x7ffc_0000_0010, to: n - 1, pc: 0x5555_0000_2345),
                   Graph.RootEdge(region: 2, slot: 0, to: 1 % n, register: 15),
                   Graph.RootEdge(region: 3, slot: 0x7f00_0000_0008, to: 0)]
    g.fieldNames = [3: [Graph.Field(offset: 16, name: "subscribers"), Graph.Field(offset: 24, name: "name")], 9: []]
    return g
}

final class ReferenceGraphRecordTests: XCTestCase {
    private func graphs(_ bytes: [UInt8]) throws -> [Graph] {
        try readAll(bytes).compactMap { if case .referenceGraph(let g) = $0 { return g } else { return nil } }
    }

    func testRoundTrip() throws {
        for g in [sampleGraph(), sampleGraph(blocks: 1, trigger: .exit), Graph(trigger: .request)] {
            let bytes = try writeTrace { w in
                w.appendAllocation(.malloc, address: 0x10, size: 8, stack: 0, type: 0)
                w.referenceGraph(g)
                w.appendFree(.free, address: 0x10)
            }
            XCTAssertEqual(try graphs(bytes), [g])
            let all = try readAll(bytes)
            XCTAssertEqual(all[all.count - 2], .free(function: .free, address: 0x10), "event deltas untouched")
        }
    }

    func testLargeGraphsAreSplitIntoParts() throws {
        let g = sampleGraph(blocks: Graph.maxPartEntries * 2 + 7)
        XCTAssertEqual(g.encodedParts().count, 1 + 3 + 5 + 1 + 1 + 1 + 1)
        XCTAssertEqual(try graphs(try writeTrace { $0.referenceGraph(g) }), [g])
    }

    // MARK: Malformed

    private func parts(_ g: Graph = sampleGraph()) -> [[UInt8]] { g.encodedParts() }

    private func rejects(_ records: [UInt8], _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        let error = readError(singleChunkTrace(records, events: 0), file: file, line: line)
        XCTAssertEqual(error?.kind, .corrupt, file: file, line: line)
        XCTAssertTrue(error?.message.contains(message) == true, "\(String(describing: error))", file: file, line: line)
    }

    func testWellFormedRunReads() throws {
        XCTAssertEqual(try graphs(singleChunkTrace(parts().flatMap { $0 }, events: 0)), [sampleGraph()])
    }

    func testMissingPartsAndForeignRecordsAreRejected() {
        let p = parts()
        rejects(Array(p.dropFirst().joined()), "without its header")
        rejects(Array(p.dropLast().joined()), "inside a reference graph")          // the end record comes next
        rejects(p[0] + p[1] + p[3] + p.last!, "before its")                      // edges missing
        rejects(p[0] + p[0], "inside another")
        rejects(p[0] + p[1] + p[1] + p.dropFirst(2).flatMap { $0 }, "more reference graph blocks")
        rejects(p[0] + p[2] + p[1] + p.dropFirst(3).flatMap { $0 }, "before its")  // out of order
        rejects(p[0] + [0x1C, 9], "unknown reference graph part")
        rejects(p[0] + Encode.alloc(delta: 16, size: 1), "inside a reference graph")
        rejects([0x1C, 0, 7] + Encode.string(""), "unknown reference graph trigger")
    }

    func testOutOfRangeIndexesAreRejected() {
        var bad = sampleGraph()
        bad.edges[0].to = 5
        rejects(parts(bad).flatMap { $0 }, "past the 5 blocks")
        bad = sampleGraph()
        bad.rootEdges[0].region = 4
        rejects(parts(bad).flatMap { $0 }, "out of range")
        bad = sampleGraph()
        bad.rootEdges[2].register = 80      // 0…15 general-purpose, 16…79 vector (minor 7)
        rejects(parts(bad).flatMap { $0 }, "register 80")
        bad = sampleGraph()
        bad.blocks[3] = bad.blocks[2]
        rejects(parts(bad).flatMap { $0 }, "do not ascend")
        // A header promising more than the limits.
        let huge = [0x1C, 0, 0] + Encode.string("") + Encode.varint(0) + Encode.varint(0) + Encode.varint(1)
            + Encode.varint(UInt64(Graph.maxEdges) + 1)
        rejects(huge, "over the limit")
        // A header promising entries that never come: no allocation up front, just an error.
        let promise = [0x1C, 0, 0] + Encode.string("") + Encode.varint(0) + Encode.varint(0)
            + Encode.varint(UInt64(UInt32.max)) + [0, 0, 0, 0] + [0x1C, 6]
        rejects(promise, "before its")
    }

    func testTruncatedPartsAreRejected() {
        let all = parts().flatMap { $0 }
        for cut in stride(from: 3, to: all.count - 2, by: 7) {
            let error = readError(singleChunkTrace(Array(all.prefix(cut)), events: 0))
            XCTAssertEqual(error?.kind, .corrupt, "cut at \(cut)")
        }
    }
}
