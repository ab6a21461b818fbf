// Dominator tree and retained sizes: what would be freed if a block went away.

/// The dominator tree of a `ReferenceGraph` from a virtual root, and retained sizes.
///
/// The virtual root references every root edge's target. Leaked (unreachable) blocks get a
/// place in the tree too: in every *source* component of the unreachable subgraph (a strongly
/// connected component no other unreachable block references: since nothing reachable
/// references an unreachable block, no block at all) the lowest-numbered node is a *leak
/// leader*, and the virtual root references it as well, after the real roots. So a leaked
/// ring `a ⇄ b` has leader `a`, `a` dominates `b`, and `a`'s retained size covers both.
/// References from leaked blocks to live ones are ignored (a leak does not keep anything
/// alive), so the tree's reachable part is exactly the dominator tree from the real roots and
/// leaked retained sizes count leaked blocks only; the leaked part hangs under the leaders.
///
/// Algorithm: Semi-NCA (Georgiadis; the semidominators of Lengauer–Tarjan with path
/// compression, then immediate dominators as nearest common ancestors in the DFS tree), with an
/// iterative DFS and iterative compression. O(e log n) worst case, near-linear in practice;
/// about 40 bytes per node of working memory while building, 25 bytes per node kept.
public struct DominatorTree: Sendable {
    static let virtualRoot = UInt32.max

    private struct ForestLink {
        var ancestor: UInt32
        var label: UInt32
    }

    /// Per node: its immediate dominator, or `UInt32.max` for the virtual root.
    public let idom: [UInt32]
    /// Per node: the bytes freed if it went away, i.e. the sum of `sizes` over its dominator subtree.
    public let retainedSize: [UInt64]
    /// Per node: whether a root edge reaches it (false: leaked).
    public let isReachable: [Bool]
    /// The leak leaders (see the type's documentation), in increasing order.
    public let leakLeaders: [Int]
    /// Bytes reachable from the real roots (the virtual root's retained size without leaks).
    public let reachableBytes: UInt64
    /// Bytes not reachable from any root.
    public let leakedBytes: UInt64
    /// Entry and exit times of a DFS of the dominator tree: `a` dominates `b` iff
    /// `entry[a] <= entry[b] && exit[b] <= exit[a]`.
    let entry: [UInt32]
    let exit: [UInt32]
    /// Nodes in dominator-tree preorder (every node after its immediate dominator).
    public let preorder: [UInt32]

    /// The immediate dominator of `node`; nil when only the virtual root dominates it (a node
    /// referenced by a root, reachable along disjoint paths, or a leak leader).
    public func immediateDominator(of node: Int) -> Int? {
        idom[node] == Self.virtualRoot ? nil : Int(idom[node])
    }

    /// Whether every path from the (virtual) root to `node` passes through `dominator`
    /// (a node dominates itself). O(1).
    public func dominates(_ dominator: Int, _ node: Int) -> Bool {
        entry[dominator] <= entry[node] && exit[node] <= exit[dominator]
    }

    /// Position of `node` in the dominator tree's DFS (subtrees are contiguous ranges of it).
    public func preorderIndex(of node: Int) -> Int { Int(entry[node]) }

