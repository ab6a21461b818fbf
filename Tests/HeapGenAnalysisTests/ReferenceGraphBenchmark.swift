// Timings of the reference-graph algorithms on a million-block heap. Prints figures only (no
// assertions on time): run in release with
//   HEAPGEN_GRAPH_BENCH=1 swift test -c release -Xswiftc -enable-testing \
//     --filter HeapGenAnalysisTests.ReferenceGraphBenchmark
// HEAPGEN_GRAPH_BENCH=local draws cross references between nearby blocks instead of anywhere.

import Foundation
import HeapGenAnalysis
import XCTest

final class ReferenceGraphBenchmark: XCTestCase {
    func testMillionNodesFourMillionEdges() throws {
        guard let mode = ProcessInfo.processInfo.environment["HEAPGEN_GRAPH_BENCH"] else {
            throw XCTSkip("set HEAPGEN_GRAPH_BENCH=1 (or local) to run")
        }
        let n = 1_000_000, m = 4_000_000
        let leakedFrom = n * 9 / 10 // blocks from here on are referenced only among themselves
        var state: UInt64 = 42
        func below(_ k: Int) -> Int {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(k))
        }
        var edges: [ReferenceGraph.Edge] = []
        edges.reserveCapacity(m)
        // A spanning tree (each block referenced from an earlier one), then cross references.
        for v in 1 ..< n where v != leakedFrom {
            let lo = v >= leakedFrom ? leakedFrom : 0
            edges.append(.init(from: UInt32(lo + below(v - lo)), to: UInt32(v), offset: UInt32(8 * below(8))))
        }
        while edges.count < m {
            let a = below(n)
            let lo = a >= leakedFrom ? leakedFrom : 0, hi = a >= leakedFrom ? n : leakedFrom
            let b = mode == "local" ? min(hi - 1, max(lo, a - 2000 + below(4000))) : lo + below(hi - lo)
            edges.append(.init(from: UInt32(a), to: UInt32(b), offset: UInt32(8 * below(16))))
        }
        let sizes = (0 ..< n).map { _ in UInt64(16 + 16 * below(8)) }
        let library = (0 ..< n).map { _ in below(10) == 0 }
        let roots = (0 ..< 1000).map { ReferenceGraph.RootEdge(rootID: $0, to: UInt32($0 * (leakedFrom / 1000))) }

        func time<T>(_ label: String, _ body: () -> T) -> T {
            let start = DispatchTime.now().uptimeNanoseconds
            let result = body()
            print("\(label): \((DispatchTime.now().uptimeNanoseconds - start) / 1_000_000) ms")
            return result
        }
        let g = time("ReferenceGraph.init") { ReferenceGraph(sizes: sizes, isLibrary: library, edges: edges, roots: roots) }
        let paths = time("RetentionPaths") { RetentionPaths(graph: g) }
        let scc = time("StronglyConnectedComponents") { StronglyConnectedComponents(graph: g) }
        let dom = time("DominatorTree") { DominatorTree(graph: g, components: scc) }
        var owned = Set<Int>()
        let findings = (0 ..< 200).map { f in (0 ..< 500).map { k in (f * 4999 + k * 1997) % n }.filter { owned.insert($0).inserted }.sorted() }
        let analysis = time("RetentionAnalysis (200 findings)") {
            RetentionAnalysis(graph: g, findingNodes: findings, paths: paths, components: scc, dominators: dom)
        }
        print("edges \(g.edgeCount), components \(scc.componentCount), leak leaders \(dom.leakLeaders.count), root causes \(analysis.rootCauses.count)")
    }
}
