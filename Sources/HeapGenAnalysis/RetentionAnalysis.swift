// "Why is it alive": per finding, the path that keeps its oldest object alive, the cycle it
// sits in, which other finding holds it, and what freeing it would give back.

/// Why each finding's objects are alive, from the reference graph: a retention path, a cycle,
/// the finding that holds it, and retained bytes for root causes.
///
/// Rules, per finding `A` (its nodes given oldest first):
/// - **Representative**: A's oldest node reachable from a root; if none is, A's oldest node.
/// - **Path**: `RetentionPaths.path(to:)` of the representative (nil when leaked).
/// - **Cycle**: when the representative is on a reference cycle, the shortest cycle through it
///   (`StronglyConnectedComponents.shortestCycle`), with the finding of each node on it.
/// - **Groups**: findings with nodes in one strongly connected component that holds a cycle
///   are one root cause (transitively). The group's *top* is the finding owning the group's
///   oldest node (age, then lower node index, then lower finding index); the other members
///   are `heldBy` the top (`HeldReason.sameCycle`).
/// - **Dominance**: for every node `x` of group `G`, its *holder* is the first node met walking
///   up x's dominator chain (`DominatorTree.idom`, x excluded) that belongs to a finding
///   outside `G`; nodes of findings in `G` and nodes of no finding are walked through. If every
///   node of G has a holder and all holders belong to one group `H`, G's top is `heldBy` the
///   finding owning the holders when that is one finding, else H's top
///   (`HeldReason.dominated`). No holder (the chain reaches the virtual root first), or holders
///   in several groups, leaves G top-level: e.g. a node reachable from two findings along
///   disjoint paths is held by neither. This relation has no cycles (the group owning the
///   shallowest node of any would-be cycle could not be dominated by the others).
/// - **Root cause**: following `heldBy` to a finding held by nothing.
/// - **Retained bytes** (root causes only): the sizes of the union of the dominator subtrees of
///   every node of the root cause's group, each node counted once. Findings held through
///   domination are inside those subtrees; held groups of other root causes are not added.
///
/// Cost, once the three graph analyses exist: O(nodes) for the holders (one pass in dominator
/// preorder), O(k log k) for the retained bytes of k finding nodes, and one bidirectional
/// search per representative on a cycle (`ShortestCycleFinder`).
public struct RetentionAnalysis: Sendable {
    /// Why a finding is held by another.
    public enum HeldReason: Hashable, Sendable {
        /// It shares a reference cycle (strongly connected component) with the holder's group.
        case sameCycle
        /// Every one of its objects is dominated by objects of the holder.
        case dominated
    }

    /// The cycle through a finding's representative.
    public struct Cycle: Hashable, Sendable {
        /// The references of the cycle, from the representative back to it.
        public var steps: [StronglyConnectedComponents.CycleStep]
        /// Per step, the finding of the node the step leaves (`steps[i].from`), if any.
        public var findingOfStep: [Int?]
        /// Findings with a node on the cycle, in increasing order.
        public var findings: [Int]
    }

    /// The answer for one finding.
    public struct FindingRetention: Hashable, Sendable {
        /// The finding's index.
        public var finding: Int
        /// Its oldest reachable node, else its oldest node; nil when it has no node.
        public var representative: Int?
        /// Root-to-representative path; nil when the representative is unreachable (leaked).
        public var path: [RetentionPaths.Step]?
        /// The representative's cycle, when it is on one.
        public var cycle: Cycle?
        /// The finding that holds this one (see the type's rules).
        public var heldBy: Int?
        /// Why `heldBy` holds it.
        public var heldReason: HeldReason?
        /// The top-level finding at the end of the `heldBy` chain (itself when top-level).
        public var rootCause: Int
        /// For root causes: bytes freed if the group's objects went away; nil otherwise.
        public var retainedBytes: UInt64?
        /// True when the representative is unreachable from every root.
        public var isLeaked: Bool
    }

    /// Per finding, in the input order.
    public let findings: [FindingRetention]
    /// The analyses this was computed from, for callers who want more than the summary.
    public let paths: RetentionPaths
    public let components: StronglyConnectedComponents
    public let dominators: DominatorTree

