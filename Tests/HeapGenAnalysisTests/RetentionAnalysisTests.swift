// "Why is it alive" on hand-made heaps: representatives, paths, cycles, heldBy and retained bytes.

import HeapGenAnalysis
import XCTest

final class RetentionAnalysisTests: XCTestCase {
    /// Registry global → session 1 → session 2 → session 3 (a list), each session → its buffer.
    func testRegistryListOfSessionsOwningBuffers() throws {
        let registry = 0
        let sessions = [1, 2, 3], buffers = [4, 5, 6]
        var edges: [(Int, Int)] = [(registry, 1), (1, 2), (2, 3)]
        var offsets = [8, 0, 0]
        for (s, b) in zip(sessions, buffers) { edges.append((s, b)); offsets.append(16) }
        let sizes: [UInt64] = [100, 48, 48, 48, 1024, 1024, 1024]
        let g = makeGraph(7, edges, offsets: offsets, roots: [registry], sizes: sizes)
        let a = RetentionAnalysis(graph: g, findingNodes: [sessions, buffers])
        let s = a.findings[0], b = a.findings[1]

        XCTAssertEqual(s.representative, 1)
        XCTAssertEqual(s.path, [.root(rootID: 100, to: 0), .reference(from: 0, offset: 8, to: 1)])
        XCTAssertNil(s.heldBy)
        XCTAssertEqual(s.rootCause, 0)
        XCTAssertEqual(s.retainedBytes, 3 * 48 + 3 * 1024)
        XCTAssertFalse(s.isLeaked)
        XCTAssertNil(s.cycle)

        XCTAssertEqual(b.representative, 4)
        XCTAssertEqual(b.path, [.root(rootID: 100, to: 0), .reference(from: 0, offset: 8, to: 1), .reference(from: 1, offset: 16, to: 4)])
        XCTAssertEqual(b.heldBy, 0)
        XCTAssertEqual(b.heldReason, .dominated)
        XCTAssertEqual(b.rootCause, 0)
        XCTAssertNil(b.retainedBytes)
        XCTAssertEqual(a.rootCauses, [0])

        // The deepest buffer's path goes through the list.
        XCTAssertEqual(nodes(a.paths.path(to: 6)), [0, 1, 2, 3, 6])
    }

    /// A leaked pair referencing each other: one cycle, one clique, both bytes retained.
    func testLeakedPairReferencingEachOther() throws {
        let g = makeGraph(3, [(1, 2), (2, 1)], offsets: [16, 24], roots: [0], sizes: [10, 100, 1000])
        let one = RetentionAnalysis(graph: g, findingNodes: [[1, 2]])
        let f = one.findings[0]
        XCTAssertEqual(f.representative, 1)
        XCTAssertNil(f.path)
        XCTAssertTrue(f.isLeaked)
        XCTAssertEqual(f.retainedBytes, 1100)
        let cycle = try XCTUnwrap(f.cycle)
        XCTAssertEqual(cycle.steps.map(\.from), [1, 2])
        XCTAssertEqual(cycle.steps.map(\.offset), [16, 24])
        XCTAssertEqual(cycle.findingOfStep, [0, 0])
        XCTAssertEqual(cycle.findings, [0])

        // The two objects in two findings: one root cause, the one with the oldest object.
        let two = RetentionAnalysis(graph: g, findingNodes: [[2], [1]])
        XCTAssertEqual(two.findings[1].heldBy, nil)
        XCTAssertEqual(two.findings[1].retainedBytes, 1100)
        XCTAssertEqual(two.findings[0].heldBy, 1)
        XCTAssertEqual(two.findings[0].heldReason, .sameCycle)
        XCTAssertNil(two.findings[0].retainedBytes)
        XCTAssertEqual(two.findings[0].cycle?.findings, [0, 1])
        XCTAssertEqual(two.findings[0].cycle?.findingOfStep, [0, 1])
        XCTAssertEqual(two.rootCauses, [1])

        // With ages, "oldest" follows them rather than node numbers.
        let aged = RetentionAnalysis(graph: g, findingNodes: [[2], [1]], age: [0, 9, 5])
        XCTAssertNil(aged.findings[0].heldBy)
        XCTAssertEqual(aged.findings[1].heldBy, 0)
    }

