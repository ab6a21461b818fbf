// Opt-in throughput measurement on a large synthetic trace.

import Foundation
import HeapGenAnalysis
import HeapGenTrace
import XCTest

final class ThroughputTests: XCTestCase {
    /// Set HEAPGEN_BENCH_EVENTS (e.g. 10000000) and run in release:
    /// `HEAPGEN_BENCH_EVENTS=10000000 swift test -c release --filter ThroughputTests`.
    func testThroughputOnLargeTrace() throws {
        guard let text = ProcessInfo.processInfo.environment["HEAPGEN_BENCH_EVENTS"], let target = Int(text) else {
            throw XCTSkip("set HEAPGEN_BENCH_EVENTS to run")
        }
        let path = NSTemporaryDirectory() + "heapgen-bench-\(UUID().uuidString).hgtrace"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try TraceWriter(path: path, process: ProcessRecord(
            pid: 1, ppid: 0, origin: .root, executable: "bench", arguments: [], startUnixNanoseconds: 0))
        for s in 1...2000 { writer.defineStack(id: UInt32(s), frames: [UInt64(s) * 64 + 0x40_0000, 0x40_1000]) }
        for t in 1...50 { writer.defineType(id: UInt32(t), metadata: UInt64(t), name: "T\(t)") }
        var rng = SplitMix64(state: 1)
        var live: [UInt64] = []
        var next: UInt64 = 0x1000_0000
        var events = 0
        let marksEvery = max(1, target / 12)
        while events < target {
            if events % marksEvery == 0 {
                writer.mark(label: "cycle", timeNanoseconds: UInt64(events), origin: .program)
                events += 1
                continue
            }
            let r = rng.next()
            switch r % 100 {
            case let op where op < 50 || live.count < 1000:
                next &+= 16 &* (1 &+ (r >> 8) % 16)
                let stack = UInt32(1 + (r >> 16) % 2000)
                writer.appendAllocation(.malloc, address: next, size: 16 + (r >> 32) % 512, stack: stack,
                                        type: stack % 3 == 0 ? 1 + stack % 50 : 0)
                live.append(next)
                events += 1
            case 50..<97:
                let i = Int((r >> 20) % UInt64(live.count))
                writer.appendFree(.free, address: live[i])
                live.swapAt(i, live.count - 1)
                live.removeLast()
                events += 1
            default:
                let i = Int((r >> 20) % UInt64(live.count))
                writer.appendFree(.realloc, address: live[i])
                next &+= 16 &* (1 &+ (r >> 8) % 16)
                writer.appendAllocation(.realloc, address: next, size: 64 + (r >> 32) % 4096,
                                        stack: UInt32(1 + (r >> 16) % 2000), type: 0)
                live[i] = next
                events += 2
            }
        }
        try writer.finish(EndRecord(reason: .exited))

        let start = Date()
        let analysis = try GenerationAnalyzer.analyze(path: path)
        let seconds = Date().timeIntervalSince(start)
        let rate = Double(analysis.totals.events) / seconds
        print("analyzed \(analysis.totals.events) events in \(seconds) s: \(Int(rate)) events/s; "
              + "\(analysis.siteCount) sites, \(analysis.totals.liveAtExitObjects) live at exit")
        XCTAssertEqual(analysis.totals.events, writer.eventCount)
    }
}
