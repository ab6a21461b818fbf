// Shortest retention paths (LeakCanary's leak trace): from the roots to every reachable block,
// going through as few library blocks as possible, then as few references as possible.

/// For every node reachable from a root edge, one strong reference path from a root to it that
/// minimises first the number of library nodes on it (`ReferenceGraph.isLibrary`, the node
/// itself included), then its length (root edge included): a path through the program's own
/// objects explains a leak better than a shorter one through runtime internals.
///
/// Algorithm: lexicographic breadth-first search in phases. Phase `k` settles the nodes whose
/// best path has `k` library nodes, in order of length: it merges two queues that are each
/// sorted by length (the library nodes reached in phase `k − 1`, in the order they were reached,
/// and the ordinary BFS queue of phase `k`), and a reference to an unsettled library node goes
/// to the next phase's queue instead. This is Dial's algorithm for the weight
/// `1 + penalty · isLibrary(target)` with `penalty > n`, without the penalty's huge bucket range:
/// O(nodes + edges) time. Ties go to the earlier root edge and the lower target index.
public struct RetentionPaths: Sendable {
    /// One reference on a retention path.
    public enum Step: Hashable, Sendable {
        /// The root edge `rootID` (`ReferenceGraph.RootEdge.rootID`) pointing at `to`.
        case root(rootID: Int, to: Int)
        /// The pointer at byte `offset` in block `from` pointing at `to`.
        case reference(from: Int, offset: Int, to: Int)

        /// The node this step arrives at.
        public var to: Int {
            switch self {
            case .root(_, let to), .reference(_, _, let to): return to
            }
        }
    }

    static let unreached = UInt32.max
    static let fromRoot = UInt32.max - 1

    /// Per node: the previous node on its path, `fromRoot`, or `unreached`.
    let parentNode: [UInt32]
    /// Per node: the edge index (or, after `fromRoot`, the index in `graph.roots`) it is reached by.
    let parentLink: [UInt32]
    /// Per node: library nodes on its path (meaningless when unreachable).
    public let libraryCount: [UInt32]
    /// Per node: references on its path, the root edge included (meaningless when unreachable).
    public let length: [UInt32]
    let roots: [ReferenceGraph.RootEdge]
    let edgeOffsets: [UInt32]

    private struct Seed {
        var node: UInt32
        var parent: UInt32
        var link: UInt32
        var length: UInt32
    }

    /// Computes the paths to every node reachable from `graph.roots`.
    public init(graph: ReferenceGraph) {
        let n = graph.nodeCount
        var parentNode = [UInt32](repeating: Self.unreached, count: n)
        var parentLink = [UInt32](repeating: 0, count: n)
        var libraryCount = [UInt32](repeating: 0, count: n)
        var length = [UInt32](repeating: 0, count: n)

        // Root targets, at length 1, in root order (the earlier root edge wins a tie): ordinary
        // ones are settled before anything else (so no longer path claims them first) and start
        // phase 0's queue; library ones are phase 1's first seeds.
        var seeds: [Seed] = []
        var nextSeeds: [Seed] = []
        var queue: [UInt32] = []
        queue.reserveCapacity(n)
        for (i, r) in graph.roots.enumerated() {
            let v = Int(r.to)
            // A library root counts as a library block on the path (once, with its target).
            if graph.isLibrary[v] || r.isLibrary {
                nextSeeds.append(Seed(node: r.to, parent: Self.fromRoot, link: UInt32(i), length: 1))
            } else if parentNode[v] == Self.unreached {
                parentNode[v] = Self.fromRoot
                parentLink[v] = UInt32(i)
                length[v] = 1
                queue.append(r.to)
            }
        }
        var phase: UInt32 = 0
        parentNode.withUnsafeMutableBufferPointer { parentNode in
        parentLink.withUnsafeMutableBufferPointer { parentLink in
        libraryCount.withUnsafeMutableBufferPointer { libraryCount in
        length.withUnsafeMutableBufferPointer { length in
        graph.edgeStart.withUnsafeBufferPointer { edgeStart in
        graph.edgeTargets.withUnsafeBufferPointer { edgeTargets in
        graph.isLibrary.withUnsafeBufferPointer { isLibrary in
            while !seeds.isEmpty || !queue.isEmpty || !nextSeeds.isEmpty {
                var si = 0, qh = 0
                while true {
                    let u: Int
                    // Seeds first on equal length: they were reached before anything this
                    // phase's queue holds at that length could be.
                    if si < seeds.count, qh == queue.count || seeds[si].length <= length[Int(queue[qh])] {
                        let s = seeds[si]
                        si += 1
                        let v = Int(s.node)
                        if parentNode[v] != Self.unreached { continue }
                        parentNode[v] = s.parent
                        parentLink[v] = s.link
                        libraryCount[v] = phase
                        length[v] = s.length
                        u = v
                    } else if qh < queue.count {
                        u = Int(queue[qh])
                        qh += 1
                    } else {
                        break
                    }
                    let next = length[u] &+ 1
                    for e in Int(edgeStart[u]) ..< Int(edgeStart[u + 1]) {
                        let t = Int(edgeTargets[e])
                        if parentNode[t] != Self.unreached { continue }
                        if isLibrary[t] {
                            nextSeeds.append(Seed(node: UInt32(t), parent: UInt32(u), link: UInt32(e), length: next))
                        } else {
                            parentNode[t] = UInt32(u)
                            parentLink[t] = UInt32(e)
                            libraryCount[t] = phase
                            length[t] = next
                            queue.append(UInt32(t))
                        }
                    }
                }
                swap(&seeds, &nextSeeds)
                nextSeeds.removeAll(keepingCapacity: true)
                queue.removeAll(keepingCapacity: true)
                phase += 1
            }
        }}}}}}}
        self.parentNode = parentNode
        self.parentLink = parentLink
        self.libraryCount = libraryCount
        self.length = length
        self.roots = graph.roots
        self.edgeOffsets = graph.edgeOffsets
    }

    /// Whether `node` is reachable from a root edge.
    public func isReachable(_ node: Int) -> Bool { parentNode[node] != Self.unreached }

    /// The path from a root to `node`, root edge first; nil when `node` is unreachable.
    public func path(to node: Int) -> [Step]? {
        guard isReachable(node) else { return nil }
        var steps: [Step] = []
        steps.reserveCapacity(Int(length[node]))
        var v = node
        while true {
            let p = parentNode[v], link = Int(parentLink[v])
            if p == Self.fromRoot {
                steps.append(.root(rootID: roots[link].rootID, to: v))
                break
            }
            steps.append(.reference(from: Int(p), offset: Int(edgeOffsets[link]), to: v))
            v = Int(p)
        }
        return steps.reversed()
    }
}
