// Every stack definition of a trace, kept as a prefix tree of frames.

/// The frames of every stack a trace defines, stored as a prefix tree so that stacks
/// share their outer frames.
///
/// A trace defines each stack in full, but stacks of one program differ mostly in their
/// innermost frames (a test binary's 60-frame stacks differ in their last few). Each
/// distinct (parent node, return address) edge is one node, outermost frame at the root,
/// found again through an open-addressing table of node numbers: about 20 bytes a
/// distinct edge instead of 8 bytes a frame plus an array per stack. On the trace of
/// swift-argument-parser's tests (1.5 M stacks of up to 64 frames) `heapgen report`'s
/// peak went from 2.6 GB to 0.64 GB with this and ``StackIdentity``'s hashing.
///
/// Reading a stack walks its chain: O(depth), one array read a frame. Only definitions
/// are added; the table serves only ``define(_:frames:)``.
struct StackFrameStore: Sendable {
    /// Node `i + 1` (0: none, the root's parent): its return address and its parent node,
    /// in chunks of 2^16 nodes: growing never copies them (a doubling array would hold
    /// the old and the new buffer at once, half again the nodes' memory at its peak).
    private var pcs: [[UInt64]] = []
    private var parents: [[UInt32]] = []
    private var nodes = 0
    private static let chunkBits = 16
    private static let chunkMask = (1 << chunkBits) - 1
    /// Open addressing by hash of (parent, pc): node numbers, 0 = empty. At most 3/4 full
    /// (linear probing stays short there, and the table is 5 to 11 bytes a node).
    private var table = [UInt32](repeating: 0, count: 1024)
    /// Stack id → innermost node (0: a stack with no frames), its depth, and the index of
    /// the record that defined it (one dictionary for both: 1.5 M entries each).
    private var index: [UInt32: (node: UInt32, depth: UInt32, record: UInt64)] = [:]
    /// The last defined stack, outermost first, and its nodes: a stack defined right after
    /// one it shares outer frames with skips their lookups.
    private var lastFrames: [UInt64] = []
    private var lastNodes: [UInt32] = []

    /// Stacks defined.
    var count: Int { index.count }

    /// Distinct edges (nodes) stored.
    var nodeCount: Int { nodes }

    private func pc(_ node: UInt32) -> UInt64 {
        let i = Int(node - 1)
        return pcs[i >> Self.chunkBits][i & Self.chunkMask]
    }

    private func parent(_ node: UInt32) -> UInt32 {
        let i = Int(node - 1)
        return parents[i >> Self.chunkBits][i & Self.chunkMask]
    }

    /// Defines (or redefines) stack `id` with `frames`, innermost first, at record `record`.
    mutating func define(_ id: UInt32, frames: [UInt64], record: UInt64 = 0) {
        let n = frames.count
        var shared = 0
        let limit = min(n, lastFrames.count)
        while shared < limit && lastFrames[shared] == frames[n - 1 - shared] { shared += 1 }
        lastFrames.removeSubrange(shared...)
        lastNodes.removeSubrange(shared...)
        var parent: UInt32 = shared == 0 ? 0 : lastNodes[shared - 1]
        for depth in shared..<n {
            let pc = frames[n - 1 - depth]
            parent = node(parent: parent, pc: pc)
            lastFrames.append(pc)
            lastNodes.append(parent)
        }
        index[id] = (parent, UInt32(n), record)
    }

    /// The node of edge (parent, pc), made if new.
    private mutating func node(parent: UInt32, pc: UInt64) -> UInt32 {
        let mask = table.count - 1
        var slot = Self.hash(parent, pc) & mask
        while true {
            let candidate = table[slot]
            if candidate == 0 { break }
            if self.pc(candidate) == pc && self.parent(candidate) == parent { return candidate }
            slot = (slot + 1) & mask
        }
        // Node numbers are UInt32: 4 G distinct edges would need 80 GB here first.
        if nodes & Self.chunkMask == 0 {
            pcs.append([]); pcs[pcs.count - 1].reserveCapacity(Self.chunkMask + 1)
            parents.append([]); parents[parents.count - 1].reserveCapacity(Self.chunkMask + 1)
        }
        pcs[pcs.count - 1].append(pc)
        parents[parents.count - 1].append(parent)
        nodes += 1
        let made = UInt32(nodes)
        table[slot] = made
        if nodes * 4 > table.count * 3 { grow() }
        return made
    }

    private mutating func grow() {
        var bigger = [UInt32](repeating: 0, count: table.count * 2)
        let mask = bigger.count - 1
        for made in 1...UInt32(nodes) {
            var slot = Self.hash(parent(made), pc(made)) & mask
            while bigger[slot] != 0 { slot = (slot + 1) & mask }
            bigger[slot] = made
        }
        table = bigger
    }

    private static func hash(_ parent: UInt32, _ pc: UInt64) -> Int {
        var z = pc ^ (UInt64(parent) &* 0x9e37_79b9_7f4a_7c15)
        z = (z ^ (z >> 33)) &* 0xff51_afd7_ed55_8ccd
        return Int(truncatingIfNeeded: z ^ (z >> 29))
    }

    /// The frames of stack `id`, innermost first; nil if it was never defined.
    subscript(id: UInt32) -> [UInt64]? {
        guard let entry = index[id] else { return nil }
        var frames: [UInt64] = []
        frames.reserveCapacity(Int(entry.depth))
        var at = entry.node
        while at != 0 {
            frames.append(pc(at))
            at = parent(at)
        }
        return frames
    }

    /// The index of the record that defined stack `id`; nil if it was never defined.
    func record(of id: UInt32) -> UInt64? {
        index[id]?.record
    }

    /// The depth of stack `id` (its frame count); nil if it was never defined.
    func depth(of id: UInt32) -> Int? {
        index[id].map { Int($0.depth) }
    }
}