    /// Findings that are their own root cause, in input order.
    public var rootCauses: [Int] { findings.filter { $0.rootCause == $0.finding }.map(\.finding) }

    /// Analyses `graph` for `findingNodes` (per finding, its nodes oldest first; a node belongs
    /// to at most one finding). `age` ranks nodes across findings (smaller is older); by default
    /// the node index. A finding in `leaked` (the exit scan found some of its blocks
    /// unreachable) keeps only its unreachable nodes when it has any: its sites may also hold
    /// blocks something still references (two allocations in one function, grouped for want
    /// of line numbers), and a path to one of those, or their bytes, would contradict the
    /// verdict.
    public init(graph: ReferenceGraph, findingNodes: [[Int]], age: [UInt64]? = nil, leaked: Set<Int> = []) {
        let paths = RetentionPaths(graph: graph)
        let components = StronglyConnectedComponents(graph: graph)
        let dominators = DominatorTree(graph: graph, components: components)
        self.init(graph: graph, findingNodes: findingNodes, age: age, leaked: leaked, paths: paths,
                  components: components, dominators: dominators)
    }

    /// As above, with the graph's analyses already computed.
    public init(
        graph: ReferenceGraph, findingNodes: [[Int]], age: [UInt64]? = nil, leaked: Set<Int> = [],
        paths: RetentionPaths, components: StronglyConnectedComponents, dominators: DominatorTree
    ) {
        let findingNodes = leaked.isEmpty ? findingNodes : findingNodes.enumerated().map { i, nodes in
            guard leaked.contains(i) else { return nodes }
            let lost = nodes.filter { !paths.isReachable($0) }
            return lost.isEmpty ? nodes : lost
        }
        let n = graph.nodeCount
        let f = findingNodes.count
        let none = UInt32.max
        precondition(age == nil || age!.count == n, "age must have one entry per node")
        func older(_ a: Int, _ b: Int) -> Bool {
            let x = age?[a] ?? UInt64(a), y = age?[b] ?? UInt64(b)
            return x != y ? x < y : a < b
        }
        var findingOf = [UInt32](repeating: none, count: n)
        for (i, nodes) in findingNodes.enumerated() {
            for v in nodes {
                precondition(findingOf[v] == none || findingOf[v] == UInt32(i), "node \(v) in two findings")
                findingOf[v] = UInt32(i)
            }
        }

        // Groups: union of findings sharing a cyclic component.
        var unionParent = Array(0 ..< f)
        func find(_ x: Int) -> Int {
            var r = x
            while unionParent[r] != r { r = unionParent[r] }
            var y = x
            while unionParent[y] != r { let next = unionParent[y]; unionParent[y] = r; y = next }
            return r
        }
        var findingInComponent: [UInt32: Int] = [:]
        for (i, nodes) in findingNodes.enumerated() {
            for v in nodes {
                let c = components.componentOf[v]
                guard components.isCyclic[Int(c)] else { continue }
                if let other = findingInComponent[c] {
                    let a = find(other), b = find(i)
                    if a != b { unionParent[max(a, b)] = min(a, b) }
                } else {
                    findingInComponent[c] = i
                }
            }
        }
        let groupOfFinding = (0 ..< f).map { find($0) }
        // Top of each group: the finding owning its oldest node.
        var oldestOfGroup = [Int?](repeating: nil, count: f)
        var topOfGroup = [Int](repeating: -1, count: f)
        for (i, nodes) in findingNodes.enumerated() {
            let g = groupOfFinding[i]
            if topOfGroup[g] < 0 { topOfGroup[g] = i }
            for v in nodes where oldestOfGroup[g].map({ older(v, $0) }) ?? true {
                oldestOfGroup[g] = v
                topOfGroup[g] = i
            }
        }

        // Holders, in dominator-tree preorder: nearestFinding[w] is the nearest strict dominator
        // of w in any finding; holder[w] (for finding nodes) the nearest in another group.
        var nearestFinding = [UInt32](repeating: none, count: n)
        var holder = [UInt32](repeating: none, count: n)
        for x in dominators.preorder {
            let w = Int(x)
            let d = dominators.idom[w]
            guard d != DominatorTree.virtualRoot else { continue }
            let dn = Int(d)
            nearestFinding[w] = findingOf[dn] != none ? d : nearestFinding[dn]
            guard findingOf[w] != none else { continue }
            let a = nearestFinding[w]
            guard a != none else { continue }
            let g = groupOfFinding[Int(findingOf[w])]
            holder[w] = groupOfFinding[Int(findingOf[Int(a)])] != g ? a : holder[Int(a)]
        }
        nearestFinding = []

        // Group-level dominance.
        var members = [[Int]](repeating: [], count: f)
        for i in 0 ..< f { members[groupOfFinding[i]].append(i) }
        var heldBy = [Int?](repeating: nil, count: f)
        var reason = [HeldReason?](repeating: nil, count: f)
        for g in 0 ..< f where !members[g].isEmpty {
            let top = topOfGroup[g]
            for i in members[g] where i != top {
                heldBy[i] = top
                reason[i] = .sameCycle
            }
            var holderGroup: Int? = nil
            var holderFinding: Int? = nil
            var mixedFindings = false
            var held = true
            var anyNode = false
            scan: for i in members[g] {
                for v in findingNodes[i] {
                    anyNode = true
                    let h = holder[v]
                    if h == none { held = false; break scan }
                    let hf = Int(findingOf[Int(h)])
                    let hg = groupOfFinding[hf]
                    if let known = holderGroup, known != hg { held = false; break scan }
                    holderGroup = hg
                    if let known = holderFinding, known != hf { mixedFindings = true }
                    holderFinding = hf
                }
            }
            if held, anyNode, let hg = holderGroup, let hf = holderFinding {
                heldBy[top] = mixedFindings ? topOfGroup[hg] : hf
                reason[top] = .dominated
            }
        }

        // Root causes (the relation is acyclic; the step bound only guards against a bug looping).
        var rootCause = Array(0 ..< f)
        for i in 0 ..< f {
            var r = i, steps = 0
            while let h = heldBy[r], steps <= f { r = h; steps += 1 }
            rootCause[i] = r
        }

        // Retained bytes of each root cause: its group's nodes by dominator preorder; a node
        // inside the subtree of one kept before it is already counted.
        var retainedOfGroup = [UInt64?](repeating: nil, count: f)
        for g in 0 ..< f where !members[g].isEmpty && rootCause[topOfGroup[g]] == topOfGroup[g] {
            var nodes = members[g].flatMap { findingNodes[$0] }
            nodes.sort { dominators.preorderIndex(of: $0) < dominators.preorderIndex(of: $1) }
            var total: UInt64 = 0
            var kept: Int? = nil
            for v in nodes {
                if let k = kept, dominators.dominates(k, v) { continue }
                kept = v
                total &+= dominators.retainedSize[v]
            }
            retainedOfGroup[g] = total
        }

        let cycleFinder = ShortestCycleFinder(graph: graph, components: components)
        var results: [FindingRetention] = []
        results.reserveCapacity(f)
        for (i, nodes) in findingNodes.enumerated() {
            let representative = nodes.first(where: { paths.isReachable($0) }) ?? nodes.first
            var cycle: Cycle? = nil
            if let r = representative, components.isOnCycle(r) {
                let steps = cycleFinder.cycle(through: r)
                let owners = steps.map { findingOf[$0.from] == none ? nil : Int(findingOf[$0.from]) }
                cycle = Cycle(steps: steps, findingOfStep: owners, findings: Array(Set(owners.compactMap { $0 })).sorted())
            }
            let isRoot = rootCause[i] == i
            results.append(FindingRetention(
                finding: i,
                representative: representative,
                path: representative.flatMap { paths.path(to: $0) },
                cycle: cycle,
                heldBy: heldBy[i],
                heldReason: reason[i],
                rootCause: rootCause[i],
                retainedBytes: isRoot ? retainedOfGroup[groupOfFinding[i]] : nil,
                isLeaked: representative.map { !paths.isReachable($0) } ?? false
            ))
        }
        self.findings = results
        self.paths = paths
        self.components = components
        self.dominators = dominators
    }
}
