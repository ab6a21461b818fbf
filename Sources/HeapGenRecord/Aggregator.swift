// `heapgen record --aggregate`: folds one process image's heap events into per-group
// counts and writes them at each mark, so that disk use grows with marks × active sites,
// not with events (docs/trace-format.md, "Aggregated traces").

import HeapGenTrace

/// The collector's aggregation of one trace. Keeps the live heap (address → group) and,
/// per group (site, requested size, epoch of birth), the blocks allocated and freed in the
/// current epoch; ``flush(_:)`` writes them as `aggregate` records when a mark closes the
/// epoch (and at the end). Memory: the live blocks, plus one group per (site, size, birth
/// epoch) that still has live blocks; groups whose blocks are all gone are reused.
///
/// Blocks a forked child inherited are written as ordinary events (``inherit(address:)``):
/// their frees and realloc undos are written as events too, so the trace stays consistent.
final class Aggregator {
    /// A live block: its group, the group's stamp when it was born (a reused group has
    /// another), and its site and size (to revive it after a group was reused).
    struct Block {
        var group: UInt32
        var stamp: UInt32
        var stack: UInt32
        var type: UInt32
        var size: UInt64
    }

    private struct Group {
        var stack: UInt32 = 0
        var type: UInt32 = 0
        var size: UInt64 = 0
        var birth: UInt64 = 0
        var live: UInt64 = 0
        var allocated: UInt64 = 0
        var freed: UInt64 = 0
        var undone: UInt64 = 0
        var stamp: UInt32 = 0
        var dirty = false
    }

    private struct Key: Hashable {
        var stack: UInt32
        var type: UInt32
        var size: UInt64
    }

    /// ``Block/group`` of an inherited block (written as events, not counted).
    private static let raw: UInt32 = .max

    /// At most half full, as ``LiveTracker``'s: shorter probes for the inserts.
    private let heap = LiveHeap<Block>(maxLoadPercent: 50)
    // Exclusivity is not checked at run time on the per-event fields (one thread, the
    // recording loop's): the checks cost the aggregating drain about a sixth of its time.
    @exclusivity(unchecked) private var groups: [Group] = []
    @exclusivity(unchecked) private var reusable: [UInt32] = []
    /// Groups born in the current epoch, by site and size.
    @exclusivity(unchecked) private var current: [Key: UInt32] = [:]
    /// In front of `current`: the group last found for a hash of (site, size), plus one (0:
    /// none). Checked against the group's fields, so a stale slot only costs the lookup.
    @exclusivity(unchecked) private var recent = [UInt32](repeating: 0, count: 4096)
    @exclusivity(unchecked) private var dirty: [UInt32] = []
    @exclusivity(unchecked) private var untracked: UInt64 = 0
    /// Marks so far: the current epoch.
    @exclusivity(unchecked) private var epoch: UInt64 = 0

    init() {}

    /// A block the forked child inherited, already written as an `inherited` allocation.
    func inherit(address: UInt64, size: UInt64, stack: UInt32, type: UInt32) {
        _ = heap.apply(.allocation(address: address, block: Block(group: Self.raw, stamp: 0, stack: stack, type: type, size: size)))
    }

    /// An allocation of `size` bytes at `address` by site (`stack`, `type`).
    @inline(__always)
    func allocate(address: UInt64, size: UInt64, stack: UInt32, type: UInt32, writer: TraceWriter) {
        let g = group(stack: stack, type: type, size: size)
        let change = heap.apply(.allocation(address: address, block: Block(group: g, stamp: groups[Int(g)].stamp,
                                                                          stack: stack, type: type, size: size)))
        groups[Int(g)].allocated &+= 1
        groups[Int(g)].live &+= 1
        touch(g)
        // A block still live at the address was freed without our seeing it: it is gone.
        if let old = change.removed { gone(old, address: address, writer: writer, realloc: false) }
    }

    /// A free (`realloc` true: the free half of a realloc, which may still be undone).
    @inline(__always)
    func free(address: UInt64, realloc: Bool, writer: TraceWriter) {
        let change = heap.apply(realloc ? .reallocFree(address: address) : .free(address: address))
        if let block = change.removed {
            gone(block, address: address, writer: writer, realloc: realloc)
        } else if !change.matched {
            untracked &+= 1
        }
    }