    /// A leaked finding whose sites also hold a reachable block (two allocations in one
    /// function of a program without line numbers: one lost, one kept by a global) is
    /// the lost one alone, so its "held by" and retained bytes agree with the verdict; an
    /// abandoned finding with the same blocks is represented by the reachable one.
    func testLeakedFindingIsRepresentedByItsUnreachableBlock() {
        // Root 0 → kept (1); lost (2) → its string (3).
        let g = makeGraph(4, [(0, 1), (2, 3)], roots: [0], sizes: [8, 80, 344, 17])
        let leaked = RetentionAnalysis(graph: g, findingNodes: [[1, 2]], leaked: [0])
        XCTAssertEqual(leaked.findings[0].representative, 2)
        XCTAssertNil(leaked.findings[0].path)
        XCTAssertTrue(leaked.findings[0].isLeaked)
        XCTAssertEqual(leaked.findings[0].retainedBytes, 344 + 17, "the lost array and its string, not the kept block")

        let abandoned = RetentionAnalysis(graph: g, findingNodes: [[1, 2]])
        XCTAssertEqual(abandoned.findings[0].representative, 1)
        XCTAssertEqual(nodes(abandoned.findings[0].path), [0, 1])
        XCTAssertFalse(abandoned.findings[0].isLeaked)
        XCTAssertEqual(abandoned.findings[0].retainedBytes, 80 + 344 + 17)

        // A leaked finding with no unreachable block left in the graph keeps the reachable one.
        let none = RetentionAnalysis(graph: g, findingNodes: [[1]], leaked: [0])
        XCTAssertEqual(none.findings[0].representative, 1)
    }

    /// A node reachable from two findings along disjoint paths is held by neither.
    func testNodeReachableFromTwoFindingsIsTopLevel() {
        // Roots → a, b; a → x, b → x; x → y.
        let (a, b, x, y) = (0, 1, 2, 3)
        let g = makeGraph(4, [(a, x), (b, x), (x, y)], roots: [a, b])
        let r = RetentionAnalysis(graph: g, findingNodes: [[a], [b], [x, y]])
        XCTAssertNil(r.findings[2].heldBy)
        XCTAssertEqual(r.findings[2].rootCause, 2)
        XCTAssertEqual(r.findings[2].retainedBytes, 32)
        XCTAssertEqual(r.findings[0].retainedBytes, 16)
        XCTAssertEqual(r.rootCauses, [0, 1, 2])
        // Only from a: held by a's finding.
        let h = makeGraph(4, [(a, x), (x, y)], roots: [a, b])
        let s = RetentionAnalysis(graph: h, findingNodes: [[a], [b], [x, y]])
        XCTAssertEqual(s.findings[2].heldBy, 0)
        XCTAssertEqual(s.findings[0].retainedBytes, 48)
    }

    /// One finding's objects held by two different findings: top-level.
    func testFindingSplitBetweenTwoHoldersIsTopLevel() {
        // a → x1, b → x2; x1, x2 in one finding.
        let g = makeGraph(4, [(0, 2), (1, 3)], roots: [0, 1])
        let r = RetentionAnalysis(graph: g, findingNodes: [[0], [1], [2, 3]])
        XCTAssertNil(r.findings[2].heldBy)
        XCTAssertEqual(r.findings[2].retainedBytes, 32)
    }

    /// Held through objects of no finding and through its own objects: the first node of another
    /// finding up the dominator chain counts.
    func testHolderFoundThroughUnclassifiedAndOwnNodes() {
        // root → h (finding 0) → u (no finding) → x1 (finding 1) → x2 (finding 1) → z (no finding)
        let g = makeGraph(5, [(0, 1), (1, 2), (2, 3), (3, 4)], roots: [0])
        let r = RetentionAnalysis(graph: g, findingNodes: [[0], [2, 3]])
        XCTAssertEqual(r.findings[1].heldBy, 0)
        XCTAssertEqual(r.findings[0].retainedBytes, 80)
        // The oldest reachable object represents a finding, even if an older one is leaked.
        let l = makeGraph(6, [(0, 1), (1, 2), (2, 3), (3, 4)], roots: [0])
        let s = RetentionAnalysis(graph: l, findingNodes: [[0], [5, 2, 3]])
        XCTAssertEqual(s.findings[1].representative, 2)
        XCTAssertFalse(s.findings[1].isLeaked)
        // One leaked object (5, its own leader) means not every object is held by finding 0.
        XCTAssertNil(s.findings[1].heldBy)
    }

    /// A cycle group held by another finding: the group's top is held, the rest by the top.
    func testCycleGroupHeldByAnotherFinding() {
        // root → owner (finding 0) → p ⇄ q (findings 1 and 2; p older).
        let g = makeGraph(3, [(0, 1), (1, 2), (2, 1)], roots: [0])
        let r = RetentionAnalysis(graph: g, findingNodes: [[0], [2], [1]])
        XCTAssertEqual(r.findings[2].heldBy, 0)
        XCTAssertEqual(r.findings[2].heldReason, .dominated)
        XCTAssertEqual(r.findings[1].heldBy, 2)
        XCTAssertEqual(r.findings[1].heldReason, .sameCycle)
        XCTAssertEqual(r.findings[1].rootCause, 0)
        XCTAssertEqual(r.rootCauses, [0])
        XCTAssertEqual(r.findings[0].retainedBytes, 48)
        XCTAssertEqual(r.findings[2].cycle?.steps.map(\.from), [1, 2])
    }
}
