// Reference cycles (FBRetainCycleDetector): strongly connected components of the reference
// graph, and the shortest cycle through a block within its component.

/// The strongly connected components of a `ReferenceGraph`, by Tarjan's algorithm made
/// iterative (an explicit DFS stack and a per-node edge cursor: graphs of millions of nodes
/// would overflow the call stack). O(nodes + edges) time.
///
/// Component ids are in Tarjan's completion order, which is a reverse topological order of the
/// condensation: a component's references only go to components with a lower or equal id.
public struct StronglyConnectedComponents: Sendable {
    /// One reference on a cycle: the pointer at byte `offset` in `from` pointing at `to`.
    public struct CycleStep: Hashable, Sendable {
        public var from: Int
        public var offset: Int
        public var to: Int
        public init(from: Int, offset: Int, to: Int) {
            self.from = from
            self.offset = offset
            self.to = to
        }
    }

    /// Component id of each node.
    public let componentOf: [UInt32]
    /// `componentCount + 1` entries: component `c`'s members are
    /// `members[memberStart[c] ..< memberStart[c + 1]]`, in increasing node order.
    public let memberStart: [UInt32]
    /// Nodes grouped by component.
    public let memberNodes: [UInt32]
    /// Per component: true when it holds a cycle (more than one node, or one node referencing itself).
    public let isCyclic: [Bool]

    /// Number of components.
    public var componentCount: Int { isCyclic.count }

    /// The nodes of component `component`, in increasing order.
    public func members(of component: Int) -> ArraySlice<UInt32> {
        memberNodes[Int(memberStart[component]) ..< Int(memberStart[component + 1])]
    }

    /// Whether `node` sits on a reference cycle.
    public func isOnCycle(_ node: Int) -> Bool { isCyclic[Int(componentOf[node])] }

    /// Computes the components of `graph`.
    public init(graph: ReferenceGraph) {
        let n = graph.nodeCount
        let none = UInt32.max
        var index = [UInt32](repeating: none, count: n)
        var low = [UInt32](repeating: 0, count: n)
        var component = [UInt32](repeating: none, count: n)
        var cursor = [UInt32](repeating: 0, count: n)
        var tarjanStack: [UInt32] = []
        var callStack: [UInt32] = []
        var componentCount: UInt32 = 0
        var selfLoop: [Bool] = []
        index.withUnsafeMutableBufferPointer { index in
        low.withUnsafeMutableBufferPointer { low in
        component.withUnsafeMutableBufferPointer { component in
        cursor.withUnsafeMutableBufferPointer { cursor in
        graph.edgeStart.withUnsafeBufferPointer { edgeStart in
        graph.edgeTargets.withUnsafeBufferPointer { edgeTargets in
            var counter: UInt32 = 0
            for s in 0 ..< n where index[s] == none {
                index[s] = counter; low[s] = counter; counter += 1
                cursor[s] = edgeStart[s]
                tarjanStack.append(UInt32(s))
                callStack.append(UInt32(s))
                while let top = callStack.last {
                    let v = Int(top)
                    if cursor[v] < edgeStart[v + 1] {
                        let w = Int(edgeTargets[Int(cursor[v])])
                        cursor[v] += 1
                        if index[w] == none {
                            index[w] = counter; low[w] = counter; counter += 1
                            cursor[w] = edgeStart[w]
                            tarjanStack.append(UInt32(w))
                            callStack.append(UInt32(w))
                        } else if component[w] == none, index[w] < low[v] {
                            // w is still on Tarjan's stack (visited, no component yet).
                            low[v] = index[w]
                        }
                        continue
                    }
                    callStack.removeLast()
                    if let p = callStack.last, low[v] < low[Int(p)] { low[Int(p)] = low[v] }
                    if low[v] == index[v] {
                        var hasSelfLoop = false
                        var size = 0
                        while true {
                            let x = tarjanStack.removeLast()
                            component[Int(x)] = componentCount
                            size += 1
                            if x == top { break }
                        }
                        if size == 1 {
                            for e in Int(edgeStart[v]) ..< Int(edgeStart[v + 1]) where Int(edgeTargets[e]) == v {
                                hasSelfLoop = true
                            }
                        }
                        selfLoop.append(size > 1 || hasSelfLoop)
                        componentCount += 1
                    }
                }
            }
        }}}}}}
        index = []
        low = []
        cursor = []
        let c = Int(componentCount)
        var start = [UInt32](repeating: 0, count: c + 1)
        for v in 0 ..< n { start[Int(component[v]) + 1] += 1 }
        for i in 0 ..< c { start[i + 1] += start[i] }
        var fill = [UInt32](start)
        var members = [UInt32](repeating: 0, count: n)
        for v in 0 ..< n {
            let k = Int(component[v])
            members[Int(fill[k])] = UInt32(v)
            fill[k] += 1
        }
        self.componentOf = component
        self.memberStart = start
        self.memberNodes = members
        self.isCyclic = selfLoop
    }

    /// The shortest reference cycle through `node`, starting and ending at `node`; empty when
    /// `node` is on no cycle. See `ShortestCycleFinder` (this allocates one; use one finder for
    /// many queries).
    public func shortestCycle(through node: Int, in graph: ReferenceGraph) -> [CycleStep] {
        ShortestCycleFinder(graph: graph, components: self).cycle(through: node)
    }
}

