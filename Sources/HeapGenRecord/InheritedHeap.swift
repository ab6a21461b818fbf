// Fork snapshots: the live heap a forked child inherits, taken from the parent's tracker
// at its HG_K_FORK record and written at the start of the child's trace.

import CHeapGenCollector
import HeapGenTrace

/// The live heap of a traced process image at one of its forks: what the child
/// really starts with (issue: a daemon frees blocks it inherited; without them
/// its trace calls those frees unknown and understates its heap).
///
/// The parent's shim publishes `HG_K_FORK` in its fork handler; the drainer takes
/// this snapshot when it consumes that record, and the child's hello (whose header
/// names the fork id) claims it. The child's trace then starts with the parent's
/// modules, the stacks and types of the inherited blocks under ids of their own
/// (``firstID`` and up, never a shim arena reference), and one `inherited`
/// allocation record per block.
struct InheritedHeap {
    /// Inherited stack and type ids start here: a trace's own stack ids (``ArenaEpochs``)
    /// and the shim's type ids (counted from 1) stay below.
    static let firstID: UInt32 = 0x8000_0000
    /// Snapshots kept per recording that no child claimed (a child that was not
    /// traced, or died before its hello): the oldest go first.
    static let maxUnclaimed = 16

    var blocks: [LiveTracker.Entry]
    /// Frames by the parent's stack id, for the stacks the blocks use.
    var frames: [UInt32: [UInt64]]
    /// Type names by the parent's type id, for the types the blocks use.
    var typeNames: [UInt32: String]
    var modules: [ModuleRecord]

    /// Takes the snapshot of `seg`'s live heap (tracked by `tracker`) now.
    init(of seg: Segment, tracker: LiveTracker, scratch: UnsafeMutablePointer<UInt64>, scratchCount: Int) {
        var blocks: [LiveTracker.Entry] = []
        blocks.reserveCapacity(tracker.count)
        var frames: [UInt32: [UInt64]] = [:]
        var typeNames: [UInt32: String] = [:]
        tracker.forEachBlock { entry in
            blocks.append(entry)
            if entry.stack != 0 && frames[entry.stack] == nil {
                frames[entry.stack] = seg.frames(ofStack: entry.stack, scratch: scratch, scratchCount: scratchCount)
            }
            if entry.type != 0 && typeNames[entry.type] == nil {
                typeNames[entry.type] = seg.typeName(entry.type) ?? ""
            }
        }
        // Ascending addresses: small deltas in the child's trace, and a stable order.
        blocks.sort { $0.address < $1.address }
        self.blocks = blocks
        self.frames = frames
        self.typeNames = typeNames
        self.modules = seg.control.loadedModules()
    }

    /// Writes the snapshot at the start of `child`'s trace and seeds its live tracker.
    func start(_ child: Segment) {
        let w = child.writer
        for module in modules {
            w.moduleLoad(module)
            child.control.moduleLoaded(module, position: 0)
        }
        var stackIDs: [UInt32: UInt32] = [:]
        var next = Self.firstID
        for (parentID, stackFrames) in frames.sorted(by: { $0.key < $1.key }) where !stackFrames.isEmpty {
            w.defineStack(id: next, frames: stackFrames)
            stackIDs[parentID] = next
            child.inheritedFrames[next] = stackFrames
            next &+= 1
        }
        var typeIDs: [UInt32: UInt32] = [:]
        next = Self.firstID
        for (parentID, name) in typeNames.sorted(by: { $0.key < $1.key }) {
            w.defineType(id: next, metadata: 0, name: name)
            typeIDs[parentID] = next
            child.control.typeNames[next] = name
            next &+= 1
        }
        for block in blocks {
            let stack = stackIDs[block.stack] ?? 0
            let type = typeIDs[block.type] ?? 0
            w.appendAllocation(.inherited, address: block.address, size: block.size, stack: stack, type: type)
            child.liveHeap?.allocate(address: block.address, size: block.size, stack: stack, type: type, position: 0)
            child.aggregator?.inherit(address: block.address, size: block.size, stack: stack, type: type)
        }
        child.inheritedBlocks = UInt64(blocks.count)
    }
}

/// Snapshots taken at forks, until the child's hello claims them. Kept outside
/// the parent's ``Segment`` because a parent often exits right after forking
/// (a daemon), before the collector accepts the child.
final class ForkSnapshots {
    struct Key: Hashable {
        var pid: Int32
        var forkID: UInt64
    }

    private var byKey: [Key: InheritedHeap] = [:]
    private var order: [Key] = []

    func put(_ heap: InheritedHeap, pid: Int32, forkID: UInt64) {
        let key = Key(pid: pid, forkID: forkID)
        if byKey.updateValue(heap, forKey: key) == nil { order.append(key) }
        while order.count > InheritedHeap.maxUnclaimed {
            byKey[order.removeFirst()] = nil
        }
    }

    func take(pid: Int32, forkID: UInt64) -> InheritedHeap? {
        let key = Key(pid: pid, forkID: forkID)
        guard let heap = byKey.removeValue(forKey: key) else { return nil }
        order.removeAll { $0 == key }
        return heap
    }

    /// Forgets every snapshot of `pid` (its pid was reused).
    func forget(pid: Int32) {
        order.removeAll { $0.pid == pid }
        byKey = byKey.filter { $0.key.pid != pid }
    }
}
