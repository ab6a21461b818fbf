// The reference graph's algorithms on hand-made graphs with known answers: CSR build,
// retention paths, strongly connected components and cycles, dominators and retained sizes.

import HeapGenAnalysis
import XCTest

/// A graph from `(from, to)` or `(from, to, offset)` triples; offsets default to 8 × the edge's position.
func makeGraph(
    _ n: Int, _ edges: [(Int, Int)], offsets: [Int]? = nil, roots: [Int], library: Set<Int> = [], sizes: [UInt64]? = nil
) -> ReferenceGraph {
    let list = edges.enumerated().map { i, e in
        ReferenceGraph.Edge(from: UInt32(e.0), to: UInt32(e.1), offset: UInt32(offsets?[i] ?? 8 * i))
    }
    return ReferenceGraph(
        sizes: sizes ?? [UInt64](repeating: 16, count: n),
        isLibrary: (0 ..< n).map { library.contains($0) },
        edges: list,
        roots: roots.enumerated().map { ReferenceGraph.RootEdge(rootID: 100 + $0.offset, to: UInt32($0.element)) }
    )
}

/// The nodes a path goes through, root target first.
func nodes(_ path: [RetentionPaths.Step]?) -> [Int]? { path?.map(\.to) }

final class ReferenceGraphTests: XCTestCase {
    func testBuildSortsRowsAndKeepsTheLowestOffsetOfDuplicates() {
        let g = makeGraph(3, [(0, 2), (0, 1), (0, 2), (2, 0), (0, 1)], offsets: [40, 24, 8, 0, 32], roots: [0])
        XCTAssertEqual(g.edgeCount, 3)
        XCTAssertEqual(g.edges(from: 0).map { g.edgeTargets[$0] }, [1, 2])
        XCTAssertEqual(g.edges(from: 0).map { g.edgeOffsets[$0] }, [24, 8])
        XCTAssertEqual(g.edges(from: 1).count, 0)
        XCTAssertEqual(g.edges(from: 2).map { g.edgeTargets[$0] }, [0])
        XCTAssertEqual(Array(g.predecessors(of: 0)), [2])
        XCTAssertEqual(Array(g.predecessors(of: 2)), [0])
        XCTAssertEqual(g.edgeIndex(from: 0, to: 2).map { g.edgeOffsets[$0] }, 8)
        XCTAssertNil(g.edgeIndex(from: 1, to: 0))
        // The same edges in another order give the same graph.
        let h = makeGraph(3, [(0, 1), (2, 0), (0, 2), (0, 1), (0, 2)], offsets: [32, 0, 8, 24, 40], roots: [0])
        XCTAssertEqual(h.edgeTargets, g.edgeTargets)
        XCTAssertEqual(h.edgeOffsets, g.edgeOffsets)
        XCTAssertEqual(h.edgeStart, g.edgeStart)
    }

    func testEmptyGraph() {
        let g = makeGraph(0, [], roots: [])
        XCTAssertEqual(g.nodeCount, 0)
        XCTAssertEqual(g.edgeCount, 0)
        let p = RetentionPaths(graph: g)
        XCTAssertTrue(p.length.isEmpty)
        let s = StronglyConnectedComponents(graph: g)
        XCTAssertEqual(s.componentCount, 0)
        let d = DominatorTree(graph: g)
        XCTAssertTrue(d.idom.isEmpty)
        XCTAssertEqual(d.reachableBytes, 0)
        XCTAssertEqual(d.leakedBytes, 0)
        let a = RetentionAnalysis(graph: g, findingNodes: [])
        XCTAssertTrue(a.findings.isEmpty)
        // A finding with no node is answered, not trapped on.
        let b = RetentionAnalysis(graph: g, findingNodes: [[]])
        XCTAssertNil(b.findings[0].representative)
        XCTAssertEqual(b.findings[0].rootCause, 0)
        XCTAssertEqual(b.findings[0].retainedBytes, 0)
    }

