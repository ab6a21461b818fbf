// Frees of addresses that were not live, explained on synthetic traces with known answers.

import HeapGenTrace
@testable import HeapGenAnalysis
import XCTest

final class StrayFreeTests: XCTestCase {
    /// A double free, a pointer into a live block and an address nothing held: each explained,
    /// with the block's stack available for a report, whether the analysis kept every stack
    /// (a small trace) or dropped them in the first pass (a large one, read again).
    func testEachCauseWithTheBlocksStackWhateverTheAnalysisKept() throws {
        let t = try TraceBuilder()
        let kept = t.alloc(size: 100, stack: 1)          // event 0, live to the end
        let twice = t.alloc(size: 16, stack: 5)          // event 1
        t.free(twice)                                    // event 2
        t.free(twice)                                    // event 3: double free
        let block = t.alloc(size: 64, stack: 6)          // event 4, live
        t.free(block + 16)                               // event 5: 16 bytes into it
        t.free(0xdead_0000)                              // event 6: never allocated
        // More sites with higher peaks than the analysis keeps (AnalysisOptions.maxSites):
        // once it drops the frames, it no longer needs the freed block's stack.
        for id in UInt32(100)..<UInt32(100 + AnalysisOptions().maxSites + 10) { t.alloc(size: 1_000, stack: id) }
        _ = kept
        try t.finish()
        let path = t.path
        for limit in [Int.max, 0] {
            let a = try GenerationAnalyzer.analyze(path: path, options: AnalysisOptions(), frameNodeLimit: limit)
            XCTAssertEqual(a.totals.untrackedFrees, 3)
            if limit == 0 { XCTAssertNil(a.regrouping.stackFrames[5], "the case needs a stack the analysis dropped") }
            XCTAssertEqual(a.strayFrees.map(\.cause), [.doubleFree, .interiorPointer, .notAllocated], "limit \(limit)")
            XCTAssertEqual(a.strayFrees.map(\.event), [3, 5, 6])
            let double = try XCTUnwrap(a.strayFrees.first)
            XCTAssertEqual(double.blockAddress, twice)
            XCTAssertEqual(double.blockSize, 16)
            XCTAssertEqual(double.blockFreedAtEvent, 2)
            XCTAssertEqual(double.blockStack, 5)
            let interior = a.strayFrees[1]
            XCTAssertEqual(interior.blockAddress, block)
            XCTAssertNil(interior.blockFreedAtEvent)
            XCTAssertNil(a.strayFrees[2].blockStack)
            for id: UInt32 in [5, 6] {
                XCTAssertEqual(a.frames(ofStack: id), [0x40_0000 + UInt64(id) * 0x10, 0x40_1000], "stack \(id), limit \(limit)")
                XCTAssertNotNil(a.recordIndex(ofStack: id), "stack \(id), limit \(limit)")
            }
        }
    }
}
