// The heap's strong reference graph, as captured from the target: blocks, references
// between them (with the byte offset of the pointer in its source block) and root references.
// Flat arrays only (compressed sparse rows), so graphs of millions of blocks stay tens of MB.

/// A heap's strong reference graph: nodes `0..<nodeCount` are heap blocks, edges are
/// pointers stored inside a block (at a byte offset) to another block, root edges are
/// pointers from outside the heap (globals, stacks, registers, identified by an opaque id).
///
/// Edges are stored in compressed sparse rows: the references out of node `v` are the edge
/// indices `edgeStart[v] ..< edgeStart[v + 1]`, sorted by target; each edge index `e` has
/// `edgeTargets[e]` and `edgeOffsets[e]`. Predecessors are kept the same way (sorted by source)
/// because the dominator computation and the leak-root choice walk edges backwards.
///
/// Node numbering is the caller's; the analyses break ties by the lower node index, so numbering
/// blocks in allocation order (oldest first) makes "lowest" mean "oldest".
public struct ReferenceGraph: Sendable {
    /// A reference from block `from`, stored at byte `offset` inside it, to block `to`.
    public struct Edge: Hashable, Sendable {
        public var from: UInt32
        public var to: UInt32
        public var offset: UInt32
        public init(from: UInt32, to: UInt32, offset: UInt32) {
            self.from = from
            self.to = to
            self.offset = offset
        }
    }

    /// A reference from outside the heap (root `rootID`, opaque here) to block `to`.
    public struct RootEdge: Hashable, Sendable {
        public var rootID: Int
        public var to: UInt32
        /// The root is a library's (a global of libc, the Swift runtime...): a path from it counts
        /// as passing one library block, so a program's own global is preferred even when the
        /// library's stale pointer is a shorter way in.
        public var isLibrary: Bool
        public init(rootID: Int, to: UInt32, isLibrary: Bool = false) {
            self.rootID = rootID
            self.to = to
            self.isLibrary = isLibrary
        }
    }

    /// Number of nodes (heap blocks).
    public let nodeCount: Int
    /// Size in bytes of each node.
    public let sizes: [UInt64]
    /// True for blocks of runtime or library internals rather than the program's own objects
    /// (the caller decides); retention paths avoid them when they can.
    public let isLibrary: [Bool]
    /// `nodeCount + 1` entries: node `v`'s edges are `edgeStart[v] ..< edgeStart[v + 1]`.
    public let edgeStart: [UInt32]
    /// Target node of each edge.
    public let edgeTargets: [UInt32]
    /// Byte offset of each edge's pointer within its source block (the lowest, when one block
    /// points at the same target from several offsets).
    public let edgeOffsets: [UInt32]
    /// `nodeCount + 1` entries: node `v`'s predecessors are `predecessorSources[predecessorStart[v] ..< predecessorStart[v + 1]]`.
    public let predecessorStart: [UInt32]
    /// Source node of each incoming edge, grouped by target and sorted by source within a target.
    public let predecessorSources: [UInt32]
    /// Root edges in the caller's order (which breaks ties between equally short paths).
    public let roots: [RootEdge]

    /// Number of distinct `from → to` edges.
    public var edgeCount: Int { edgeTargets.count }

    /// Edge indices of the references out of `node`.
    @inlinable
    public func edges(from node: Int) -> Range<Int> {
        Int(edgeStart[node]) ..< Int(edgeStart[node + 1])
    }

    /// Nodes with a reference to `node` (each once).
    @inlinable
    public func predecessors(of node: Int) -> ArraySlice<UInt32> {
        predecessorSources[Int(predecessorStart[node]) ..< Int(predecessorStart[node + 1])]
    }