    func testOwnCodePathIsPreferredToALibraryShortcut() {
        // Root 100 → L (library) → T: two references. Root 101 → A → B → C → T: four, own code.
        let (l, a, b, c, t) = (0, 1, 2, 3, 4)
        let g = makeGraph(5, [(l, t), (a, b), (b, c), (c, t)], roots: [l, a], library: [l])
        let p = RetentionPaths(graph: g)
        XCTAssertEqual(nodes(p.path(to: t)), [a, b, c, t])
        XCTAssertEqual(p.libraryCount[t], 0)
        XCTAssertEqual(p.length[t], 4)
        XCTAssertEqual(p.path(to: t)?.first, .root(rootID: 101, to: a))
        XCTAssertEqual(p.path(to: t)?.last, .reference(from: c, offset: 24, to: t))
        // Without the own path, the library one is the answer.
        let h = makeGraph(5, [(l, t), (a, b), (b, c)], roots: [l, a], library: [l])
        let q = RetentionPaths(graph: h)
        XCTAssertEqual(nodes(q.path(to: t)), [l, t])
        XCTAssertEqual(q.libraryCount[t], 1)
    }

    /// A library's global (libc's stdout holding a stale pointer, say) is a shorter way in than
    /// the program's own global, but the program's own root is preferred, as its blocks are.
    func testOwnRootIsPreferredToALibraryRoot() {
        // Library root → T directly; own root → A → T.
        let (a, t) = (0, 1)
        let roots = [ReferenceGraph.RootEdge(rootID: 7, to: UInt32(t), isLibrary: true),
                     ReferenceGraph.RootEdge(rootID: 8, to: UInt32(a))]
        let g = ReferenceGraph(sizes: [16, 16], isLibrary: [false, false],
                               edges: [ReferenceGraph.Edge(from: UInt32(a), to: UInt32(t), offset: 8)], roots: roots)
        let p = RetentionPaths(graph: g)
        XCTAssertEqual(nodes(p.path(to: t)), [a, t])
        XCTAssertEqual(p.path(to: t)?.first, .root(rootID: 8, to: a))
        XCTAssertEqual(p.libraryCount[t], 0)
        // With no own way in, the library root is the answer, counted as one library step.
        let h = ReferenceGraph(sizes: [16, 16], isLibrary: [false, false], edges: [], roots: roots)
        let q = RetentionPaths(graph: h)
        XCTAssertEqual(q.path(to: t)?.first, .root(rootID: 7, to: t))
        XCTAssertEqual(q.libraryCount[t], 1)
    }

    func testFewerLibraryNodesBeatsShorterThenShortestWins() {
        // Two routes through one library node each (lengths 3 and 5) and one through two
        // library nodes (length 2 after the root): the shorter one-library route wins.
        // 0 root → 1(lib) → 2(lib) → 9; 0 → 3(lib) → 4 → 9; 0 → 5 → 6 → 7(lib) → 8 → 9.
        let g = makeGraph(10, [(0, 1), (1, 2), (2, 9), (0, 3), (3, 4), (4, 9), (0, 5), (5, 6), (6, 7), (7, 8), (8, 9)],
                          roots: [0], library: [1, 2, 3, 7])
        let p = RetentionPaths(graph: g)
        XCTAssertEqual(nodes(p.path(to: 9)), [0, 3, 4, 9])
        XCTAssertEqual(p.libraryCount[9], 1)
        // A library node reached both ways keeps its cheapest path.
        XCTAssertEqual(nodes(p.path(to: 7)), [0, 5, 6, 7])
    }

    func testUnreachableNodeHasNoPath() {
        let g = makeGraph(3, [(1, 2)], roots: [0])
        let p = RetentionPaths(graph: g)
        XCTAssertTrue(p.isReachable(0))
        XCTAssertFalse(p.isReachable(1))
        XCTAssertNil(p.path(to: 2))
        XCTAssertEqual(p.path(to: 0), [.root(rootID: 100, to: 0)])
    }