/// Finds shortest reference cycles through given nodes, reusing its scratch memory (six arrays
/// of `nodeCount` 32-bit words, allocated on the first query) across queries.
///
/// Algorithm: bidirectional breadth-first search restricted to the node's strongly connected
/// component (every cycle through a node stays in it): forwards from `node` along references,
/// backwards from `node` along predecessors, one whole layer at a time on the side with the
/// smaller frontier. The first time a node is discovered by both sides gives a cycle of length
/// `forward + backward` distance; the search stops once the best cycle found is no longer than
/// `forwardRadius + backwardRadius + 1`, the shortest an undiscovered cycle could be. In a
/// large component this visits about the square root of what a one-sided search visits.
/// Among equally short cycles the result is deterministic but unspecified.
public final class ShortestCycleFinder {
    let graph: ReferenceGraph
    let components: StronglyConnectedComponents
    // Per node: the query stamp under which the side discovered it, its distance, and its
    // neighbour towards `node` (forward: previous node; backward: next node).
    var forwardStamp: [UInt32] = []
    var forwardDistance: [UInt32] = []
    var forwardParent: [UInt32] = []
    var backwardStamp: [UInt32] = []
    var backwardDistance: [UInt32] = []
    var backwardNext: [UInt32] = []
    var stamp: UInt32 = 0

    /// A finder over `graph`, whose components are `components`.
    public init(graph: ReferenceGraph, components: StronglyConnectedComponents) {
        self.graph = graph
        self.components = components
    }

    /// The shortest reference cycle through `node`, starting and ending at `node`; empty when
    /// `node` is on no cycle.
    public func cycle(through node: Int) -> [StronglyConnectedComponents.CycleStep] {
        let c = components.componentOf[node]
        guard components.isCyclic[Int(c)] else { return [] }
        let n = graph.nodeCount
        if forwardStamp.count != n {
            forwardStamp = [UInt32](repeating: 0, count: n)
            forwardDistance = forwardStamp
            forwardParent = forwardStamp
            backwardStamp = forwardStamp
            backwardDistance = forwardStamp
            backwardNext = forwardStamp
            stamp = 0
        }
        if stamp == UInt32.max {
            // Stamps wrapped: clear once every 4 billion queries.
            for i in 0 ..< n { forwardStamp[i] = 0; backwardStamp[i] = 0 }
            stamp = 0
        }
        stamp += 1
        let q = stamp
        var best = UInt32.max
        var meet = -1

        forwardStamp[node] = q
        forwardDistance[node] = 0
        var forwardFrontier: [UInt32] = [UInt32(node)]
        var forwardRadius: UInt32 = 0
        // The backward side starts from a copy of `node` (distance 0, never stored): its
        // predecessors are at distance 1, and `node` itself may be found again at distance ≥ 1.
        var backwardFrontier: [UInt32] = []
        for p in graph.predecessors(of: node) where components.componentOf[Int(p)] == c {
            let x = Int(p)
            backwardStamp[x] = q
            backwardDistance[x] = 1
            backwardNext[x] = UInt32(node)
            backwardFrontier.append(p)
            if forwardStamp[x] == q, forwardDistance[x] + 1 < best { best = forwardDistance[x] + 1; meet = x }
        }
        var backwardRadius: UInt32 = 1
        var next: [UInt32] = []
        while best > forwardRadius + backwardRadius + 1, !(forwardFrontier.isEmpty && backwardFrontier.isEmpty) {
            let goForward = !forwardFrontier.isEmpty && (backwardFrontier.isEmpty || forwardFrontier.count <= backwardFrontier.count)
            next.removeAll(keepingCapacity: true)
            if goForward {
                let d = forwardRadius + 1
                for u in forwardFrontier {
                    for e in graph.edges(from: Int(u)) {
                        let w = Int(graph.edgeTargets[e])
                        if forwardStamp[w] == q || components.componentOf[w] != c { continue }
                        forwardStamp[w] = q
                        forwardDistance[w] = d
                        forwardParent[w] = u
                        next.append(UInt32(w))
                        if backwardStamp[w] == q, d + backwardDistance[w] < best { best = d + backwardDistance[w]; meet = w }
                    }
                }
                forwardRadius = d
                swap(&forwardFrontier, &next)
            } else {
                let d = backwardRadius + 1
                for x in backwardFrontier {
                    for p in graph.predecessors(of: Int(x)) {
                        let w = Int(p)
                        if backwardStamp[w] == q || components.componentOf[w] != c { continue }
                        backwardStamp[w] = q
                        backwardDistance[w] = d
                        backwardNext[w] = x
                        next.append(p)
                        if forwardStamp[w] == q, forwardDistance[w] + d < best { best = forwardDistance[w] + d; meet = w }
                    }
                }
                backwardRadius = d
                swap(&backwardFrontier, &next)
            }
        }
        guard meet >= 0 else { return [] } // not reached: the component holds a cycle

        // node → … → meet (forward parents, reversed), then meet → … → node (backward links).
        var nodes: [Int] = []
        var v = meet
        while v != node { nodes.append(v); v = Int(forwardParent[v]) }
        nodes.append(node)
        nodes.reverse()
        v = meet
        repeat { v = Int(backwardNext[v]); nodes.append(v) } while v != node
        var steps: [StronglyConnectedComponents.CycleStep] = []
        steps.reserveCapacity(nodes.count - 1)
        for i in 0 ..< nodes.count - 1 {
            let e = graph.edgeIndex(from: nodes[i], to: nodes[i + 1])!
            steps.append(.init(from: nodes[i], offset: Int(graph.edgeOffsets[e]), to: nodes[i + 1]))
        }
        return steps
    }
}