    /// Builds the graph from an unsorted edge list in O(nodes + edges) time: two stable
    /// counting sorts (by target, then by source) put identical `from → to` pairs next to each
    /// other, so duplicates collapse in one pass (keeping the lowest offset), and the result does
    /// not depend on the order of `edges`.
    ///
    /// - Precondition: `isLibrary.count == sizes.count`, every node index `< sizes.count`, fewer
    ///   than 2³² − 2 nodes and edges.
    public init(sizes: [UInt64], isLibrary: [Bool], edges: [Edge], roots: [RootEdge]) {
        let n = sizes.count
        precondition(isLibrary.count == n, "isLibrary must have one flag per node")
        precondition(n < Int(UInt32.max) - 2 && edges.count < Int(UInt32.max) - 2, "graph too large for 32-bit indices")
        for r in roots { precondition(Int(r.to) < n, "root edge to node \(r.to) out of range") }
        self.nodeCount = n
        self.sizes = sizes
        self.isLibrary = isLibrary
        self.roots = roots
        let m = edges.count

        var start = [UInt32](repeating: 0, count: n + 1)
        var targets: [UInt32] = []
        var offsets: [UInt32] = []
        edges.withUnsafeBufferPointer { edges in
            // Pass 1: edge indices by target (stable counting sort).
            var cursor = [UInt32](repeating: 0, count: n + 1)
            var byTarget = [UInt32](repeating: 0, count: m)
            cursor.withUnsafeMutableBufferPointer { cursor in
                for e in edges {
                    precondition(Int(e.from) < n && Int(e.to) < n, "edge \(e.from) → \(e.to) out of range")
                    cursor[Int(e.to) + 1] &+= 1
                }
                for v in 0 ..< n { cursor[v + 1] &+= cursor[v] }
                byTarget.withUnsafeMutableBufferPointer { byTarget in
                    for i in 0 ..< m {
                        let t = Int(edges[i].to)
                        byTarget[Int(cursor[t])] = UInt32(i)
                        cursor[t] &+= 1
                    }
                }
            }
            // Pass 2: stable by source, so each source's edges end up sorted by target.
            var order = [UInt32](repeating: 0, count: m)
            cursor.withUnsafeMutableBufferPointer { cursor in
                for v in 0 ... n { cursor[v] = 0 }
                for e in edges { cursor[Int(e.from) + 1] &+= 1 }
                for v in 0 ..< n { cursor[v + 1] &+= cursor[v] }
                order.withUnsafeMutableBufferPointer { order in
                    byTarget.withUnsafeBufferPointer { byTarget in
                        for i in byTarget {
                            let f = Int(edges[Int(i)].from)
                            order[Int(cursor[f])] = i
                            cursor[f] &+= 1
                        }
                    }
                }
            }
            byTarget = []
            // Pass 3: collapse runs of one `from → to`, keeping the lowest offset.
            targets.reserveCapacity(m)
            offsets.reserveCapacity(m)
            start.withUnsafeMutableBufferPointer { start in
                order.withUnsafeBufferPointer { order in
                    var k = 0
                    for v in 0 ..< n {
                        start[v] = UInt32(targets.count)
                        let rowStart = targets.count
                        while k < m, Int(edges[Int(order[k])].from) == v {
                            let e = edges[Int(order[k])]
                            if targets.count > rowStart, targets[targets.count - 1] == e.to {
                                if e.offset < offsets[offsets.count - 1] { offsets[offsets.count - 1] = e.offset }
                            } else {
                                targets.append(e.to)
                                offsets.append(e.offset)
                            }
                            k += 1
                        }
                    }
                    start[n] = UInt32(targets.count)
                }
            }
        }
        self.edgeStart = start
        self.edgeTargets = targets
        self.edgeOffsets = offsets

        // Predecessors: counting sort of the deduplicated edges by target; scanning sources in
        // increasing order keeps each node's predecessors sorted.
        var predStart = [UInt32](repeating: 0, count: n + 1)
        var preds = [UInt32](repeating: 0, count: targets.count)
        predStart.withUnsafeMutableBufferPointer { predStart in
            targets.withUnsafeBufferPointer { targets in
                for t in targets { predStart[Int(t) + 1] &+= 1 }
                for v in 0 ..< n { predStart[v + 1] &+= predStart[v] }
                var cursor = [UInt32](predStart)
                cursor.withUnsafeMutableBufferPointer { cursor in
                    preds.withUnsafeMutableBufferPointer { preds in
                        start.withUnsafeBufferPointer { start in
                            for v in 0 ..< n {
                                for e in Int(start[v]) ..< Int(start[v + 1]) {
                                    let t = Int(targets[e])
                                    preds[Int(cursor[t])] = UInt32(v)
                                    cursor[t] &+= 1
                                }
                            }
                        }
                    }
                }
            }
        }
        self.predecessorStart = predStart
        self.predecessorSources = preds
    }

    /// Index of the edge `from → to`, if there is one (binary search: rows are sorted by target).
    public func edgeIndex(from: Int, to: Int) -> Int? {
        var lo = Int(edgeStart[from]), hi = Int(edgeStart[from + 1])
        let t = UInt32(to)
        while lo < hi {
            let mid = (lo + hi) / 2
            if edgeTargets[mid] < t { lo = mid + 1 } else { hi = mid }
        }
        return lo < Int(edgeStart[from + 1]) && edgeTargets[lo] == t ? lo : nil
    }
}