    /// The realloc that freed `address` failed: its block is live again.
    func undo(address: UInt64, writer: TraceWriter) {
        let change = heap.apply(.reallocUndo(address: address))
        guard let block = change.added else { return }
        // A block allocated at the address since is replaced, as every replay does.
        if let replaced = change.removed, replaced.group != Self.raw || block.group != Self.raw {
            gone(replaced, address: address, writer: writer, realloc: false)
        }
        if block.group == Self.raw {
            writer.appendReallocUndo(address: address)
            return
        }
        let g = Int(block.group)
        if groups[g].stamp == block.stamp && groups[g].freed > 0 {
            // A block of its group was freed in this epoch (blocks of a group are alike): that
            // free becomes a failed realloc.
            groups[g].freed -= 1
            groups[g].undone &+= 1
            groups[g].live &+= 1
        } else {
            // Its free was written with an earlier epoch: it counts as allocated again now.
            let n = group(stack: block.stack, type: block.type, size: block.size)
            _ = heap.insert(address, Block(group: n, stamp: groups[Int(n)].stamp, stack: block.stack,
                                           type: block.type, size: block.size))
            groups[Int(n)].allocated &+= 1
            groups[Int(n)].live &+= 1
            touch(n)
        }
    }

    /// Writes the current epoch's counts and starts the next epoch (call before writing a
    /// mark), or only writes them (`closing` false: at the end of the trace).
    func flush(_ writer: TraceWriter, closing: Bool = true) {
        var entries: [AggregateEntry] = []
        entries.reserveCapacity(dirty.count)
        for g in dirty {
            let group = groups[Int(g)]
            entries.append(AggregateEntry(stack: group.stack, type: group.type, size: group.size, birth: group.birth,
                                          allocated: group.allocated, freed: group.freed, undone: group.undone))
            groups[Int(g)].allocated = 0
            groups[Int(g)].freed = 0
            groups[Int(g)].undone = 0
            groups[Int(g)].dirty = false
        }
        // Older groups first: the reader frees before it allocates, as a heap that is reused.
        entries.sort { $0.birth < $1.birth }
        writer.aggregate(epoch: epoch, untrackedFrees: untracked, entries: entries)
        untracked = 0
        guard closing else {
            dirty.removeAll(keepingCapacity: true)
            return
        }
        for g in dirty where groups[Int(g)].live == 0 {
            // Nothing of it is live and nothing can be born into it any more: reuse it.
            groups[Int(g)].stamp &+= 1
            reusable.append(g)
        }
        dirty.removeAll(keepingCapacity: true)
        current.removeAll(keepingCapacity: true)
        epoch &+= 1
    }

    /// A block stopped being live: count it freed, or write the free of an inherited block.
    @inline(__always)
    private func gone(_ block: Block, address: UInt64, writer: TraceWriter, realloc: Bool) {
        if block.group == Self.raw {
            writer.appendFree(realloc ? .realloc : .free, address: address)
            return
        }
        let g = Int(block.group)
        guard groups[g].stamp == block.stamp else { return }
        groups[g].freed &+= 1
        groups[g].live &-= 1
        touch(block.group)
    }

    /// The group of the current epoch for this site and size, made if new.
    @inline(__always)
    private func group(stack: UInt32, type: UInt32, size: UInt64) -> UInt32 {
        var h = (UInt64(stack) << 32 | UInt64(type)) &* 0x9E37_79B9_7F4A_7C15 ^ size &* 0xC2B2_AE3D_27D4_EB4F
        h ^= h >> 29
        let slot = Int(truncatingIfNeeded: h) & (recent.count - 1)
        let cached = recent[slot]
        if cached != 0 {
            let g = groups[Int(cached - 1)]
            if g.birth == epoch && g.stack == stack && g.type == type && g.size == size { return cached - 1 }
        }
        let g = lookup(Key(stack: stack, type: type, size: size))
        recent[slot] = g + 1
        return g
    }

    /// The group of the current epoch for `key`, made if new.
    private func lookup(_ key: Key) -> UInt32 {
        let (stack, type, size) = (key.stack, key.type, key.size)
        if let g = current[key] { return g }
        let g: UInt32
        if let reused = reusable.popLast() {
            g = reused
        } else {
            g = UInt32(groups.count)
            groups.append(Group())
        }
        let stamp = groups[Int(g)].stamp
        groups[Int(g)] = Group(stack: stack, type: type, size: size, birth: epoch, stamp: stamp)
        current[key] = g
        return g
    }

    @inline(__always)
    private func touch(_ g: UInt32) {
        if !groups[Int(g)].dirty {
            groups[Int(g)].dirty = true
            dirty.append(g)
        }
    }
}