    func testDiamondIsDominatedByTheFork() {
        let g = makeGraph(5, [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)], roots: [0], sizes: [1, 2, 4, 8, 16])
        let d = DominatorTree(graph: g)
        XCTAssertNil(d.immediateDominator(of: 0))
        XCTAssertEqual(d.immediateDominator(of: 1), 0)
        XCTAssertEqual(d.immediateDominator(of: 2), 0)
        XCTAssertEqual(d.immediateDominator(of: 3), 0)
        XCTAssertEqual(d.immediateDominator(of: 4), 3)
        XCTAssertFalse(d.dominates(1, 3))
        XCTAssertFalse(d.dominates(2, 3))
        XCTAssertTrue(d.dominates(0, 4))
        XCTAssertTrue(d.dominates(3, 3))
        XCTAssertEqual(d.retainedSize, [31, 2, 4, 24, 16])
        XCTAssertEqual(d.reachableBytes, 31)
        XCTAssertEqual(d.leakLeaders, [])
    }

    func testLeakedPairIsOneCliqueUnderItsLeader() {
        // 0 is a root; 1 ⇄ 2 are referenced by nothing else.
        let g = makeGraph(3, [(1, 2), (2, 1)], offsets: [16, 24], roots: [0], sizes: [10, 100, 1000])
        let s = StronglyConnectedComponents(graph: g)
        XCTAssertEqual(s.componentOf[1], s.componentOf[2])
        XCTAssertNotEqual(s.componentOf[0], s.componentOf[1])
        XCTAssertTrue(s.isOnCycle(1))
        XCTAssertFalse(s.isOnCycle(0))
        XCTAssertEqual(Array(s.members(of: Int(s.componentOf[2]))), [1, 2])
        XCTAssertEqual(s.shortestCycle(through: 1, in: g), [.init(from: 1, offset: 16, to: 2), .init(from: 2, offset: 24, to: 1)])
        XCTAssertEqual(s.shortestCycle(through: 2, in: g), [.init(from: 2, offset: 24, to: 1), .init(from: 1, offset: 16, to: 2)])
        XCTAssertEqual(s.shortestCycle(through: 0, in: g), [])
        let d = DominatorTree(graph: g, components: s)
        XCTAssertEqual(d.isReachable, [true, false, false])
        XCTAssertEqual(d.leakLeaders, [1])
        XCTAssertNil(d.immediateDominator(of: 1))
        XCTAssertEqual(d.immediateDominator(of: 2), 1)
        XCTAssertEqual(d.retainedSize[1], 1100)
        XCTAssertEqual(d.leakedBytes, 1100)
        XCTAssertEqual(d.reachableBytes, 10)
    }

    func testLeakedStructureBelowACycleHasOneLeader() {
        // 0 ⇄ 1 → 2 → 3, all unreachable, with 4 → 3 another source (a lone leaked node).
        let g = makeGraph(5, [(0, 1), (1, 0), (1, 2), (2, 3), (4, 3)], roots: [])
        let d = DominatorTree(graph: g)
        XCTAssertEqual(d.leakLeaders, [0, 4])
        XCTAssertEqual(d.immediateDominator(of: 2), 1)
        XCTAssertNil(d.immediateDominator(of: 3)) // reached from both leaders
        XCTAssertEqual(d.retainedSize[0], 48)
    }

    func testSelfLoops() {
        let g = makeGraph(3, [(0, 0), (0, 1), (1, 1), (2, 2)], offsets: [0, 8, 40, 0], roots: [0])
        let s = StronglyConnectedComponents(graph: g)
        XCTAssertEqual(s.componentCount, 3)
        XCTAssertTrue(s.isOnCycle(0))
        XCTAssertTrue(s.isOnCycle(1))
        XCTAssertEqual(s.shortestCycle(through: 1, in: g), [.init(from: 1, offset: 40, to: 1)])
        let d = DominatorTree(graph: g, components: s)
        XCTAssertEqual(d.immediateDominator(of: 1), 0)
        XCTAssertEqual(d.leakLeaders, [2]) // a leaked node referencing itself is its own clique
        XCTAssertEqual(d.retainedSize, [32, 16, 16])
        let p = RetentionPaths(graph: g)
        XCTAssertEqual(nodes(p.path(to: 1)), [0, 1])
    }

    func testZeroSizeNodes() {
        let g = makeGraph(4, [(0, 1), (1, 2), (3, 1)], roots: [0], sizes: [0, 0, 5, 0])
        let d = DominatorTree(graph: g)
        // 3 is leaked: its reference to 1 keeps nothing alive and is left out of the tree.
        XCTAssertEqual(d.retainedSize, [5, 5, 5, 0])
        XCTAssertEqual(d.leakLeaders, [3])
        XCTAssertEqual(d.immediateDominator(of: 1), 0)
        XCTAssertEqual(d.reachableBytes, 5)
        XCTAssertEqual(d.leakedBytes, 0)
        let a = RetentionAnalysis(graph: g, findingNodes: [[3], [1]])
        XCTAssertEqual(a.findings[0].retainedBytes, 0)
        XCTAssertTrue(a.findings[0].isLeaked)
        XCTAssertEqual(a.findings[1].retainedBytes, 5)
    }
}
