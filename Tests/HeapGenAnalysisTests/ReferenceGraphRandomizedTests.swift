// The graph algorithms against naive references on small random graphs, and on a chain of a
// million nodes (recursion would overflow the stack there).

import HeapGenAnalysis
import HeapGenTestSupport
import XCTest

/// Nodes reachable from `sources` in `adjacency`, never entering `removed`.
private func reach(_ adjacency: [[Int]], from sources: [Int], removing removed: Int? = nil) -> [Bool] {
    var seen = [Bool](repeating: false, count: adjacency.count)
    var stack = sources.filter { $0 != removed }
    for s in stack { seen[s] = true }
    while let v = stack.popLast() {
        for w in adjacency[v] where !seen[w] && w != removed {
            seen[w] = true
            stack.append(w)
        }
    }
    return seen
}

final class ReferenceGraphRandomizedTests: XCTestCase {
    func testAgainstNaiveReferencesOnRandomGraphs() {
        var rng = SeededRandom(seed: 0x5EED)
        for round in 0 ..< 400 {
            let n = 1 + rng.below(12)
            let m = rng.below(3 * n + 1)
            var edges: [(Int, Int)] = []
            for _ in 0 ..< m { edges.append((rng.below(n), rng.below(n))) }
            let rootCount = rng.below(3)
            let roots = (0 ..< rootCount).map { _ in rng.below(n) }
            let library = Set((0 ..< n).filter { _ in rng.below(4) == 0 })
            let sizes = (0 ..< n).map { _ in UInt64(rng.below(5) * 8) }
            let g = makeGraph(n, edges, roots: roots, library: library, sizes: sizes)
            var adjacency = [[Int]](repeating: [], count: n)
            for (a, b) in edges where !adjacency[a].contains(b) { adjacency[a].append(b) }
            let context = "round \(round): n \(n) edges \(edges) roots \(roots) library \(library.sorted())"

            // Strongly connected components: same component iff mutually reachable.
            let scc = StronglyConnectedComponents(graph: g)
            let reachFrom = (0 ..< n).map { reach(adjacency, from: [$0]) }
            let finder = ShortestCycleFinder(graph: g, components: scc) // reused: stale marks must not leak between queries
            for a in 0 ..< n {
                for b in 0 ..< n {
                    let mutual = reachFrom[a][b] && reachFrom[b][a]
                    XCTAssertEqual(scc.componentOf[a] == scc.componentOf[b], mutual, "\(context): \(a), \(b)")
                }
                // Component ids in reverse topological order.
                for b in adjacency[a] { XCTAssertLessThanOrEqual(scc.componentOf[b], scc.componentOf[a], context) }
                // On a cycle iff some successor reaches back.
                let onCycle = adjacency[a].contains { reachFrom[$0][a] }
                XCTAssertEqual(scc.isOnCycle(a), onCycle, "\(context): \(a)")
                // Shortest cycle: a closed walk of graph edges, as short as a BFS says.
                let cycle = scc.shortestCycle(through: a, in: g)
                XCTAssertEqual(finder.cycle(through: a), cycle, "\(context): reused finder, node \(a)")
                if onCycle {
                    var dist = [Int](repeating: -1, count: n)
                    var queue = adjacency[a]
                    for s in queue { dist[s] = 1 }
                    var head = 0
                    while head < queue.count {
                        let v = queue[head]; head += 1
                        for w in adjacency[v] where dist[w] < 0 { dist[w] = dist[v] + 1; queue.append(w) }
                    }
                    XCTAssertEqual(cycle.count, dist[a], "\(context): cycle through \(a) \(cycle)")
                    XCTAssertEqual(cycle.first?.from, a)
                    XCTAssertEqual(cycle.last?.to, a)
                    for (i, step) in cycle.enumerated() {
                        XCTAssertNotNil(g.edgeIndex(from: step.from, to: step.to), context)
                        if i > 0 { XCTAssertEqual(cycle[i - 1].to, step.from, context) }
                    }
                } else {
                    XCTAssertEqual(cycle, [], context)
                }
            }

            // Retention paths: valid, and lexicographically (library nodes, length) minimal,
            // against Dijkstra with a library penalty larger than any path.
            let paths = RetentionPaths(graph: g)
            let penalty = n + 2
            var best = [Int](repeating: Int.max, count: n)
            var done = [Bool](repeating: false, count: n)
            for r in roots { best[r] = min(best[r], 1 + (library.contains(r) ? penalty : 0)) }
            while let u = (0 ..< n).filter({ !done[$0] && best[$0] != Int.max }).min(by: { best[$0] < best[$1] }) {
                done[u] = true
                for w in adjacency[u] {
                    best[w] = min(best[w], best[u] + 1 + (library.contains(w) ? penalty : 0))
                }
            }
            let reachable = reach(adjacency, from: roots)
            for v in 0 ..< n {
                XCTAssertEqual(paths.isReachable(v), reachable[v], "\(context): \(v)")
                guard let path = paths.path(to: v) else { continue }
                XCTAssertEqual(path.last?.to, v)
                guard case .root(let id, let first) = path[0] else { XCTFail(context); continue }
                XCTAssertEqual(roots[id - 100], first)
                var libraryCount = library.contains(first) ? 1 : 0
                for i in 1 ..< path.count {
                    guard case .reference(let from, let offset, let to) = path[i] else { XCTFail(context); continue }
                    XCTAssertEqual(from, path[i - 1].to)
                    XCTAssertEqual(g.edgeIndex(from: from, to: to).map { Int(g.edgeOffsets[$0]) }, offset, context)
                    if library.contains(to) { libraryCount += 1 }
                }
                XCTAssertEqual(Int(paths.libraryCount[v]), libraryCount)
                XCTAssertEqual(Int(paths.length[v]), path.count)
                XCTAssertEqual(libraryCount * penalty + path.count, best[v], "\(context): path to \(v) \(path)")
            }

            // Leak leaders: the lowest node of each unreachable component that no node outside it references.
            let dom = DominatorTree(graph: g, components: scc)
            var expectedLeaders: [Int] = []
            for v in 0 ..< n where !reachable[v] {
                let component = (0 ..< n).filter { scc.componentOf[$0] == scc.componentOf[v] }
                let referencedFromOutside = (0 ..< n).contains { u in
                    scc.componentOf[u] != scc.componentOf[v] && component.contains { adjacency[u].contains($0) }
                }
                if component.first == v && !referencedFromOutside { expectedLeaders.append(v) }
            }
            XCTAssertEqual(dom.leakLeaders, expectedLeaders, context)
            XCTAssertEqual(dom.isReachable, reachable, context)

            // Dominators: d dominates v iff removing d cuts v off from the virtual root
            // (edges from leaked nodes to live ones do not count).
            var pruned = adjacency
            for u in 0 ..< n where !reachable[u] { pruned[u] = adjacency[u].filter { !reachable[$0] } }
            let sources = roots + expectedLeaders
            let base = reach(pruned, from: sources)
            XCTAssertEqual(base, [Bool](repeating: true, count: n), context)
            var dominated = [[Bool]](repeating: [Bool](repeating: false, count: n), count: n) // [d][v]
            for d in 0 ..< n {
                let without = reach(pruned, from: sources, removing: d)
                for v in 0 ..< n { dominated[d][v] = v == d || !without[v] }
            }
            for v in 0 ..< n {
                for d in 0 ..< n {
                    XCTAssertEqual(dom.dominates(d, v), dominated[d][v], "\(context): does \(d) dominate \(v)?")
                }
                // The immediate dominator is the strict dominator every other one dominates.
                let strict = (0 ..< n).filter { $0 != v && dominated[$0][v] }
                let expectedIdom = strict.first { c in strict.allSatisfy { dominated[$0][c] } }
                XCTAssertEqual(dom.immediateDominator(of: v), expectedIdom, "\(context): idom of \(v)")
                let retained = (0 ..< n).filter { dominated[v][$0] }.reduce(UInt64(0)) { $0 + sizes[$1] }
                XCTAssertEqual(dom.retainedSize[v], retained, "\(context): retained size of \(v)")
            }
            // Every node after its immediate dominator in the tree's preorder.
            XCTAssertEqual(dom.preorder.count, n)
            for v in 0 ..< n {
                if let d = dom.immediateDominator(of: v) {
                    XCTAssertLessThan(dom.preorderIndex(of: d), dom.preorderIndex(of: v))
                }
            }
        }
    }

