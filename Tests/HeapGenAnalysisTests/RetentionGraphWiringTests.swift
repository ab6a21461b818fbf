// The analyzer keeps the final snapshot's reference graph with each block's site, age and size.

@testable import HeapGenAnalysis
import HeapGenTrace
import XCTest

final class RetentionGraphWiringTests: XCTestCase {
    func graph(_ trigger: ReferenceGraphRecord.Trigger, _ blocks: [UInt64]) -> TraceRecord {
        .referenceGraph(ReferenceGraphRecord(trigger: trigger, blocks: blocks))
    }

    func testBlocksAreResolvedAgainstTheLiveTableWhereTheRecordIs() {
        var a = GenerationAnalyzer()
        a.consume(.stack(id: 1, frames: [0x1000]))
        a.consume(.stack(id: 2, frames: [0x2000]))
        a.consume(.allocation(function: .malloc, address: 0x100, size: 24, stack: 1, type: 0))
        a.consume(.mark(label: "m", timeNanoseconds: 1, origin: .program))
        a.consume(.allocation(function: .malloc, address: 0x200, size: 200, stack: 2, type: 7))
        // 0x300 is not live: unknown site.
        a.consume(graph(.exit, [0x100, 0x200, 0x300]))
        a.consume(.free(function: .free, address: 0x100))   // after the graph: does not change it
        let g = a.finish().retentionGraph
        XCTAssertEqual(g?.stacks, [1, 2, RetentionGraph.unknown])
        XCTAssertEqual(g?.types, [0, 7, 0])
        XCTAssertEqual(g?.sizes, [24, 200, 0])
        XCTAssertEqual(g?.epochs[0], 0)
        XCTAssertEqual(g?.epochs[1], 1, "allocated after one mark")
        XCTAssertEqual(g?.marksBefore, 1)
        XCTAssertLessThan(g!.ages[0], g!.ages[1], "older first")
    }

    func testTheGraphAtOrBeforeTheFinalSnapshotIsKept() {
        var a = GenerationAnalyzer()
        a.consume(.mark(label: "a", timeNanoseconds: 1, origin: .program))
        a.consume(graph(.mark("a"), [1]))
        a.consume(.mark(label: "b", timeNanoseconds: 2, origin: .program))
        a.consume(graph(.mark("b"), [1, 2]))
        a.consume(graph(.exit, [1, 2, 3]))
        // The final snapshot is the last mark, "b": its graph, not the exit's.
        XCTAssertEqual(a.finish().retentionGraph?.blockCount, 2)

        var b = GenerationAnalyzer()
        b.consume(.mark(label: "a", timeNanoseconds: 1, origin: .program))
        b.consume(.mark(label: "b", timeNanoseconds: 2, origin: .program))
        b.consume(graph(.exit, [1, 2, 3]))
        // Only a graph after the snapshot (--retention at exit): that one.
        XCTAssertEqual(b.finish().retentionGraph?.blockCount, 3)

        XCTAssertNil(GenerationAnalyzer().finish().retentionGraph, "no record, no graph")
    }
}
