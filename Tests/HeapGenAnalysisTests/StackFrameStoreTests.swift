// The analysis keeps every stack definition as a prefix tree (StackFrameStore) and tells
// one code path's stacks apart by a hash of their module-relative frames (StackIdentity):
// both must give back exactly what the trace defined.

import Foundation
@testable import HeapGenAnalysis
import HeapGenTrace
import XCTest

final class StackFrameStoreTests: XCTestCase {
    /// Random stacks that share outer frames with earlier ones (not only the previous one),
    /// redefined ids, empty stacks and stacks that are a prefix or an extension of the
    /// previous one: every one reads back exactly as defined.
    func testEveryDefinitionReadsBackExactly() {
        var rng = SystemRandomNumberGenerator()
        var store = StackFrameStore()
        var reference: [UInt32: [UInt64]] = [:]
        var earlier: [[UInt64]] = [[]]
        for i in 0..<20_000 {
            let id = UInt32.random(in: 1...15_000, using: &rng)   // some ids redefined
            // Outermost-first: a random earlier stack's outer part, then new frames.
            let base = earlier.randomElement(using: &rng)!
            let keep = Int.random(in: 0...base.count, using: &rng)
            var outerFirst = Array(base.prefix(keep))
            switch i % 5 {
            case 0: break                                    // a prefix of an earlier stack
            default:
                for _ in 0..<Int.random(in: 1...12, using: &rng) {
                    outerFirst.append(UInt64.random(in: 1...64, using: &rng))   // few values: repeats
                }
            }
            earlier.append(outerFirst)
            let frames = Array(outerFirst.reversed())
            store.define(id, frames: frames)
            reference[id] = frames
        }
        XCTAssertEqual(store.count, reference.count)
        for (id, frames) in reference {
            XCTAssertEqual(store[id], frames, "stack \(id)")
            XCTAssertEqual(store.depth(of: id), frames.count)
        }
        XCTAssertNil(store[15_001])
        XCTAssertNil(store.depth(of: 0))
    }

    /// A trace with 100,000 distinct stacks of 40 frames that share their outer 30: the
    /// analysis gives every stack's frames back exactly, and counts one site per stack.
    func testAnalysisKeepsEveryStackOfALargeTrace() throws {
        let path = NSTemporaryDirectory() + "heapgen-stackstore-\(UUID().uuidString).trace"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let exe = ModuleRecord(loadBias: 0x5555_0000_0000, path: "/usr/bin/app", buildID: [1, 2, 3],
                               segments: [.init(vaddr: 0, memsz: 0x1000_0000, flags: 5)])
        let w = try TraceWriter(path: path, process: ProcessRecord(
            pid: 7, ppid: 1, origin: .root, executable: "/usr/bin/app", arguments: ["app"], startUnixNanoseconds: 1))
        w.moduleLoad(exe)
        let outer = (0..<30).map { exe.loadBias + 0x10_0000 + UInt64($0) * 16 }
        func frames(_ s: Int) -> [UInt64] {
            // Ten inner frames from the stack's number, innermost first: all stacks distinct.
            (0..<10).map { exe.loadBias + 0x20_0000 + UInt64((s >> $0) & 0x3ff) &* 64 + UInt64($0) } + outer.reversed()
        }
        let count = 100_000
        for s in 0..<count {
            w.defineStack(id: UInt32(s + 1), frames: frames(s))
            w.appendAllocation(.malloc, address: 0x1000_0000 + UInt64(s) * 64, size: 32, stack: UInt32(s + 1), type: 0)
        }
        try w.finish(EndRecord(reason: .exited, status: 0))
        let analysis = try GenerationAnalyzer.analyze(path: path, options: AnalysisOptions())
        XCTAssertEqual(analysis.siteCount, count)
        XCTAssertEqual(analysis.totals.allocations, UInt64(count))
        for s in stride(from: 0, to: count, by: 997) {
            XCTAssertEqual(analysis.frames(ofStack: UInt32(s + 1)), frames(s), "stack \(s + 1)")
        }
    }
}
