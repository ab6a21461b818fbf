// The analysis keeps every stack definition as a prefix tree (StackFrameStore) and tells
// one code path's stacks apart by a hash of their module-relative frames (StackIdentity):
// both must give back exactly what the trace defined.

import Foundation
import HeapGenTestSupport
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

    /// A new trace in the temporary directory of a process whose executable is loaded: its
    /// path, its writer and the executable's module.
    private static func appTrace(_ name: String) throws -> (String, TraceWriter, ModuleRecord) {
        let path = NSTemporaryDirectory() + "heapgen-\(name)-\(UUID().uuidString).trace"
        let exe = ModuleRecord(loadBias: 0x5555_0000_0000, path: "/usr/bin/app", buildID: [1, 2, 3],
                               segments: [.init(vaddr: 0, memsz: 0x1000_0000, flags: 5)])
        let w = try TraceWriter(path: path, process: ProcessRecord(
            pid: 7, ppid: 1, origin: .root, executable: "/usr/bin/app", arguments: ["app"], startUnixNanoseconds: 1))
        w.moduleLoad(exe)
        return (path, w, exe)
    }

    /// A trace with 100,000 distinct stacks of 40 frames that share their outer 30: the
    /// analysis gives every stack's frames back exactly, and counts one site per stack.
    func testAnalysisKeepsEveryStackOfALargeTrace() throws {
        let (path, w, exe) = try Self.appTrace("stackstore")
        defer { try? FileManager.default.removeItem(atPath: path) }
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

    /// A trace whose stacks outgrow the frame limit: the analysis that drops its frames and
    /// reads the needed ones in a second pass equals the one that kept every stack, in its
    /// encoding (findings, sites, stacks and their record positions), its regrouping, and
    /// the frames and truncation of every stack it can hand out; the stacks of sites freed
    /// before any mark and never near the top are not kept.
    func testSecondPassGivesTheSameAnalysis() throws {
        let (path, w, exe) = try Self.appTrace("stackpass")
        defer { try? FileManager.default.removeItem(atPath: path) }
        func frames(_ s: Int) -> [UInt64] {
            (0..<12).map { exe.loadBias + 0x20_0000 + UInt64((s &* 2_654_435_761 >> $0) & 0xfff) &* 64 + UInt64($0) }
        }
        var next: UInt64 = 0x1000_0000
        var rng = SeededRandom(seed: 42)
        w.defineStack(id: 100_000, frames: frames(100_000))
        for cycle in 0..<6 {
            for s in 0..<3_000 {
                let id = UInt32(cycle * 3_000 + s + 1)
                w.defineStack(id: id, frames: frames(Int(id)))
                if s % 7 == 0 { w.stackTruncated(id: id) }
                let address = next
                next += 64
                w.appendAllocation(.malloc, address: address, size: 16 + rng.next() % 200, stack: id, type: 0)
                // Most blocks go at once; some stay a cycle or for good; one site leaks every cycle.
                switch rng.next() % 10 {
                case 0: break
                case 1, 2: if cycle > 0 { w.appendFree(.free, address: address - 3_000 * 64) }
                default: w.appendFree(.free, address: address)
                }
            }
            w.appendAllocation(.malloc, address: next, size: 4_096, stack: 100_000, type: 0)
            next += 8_192
            w.mark(label: "cycle \(cycle)", timeNanoseconds: UInt64(cycle + 1) * 1_000, origin: .program)
        }
        try w.finish(EndRecord(reason: .exited, status: 0))

        let kept = try GenerationAnalyzer.analyze(path: path, options: AnalysisOptions(), frameNodeLimit: .max)
        let read = try GenerationAnalyzer.analyze(path: path, options: AnalysisOptions(), frameNodeLimit: 100)
        XCTAssertFalse(kept.findings.isEmpty)
        XCTAssertEqual(read, kept)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        XCTAssertEqual(try encoder.encode(read), try encoder.encode(kept))
        XCTAssertEqual(read.regroupingCandidates, kept.regroupingCandidates)
        var asked = Set(read.regroupingCandidates.map(\.stackID))
        asked.formUnion(read.sites.map(\.stackID))
        asked.formUnion(read.findings.map(\.stackID))
        for id in asked {
            XCTAssertEqual(read.frames(ofStack: id), frames(Int(id)), "stack \(id)")
            XCTAssertEqual(read.recordIndex(ofStack: id), kept.recordIndex(ofStack: id), "stack \(id)")
            XCTAssertEqual(read.truncatedStacks[id], kept.truncatedStacks[id], "stack \(id)")
        }
        XCTAssertFalse(read.truncatedStacks.isEmpty)
        XCTAssertLessThan(read.truncatedStacks.count, 6 * 429)
        XCTAssertLessThan(asked.count, 6 * 3_000)
        let grouped = { (a: Analysis) in a.regrouped { stack, _ in stack % 5 } }
        XCTAssertEqual(grouped(read), grouped(kept))
    }

    /// `top` picks what sorting everything and taking a prefix picks, ties included.
    func testTopEqualsSortedPrefix() {
        var rng = SeededRandom(seed: 7)
        for _ in 0..<200 {
            let n = Int(rng.next() % 300)
            let values = (0..<n).map { _ in rng.next() % 20 }
            let limit = Int(rng.next() % 40)
            let precedes = { (a: Int, b: Int) in values[a] != values[b] ? values[a] > values[b] : a < b }
            let include = { (i: Int) in values[i] % 4 != 0 }
            let expected = Array((0..<n).filter(include).sorted(by: precedes).prefix(limit))
            XCTAssertEqual(GenerationAnalyzer.top(limit, of: 0..<n, where: include, by: precedes), expected)
        }
    }
}