    /// Finding groups on random graphs: heldBy against the rule spelled out on the naive dominator chain.
    func testHeldByAgainstTheIdomChainRule() {
        var rng = SeededRandom(seed: 0xF1D)
        var seen: [RetentionAnalysis.HeldReason: Int] = [:]
        var topLevel = 0
        defer {
            // The rounds must exercise every rule, or they prove little.
            XCTAssertGreaterThan(seen[.dominated] ?? 0, 20)
            XCTAssertGreaterThan(seen[.sameCycle] ?? 0, 20)
            XCTAssertGreaterThan(topLevel, 20)
        }
        for round in 0 ..< 300 {
            let n = 1 + rng.below(14)
            var edges: [(Int, Int)] = []
            for _ in 0 ..< rng.below(2 * n + 1) { edges.append((rng.below(n), rng.below(n))) }
            let roots = (0 ..< rng.below(3)).map { _ in rng.below(n) }
            let g = makeGraph(n, edges, roots: roots)
            let findingCount = 1 + rng.below(4)
            var findingNodes = [[Int]](repeating: [], count: findingCount)
            var findingOf = [Int?](repeating: nil, count: n)
            for v in 0 ..< n where rng.below(3) != 0 {
                let f = rng.below(findingCount)
                findingNodes[f].append(v)
                findingOf[v] = f
            }
            let r = RetentionAnalysis(graph: g, findingNodes: findingNodes)
            let context = "round \(round): n \(n) edges \(edges) roots \(roots) findings \(findingNodes)"
            // The cycle group of a finding: its top (itself unless held through a cycle).
            func group(_ f: Int) -> Int { r.findings[f].heldReason == .sameCycle ? r.findings[f].heldBy! : f }
            for a in 0 ..< n {
                for b in 0 ..< n where findingOf[a] != nil && findingOf[b] != nil {
                    if r.components.componentOf[a] == r.components.componentOf[b] && r.components.isOnCycle(a) {
                        XCTAssertEqual(group(findingOf[a]!), group(findingOf[b]!), "\(context): \(a) and \(b) share a cycle")
                    }
                }
            }
            for (i, f) in r.findings.enumerated() {
                XCTAssertEqual(f.representative, findingNodes[i].first { r.paths.isReachable($0) } ?? findingNodes[i].first, context)
                // Root causes are held by nothing and reached in a bounded number of steps.
                var c = i, steps = 0
                while let h = r.findings[c].heldBy { c = h; steps += 1; XCTAssertLessThanOrEqual(steps, findingCount, context) }
                XCTAssertEqual(f.rootCause, c, context)
                XCTAssertEqual(f.retainedBytes != nil, f.heldBy == nil, context)
                if let reason = f.heldReason { seen[reason, default: 0] += 1 } else { topLevel += 1 }
                if f.heldReason == .sameCycle {
                    // Held by its group's top, which owns the group's oldest node.
                    let top = f.heldBy!
                    XCTAssertNotEqual(r.findings[top].heldReason, .sameCycle, context)
                    XCTAssertLessThan(findingNodes[top].min()!, findingNodes[i].min()!, context)
                    continue
                }
                // A group top: walk each member node's idom chain past nodes of no finding and of
                // the group; held iff every walk ends on a node, all in one other group.
                let members = (0 ..< findingCount).filter { group($0) == i }
                var holderGroups: Set<Int?> = []
                var holderFindings: Set<Int> = []
                for m in members {
                    for v in findingNodes[m] {
                        var d = r.dominators.immediateDominator(of: v)
                        while let x = d, findingOf[x] == nil || group(findingOf[x]!) == i {
                            d = r.dominators.immediateDominator(of: x)
                        }
                        holderGroups.insert(d.map { group(findingOf[$0]!) })
                        if let x = d { holderFindings.insert(findingOf[x]!) }
                    }
                }
                let nodeCount = members.reduce(0) { $0 + findingNodes[$1].count }
                if nodeCount > 0, holderGroups.count == 1, let only = holderGroups.first, let hg = only {
                    XCTAssertEqual(f.heldReason, .dominated, context)
                    XCTAssertEqual(f.heldBy, holderFindings.count == 1 ? holderFindings.first! : hg, "\(context): finding \(i)")
                } else {
                    XCTAssertNil(f.heldBy, "\(context): finding \(i)")
                }
            }
        }
    }