    /// Computes the tree. `components` are `graph`'s (computed when not given) and only serve to
    /// find the leak leaders.
    public init(graph: ReferenceGraph, components: StronglyConnectedComponents? = nil) {
        let n = graph.nodeCount
        let none = UInt32.max
        // DFS numbering: number 0 is the virtual root; pre[v] is node v's number.
        var pre = [UInt32](repeating: none, count: n)
        var vertex: [UInt32] = [none] // by number: the node (none for the virtual root)
        var parent: [UInt32] = [0] // by number: DFS-tree parent's number
        vertex.reserveCapacity(n + 1)
        parent.reserveCapacity(n + 1)
        var fromVirtualRoot = [Bool](repeating: false, count: n)
        var cursor = [UInt32](repeating: 0, count: n)
        var callStack: [UInt32] = []

        func dfs(from s: Int) {
            fromVirtualRoot[s] = true
            guard pre[s] == none else { return }
            pre[s] = UInt32(vertex.count)
            vertex.append(UInt32(s))
            parent.append(0)
            cursor[s] = graph.edgeStart[s]
            callStack.append(UInt32(s))
            graph.edgeStart.withUnsafeBufferPointer { edgeStart in
            graph.edgeTargets.withUnsafeBufferPointer { edgeTargets in
            pre.withUnsafeMutableBufferPointer { pre in
            cursor.withUnsafeMutableBufferPointer { cursor in
                while let top = callStack.last {
                    let v = Int(top)
                    if cursor[v] < edgeStart[v + 1] {
                        let w = Int(edgeTargets[Int(cursor[v])])
                        cursor[v] += 1
                        if pre[w] == none {
                            pre[w] = UInt32(vertex.count)
                            vertex.append(UInt32(w))
                            parent.append(pre[v])
                            cursor[w] = edgeStart[w]
                            callStack.append(UInt32(w))
                        }
                    } else {
                        callStack.removeLast()
                    }
                }
            }}}}
        }
        for r in graph.roots { dfs(from: Int(r.to)) }
        let reachableCount = vertex.count - 1
        var isReachable = [Bool](repeating: false, count: n)
        for i in 1 ..< vertex.count { isReachable[Int(vertex[i])] = true }

        // Leak leaders: lowest node of each component of unreachable nodes with no reference
        // from outside the component.
        var leaders: [Int] = []
        if reachableCount < n {
            let scc = components ?? StronglyConnectedComponents(graph: graph)
            var seen = [Bool](repeating: false, count: scc.componentCount)
            for v in 0 ..< n where !isReachable[v] {
                let c = Int(scc.componentOf[v])
                if seen[c] { continue }
                seen[c] = true
                var isSource = true
                outer: for m in scc.members(of: c) {
                    for p in graph.predecessors(of: Int(m)) where scc.componentOf[Int(p)] != UInt32(c) {
                        isSource = false
                        break outer
                    }
                }
                // Members are sorted, and v is the first member met in node order.
                if isSource { leaders.append(v) }
            }
            for l in leaders { dfs(from: l) }
        }
        cursor = []
        let count = vertex.count // numbers 0 ..< count; count == n + 1 once leaders are added
        precondition(count == n + 1, "every node is under a root or a leak leader")

        // Semidominators, in reverse DFS order. Per number, `ancestor` (the compressed forest
        // link, `none` until the number is processed) and `label` (the smallest semidominator on
        // its compressed path) share one 8-byte slot: the loop is bound by cache misses.
        var semi = [UInt32](0 ..< UInt32(count))
        var forest = (0 ..< UInt32(count)).map { ForestLink(ancestor: none, label: $0) }
        var idomNumber = [UInt32](repeating: 0, count: count)
        var chain: [UInt32] = []
        semi.withUnsafeMutableBufferPointer { semi in
        forest.withUnsafeMutableBufferPointer { forest in
        idomNumber.withUnsafeMutableBufferPointer { idomNumber in
        parent.withUnsafeBufferPointer { parent in
        vertex.withUnsafeBufferPointer { vertex in
        pre.withUnsafeBufferPointer { pre in
        graph.predecessorStart.withUnsafeBufferPointer { predStart in
        graph.predecessorSources.withUnsafeBufferPointer { preds in
            var w = count - 1
            while w >= 1 {
                let node = Int(vertex[w])
                var s = semi[w]
                if fromVirtualRoot[node] { s = 0 }
                let nodeIsReachable = isReachable[node]
                for k in Int(predStart[node]) ..< Int(predStart[node + 1]) {
                    // A leaked block referencing a live one does not keep it alive: the live
                    // part's tree must be the one from the real roots alone.
                    // (Reachable nodes are exactly the numbers 1 ... reachableCount.)
                    let v = Int(pre[Int(preds[k])])
                    if nodeIsReachable, v > reachableCount { continue }
                    let candidate: UInt32
                    if v <= w {
                        candidate = UInt32(v) // not processed yet: its own number
                    } else {
                        // Iterative path compression towards the first unprocessed ancestor.
                        var u = v
                        while forest[Int(forest[u].ancestor)].ancestor != none {
                            chain.append(UInt32(u))
                            u = Int(forest[u].ancestor)
                        }
                        while let x = chain.popLast() {
                            let a = forest[Int(forest[Int(x)].ancestor)]
                            if a.label < forest[Int(x)].label { forest[Int(x)].label = a.label }
                            forest[Int(x)].ancestor = a.ancestor
                        }
                        candidate = forest[v].label
                    }
                    if candidate < s { s = candidate }
                }
                semi[w] = s
                forest[w] = ForestLink(ancestor: parent[w], label: s)
                w -= 1
            }
            // Immediate dominators: the nearest DFS-tree ancestor at or above the semidominator.
            for w in 1 ..< count {
                var d = parent[w]
                while d > semi[w] { d = idomNumber[Int(d)] }
                idomNumber[w] = d
            }
        }}}}}}}}
        semi = []
        forest = []

        // Retained sizes: children before parents (reverse DFS order: an idom has a smaller number).
        var retainedByNumber = [UInt64](repeating: 0, count: count)
        for w in stride(from: count - 1, through: 1, by: -1) {
            retainedByNumber[w] &+= graph.sizes[Int(vertex[w])]
            retainedByNumber[Int(idomNumber[w])] &+= retainedByNumber[w]
        }
        var idom = [UInt32](repeating: Self.virtualRoot, count: n)
        var retained = [UInt64](repeating: 0, count: n)
        var reachableBytes: UInt64 = 0, leakedBytes: UInt64 = 0
        for w in 1 ..< count {
            let v = Int(vertex[w])
            let d = idomNumber[w]
            idom[v] = d == 0 ? Self.virtualRoot : vertex[Int(d)]
            retained[v] = retainedByNumber[w]
            if isReachable[v] { reachableBytes &+= graph.sizes[v] } else { leakedBytes &+= graph.sizes[v] }
        }
        retainedByNumber = []

        // Dominator-tree DFS (children in a CSR by number), for O(1) `dominates` and a preorder.
        var childStart = [UInt32](repeating: 0, count: count + 1)
        for w in 1 ..< count { childStart[Int(idomNumber[w]) + 1] += 1 }
        for i in 0 ..< count { childStart[i + 1] += childStart[i] }
        var fill = childStart
        var children = [UInt32](repeating: 0, count: count)
        for w in 1 ..< count {
            let d = Int(idomNumber[w])
            children[Int(fill[d])] = UInt32(w)
            fill[d] += 1
        }
        fill = []
        var entry = [UInt32](repeating: 0, count: n)
        var exit = [UInt32](repeating: 0, count: n)
        var order: [UInt32] = []
        order.reserveCapacity(n)
        var treeCursor = [UInt32](childStart.dropLast())
        var stack: [UInt32] = [0]
        var clock: UInt32 = 0
        while let top = stack.last {
            let w = Int(top)
            if treeCursor[w] < childStart[w + 1] {
                let c = Int(children[Int(treeCursor[w])])
                treeCursor[w] += 1
                let v = Int(vertex[c])
                entry[v] = clock
                clock += 1
                order.append(UInt32(v))
                stack.append(UInt32(c))
            } else {
                stack.removeLast()
                if w != 0 { exit[Int(vertex[w])] = clock }
            }
        }
        self.idom = idom
        self.retainedSize = retained
        self.isReachable = isReachable
        self.leakLeaders = leaders
        self.reachableBytes = reachableBytes
        self.leakedBytes = leakedBytes
        self.entry = entry
        self.exit = exit
        self.preorder = order
    }
}
