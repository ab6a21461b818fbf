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

    /// The shortest reference cycle through `node` (breadth-first search restricted to its
    /// component), starting and ending at `node`; empty when `node` is on no cycle. Among
    /// equally short cycles, the one found first following edges in target order.
    /// O(size of the component's edges); memory proportional to the nodes visited.
    public func shortestCycle(through node: Int, in graph: ReferenceGraph) -> [CycleStep] {
        let c = componentOf[node]
        guard isCyclic[Int(c)] else { return [] }
        // Parent edge of each visited node (the search is local, so a dictionary, not n slots).
        var parentEdge: [UInt32: (from: UInt32, edge: UInt32)] = [:]
        var queue: [UInt32] = [UInt32(node)]
        var head = 0
        while head < queue.count {
            let u = Int(queue[head])
            head += 1
            for e in graph.edges(from: u) {
                let t = graph.edgeTargets[e]
                if componentOf[Int(t)] != c { continue }
                if Int(t) == node {
                    // Closing edge found: walk back to `node`.
                    var steps = [CycleStep(from: u, offset: Int(graph.edgeOffsets[e]), to: node)]
                    var v = UInt32(u)
                    while Int(v) != node, let p = parentEdge[v] {
                        steps.append(CycleStep(from: Int(p.from), offset: Int(graph.edgeOffsets[Int(p.edge)]), to: Int(v)))
                        v = p.from
                    }
                    return steps.reversed()
                }
                if parentEdge[t] == nil {
                    parentEdge[t] = (UInt32(u), UInt32(e))
                    queue.append(t)
                }
            }
        }
        return [] // unreachable for a cyclic component
    }
}