    /// A chain and a ring of a million nodes: nothing may recurse per node.
    func testMillionNodeChainAndRing() {
        let n = 1_000_000
        var edges = (0 ..< n - 1).map { ReferenceGraph.Edge(from: UInt32($0), to: UInt32($0 + 1), offset: 8) }
        let chain = ReferenceGraph(sizes: [UInt64](repeating: 1, count: n), isLibrary: [Bool](repeating: false, count: n),
                                   edges: edges, roots: [.init(rootID: 1, to: 0)])
        let paths = RetentionPaths(graph: chain)
        XCTAssertEqual(paths.length[n - 1], UInt32(n))
        XCTAssertEqual(paths.path(to: n - 1)?.count, n)
        let scc = StronglyConnectedComponents(graph: chain)
        XCTAssertEqual(scc.componentCount, n)
        let dom = DominatorTree(graph: chain, components: scc)
        XCTAssertEqual(dom.immediateDominator(of: n - 1), n - 2)
        XCTAssertEqual(dom.retainedSize[0], UInt64(n))
        XCTAssertTrue(dom.dominates(0, n - 1))

        // The same, closed into a ring and leaked: one component, one leader.
        edges.append(.init(from: UInt32(n - 1), to: 0, offset: 16))
        let ring = ReferenceGraph(sizes: [UInt64](repeating: 1, count: n), isLibrary: [Bool](repeating: false, count: n),
                                  edges: edges, roots: [])
        let ringSCC = StronglyConnectedComponents(graph: ring)
        XCTAssertEqual(ringSCC.componentCount, 1)
        XCTAssertEqual(ringSCC.shortestCycle(through: 0, in: ring).count, n)
        let ringDom = DominatorTree(graph: ring, components: ringSCC)
        XCTAssertEqual(ringDom.leakLeaders, [0])
        XCTAssertEqual(ringDom.retainedSize[0], UInt64(n))
        XCTAssertEqual(ringDom.immediateDominator(of: n - 1), n - 2)
        let analysis = RetentionAnalysis(graph: ring, findingNodes: [Array(0 ..< n)])
        XCTAssertEqual(analysis.findings[0].retainedBytes, UInt64(n))
        XCTAssertEqual(analysis.findings[0].cycle?.steps.count, n)
    }
}
