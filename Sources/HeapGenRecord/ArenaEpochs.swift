import CHeapGenCollector
import HeapGenTrace
#if canImport(Glibc)
import Glibc
#endif

/// The collector's side of the shim's arena epochs (heapgen_protocol.h, "Arena epochs"):
/// the arena is two halves used in turn, and a record's ref carries the epoch it was made in.
///
/// The collector reads two epochs at a time, ``released`` and the one after it. It releases
/// the older once the shim has moved on, the ring read up to where the switch was seen, and
/// ``graceNanoseconds`` passed, and then only when the new half is half used or a producer
/// waits for the old one: a thread that interned a stack before the switch has that long to
/// publish it. Before releasing, it copies the frames of stacks that live blocks still use
/// (fork snapshots and in-test answers read them later); everything else it has written to
/// the trace already.
///
/// Trace stack ids: epoch 0 keeps the shim's ref as the id (a program that never fills a
/// half gets exactly the trace it always got); later epochs number their stacks from
/// ``firstLaterID`` up, so ids never repeat within a trace. The same code path defined again
/// in a later epoch gets a new id; the analysis folds ids with equal frames
/// (`StackIdentity`).
final class ArenaEpochs {
    /// Ids of stacks defined in epochs after the first start here: epoch-0 refs (offset / 8
    /// of at most HG_MAX_ARENA_MB) stay below, inherited ids (``InheritedHeap/firstID``) above.
    static let firstLaterID: UInt32 = 1 << UInt32(HG_REF_OFFSET_BITS)
    /// HG_REF_OFFSET_MASK and HG_ARENA_USED_MASK (macros Swift does not import).
    static let refOffsetMask: UInt32 = (1 << UInt32(HG_REF_OFFSET_BITS)) - 1
    static let usedMask: UInt64 = (1 << UInt64(HG_ARENA_EPOCH_SHIFT)) - 1
    /// The least time between seeing the shim move on and releasing the epoch before.
    static let graceNanoseconds: UInt64 = 50_000_000

    /// Epochs below this are released: their halves may have been written over.
    private(set) var released: UInt64 = 0
    /// The ring head, and the time, when the collector first saw the epoch after
    /// ``released`` begin.
    private var switchSeenAt: UInt64?
    private var switchSeenTime: UInt64 = 0
    /// Epoch 0: refs already defined in the trace (a stack's id is its ref there).
    private var firstEpochStacks = IdSet()
    /// Epochs after 0, by epoch & 1: trace id by a ref's index in its half (0: not defined),
    /// zeroed memory made on first use (pages cost only once touched) and freed at release;
    /// and the other way, trace id → ref (used only for fork snapshots and answers).
    private var idTables: [UnsafeMutablePointer<UInt32>?] = [nil, nil]
    private var refs: [[UInt32: UInt32]] = [[:], [:]]
    /// Refs per half.
    private let halfRefs: Int
    private var nextID = firstLaterID
    /// Frames of stacks of released epochs that live blocks used when their epoch was
    /// released (or when the live heap was made), by trace id.
    private var retiredFrames: [UInt32: [UInt64]] = [:]

    init(halfBytes: UInt64) {
        halfRefs = Int(halfBytes / 8)
    }

    deinit {
        free(idTables[0])
        free(idTables[1])
    }

    // MARK: Records' refs

    /// The epoch a record's `ref` was made in and its plain arena ref (offset / 8), or nil
    /// when the ref is 0 or names an epoch the collector no longer reads (or, for the epoch
    /// after ``released``, one the shim, at `shimEpoch`, has not begun).
    @inline(__always)
    func locate(_ ref: UInt32, shimEpoch: UInt64) -> (epoch: UInt64, plain: UInt32)? {
        guard ref != 0 else { return nil }
        let tag = UInt64(ref >> UInt32(HG_REF_OFFSET_BITS))
        let plain = ref & Self.refOffsetMask
        if tag == released & 0xff { return (released, plain) }
        if tag == (released &+ 1) & 0xff && shimEpoch > released { return (released &+ 1, plain) }
        return nil
    }

    /// The trace id of the stack a record's `ref` names, if it is defined in an epoch still
    /// read: the hot path (a bit test in epoch 0, one load later). Only a defined stack has
    /// an id, so the shim's epoch need not be asked.
    @inline(__always)
    func knownID(_ ref: UInt32) -> UInt32? {
        guard let (epoch, plain) = locate(ref, shimEpoch: .max) else { return nil }
        if epoch == 0 { return firstEpochStacks.contains(plain) ? plain : nil }
        guard let table = idTables[Int(epoch & 1)], let i = slot(plain, epoch) else { return nil }
        let id = table[i]
        return id == 0 ? nil : id
    }

    /// The plain ref of a record's `ref` made in the epoch just released, while the shim has
    /// not started the epoch that writes over its half (`shimEpoch` is still
    /// ``released``): its nodes are intact until then.
    func lateRef(_ ref: UInt32, shimEpoch: UInt64) -> UInt32? {
        guard released > 0, shimEpoch == released,
              UInt64(ref >> UInt32(HG_REF_OFFSET_BITS)) == (released &- 1) & 0xff else { return nil }
        return ref & Self.refOffsetMask
    }

    /// The index of `plain` in the half of `epoch`, if it lies there.
    @inline(__always)
    private func slot(_ plain: UInt32, _ epoch: UInt64) -> Int? {
        let i = Int(plain) - (epoch & 1 == 1 ? halfRefs : 0)
        return i >= 0 && i < halfRefs ? i : nil
    }

    // MARK: Trace ids

    /// Trace ids left for stacks of later epochs: the collector stops defining new ones
    /// before they would reach inherited ids.
    var hasRoom: Bool { nextID < InheritedHeap.firstID }

    /// Notes that the stack `plain` of `epoch` is now defined; returns the id it gets (a ref
    /// outside its epoch's half gets an id but is not remembered: the chain was read, and
    /// validated, before).
    func define(epoch: UInt64, plain: UInt32) -> UInt32 {
        if epoch == 0 {
            firstEpochStacks.insert(plain)
            return plain
        }
        let id = defineLate()
        if let i = slot(plain, epoch) {
            if idTables[Int(epoch & 1)] == nil {
                idTables[Int(epoch & 1)] = calloc(halfRefs, MemoryLayout<UInt32>.stride)?.assumingMemoryBound(to: UInt32.self)
            }
            idTables[Int(epoch & 1)]?[i] = id
        }
        refs[Int(epoch & 1)][id] = plain
        return id
    }

    /// A new trace id, remembered nowhere: for a stack read from a released epoch's half
    /// (``lateRef(_:shimEpoch:)``; rare, and the analysis folds equal ones).
    func defineLate() -> UInt32 {
        let id = nextID
        nextID &+= 1
        return id
    }

    // MARK: Frames of trace ids

    /// The plain arena ref of trace stack `id` if its epoch is still read, else nil.
    func plainRef(ofStack id: UInt32) -> UInt32? {
        plainRef(ofStack: id, in: released) ?? plainRef(ofStack: id, in: released &+ 1)
    }

    /// The plain arena ref of trace stack `id` if it was defined in `epoch` (one still read).
    private func plainRef(ofStack id: UInt32, in epoch: UInt64) -> UInt32? {
        if epoch == 0 { return id < Self.firstLaterID && firstEpochStacks.contains(id) ? id : nil }
        return refs[Int(epoch & 1)][id]
    }

    /// Frames kept for `id` when its epoch was released.
    func retired(_ id: UInt32) -> [UInt64]? { retiredFrames[id] }

    /// Adds frames of stacks of released epochs (read back from the trace when the live
    /// heap was made after their release).
    func keepRetired(_ frames: [UInt32: [UInt64]]) {
        retiredFrames.merge(frames) { old, _ in old }
    }

    /// Whether stack `id` (defined in this trace, not inherited) belongs to an epoch
    /// already released: its frames are no longer in the arena.
    func isReleased(_ id: UInt32) -> Bool {
        id < InheritedHeap.firstID && plainRef(ofStack: id) == nil
    }

    // MARK: Releasing

    /// Called after each drain: releases the older epoch when the shim is well into the
    /// next (see the type's description). `liveStacks` lists the stack ids live blocks use
    /// now, `frames` reads a plain ref's frames from the arena; both only when a release is
    /// due.
    func advance(_ seg: UnsafePointer<hg_segment>, tail: UInt64,
                 liveStacks: () -> Set<UInt32>, frames: (UInt32) -> [UInt64]) {
        let state = hg_arena_state(seg)
        guard state >> UInt64(HG_ARENA_EPOCH_SHIFT) == released &+ 1 else { return }   // not moved on (or nonsense)
        let now = monotonicNanoseconds()
        guard let seen = switchSeenAt else {
            var counters = hg_counters()
            hg_segment_counters(seg, &counters)
            switchSeenAt = counters.head
            switchSeenTime = now
            return
        }
        let used = state & Self.usedMask
        let wanted = hg_arena_wanted(seg) == released &+ 2
        guard tail >= seen, now &- switchSeenTime >= Self.graceNanoseconds,
              used >= seg.pointee.arena_half / 2 || wanted else { return }

        // Keep what live blocks still need of the old epoch, drop retired frames nobody uses.
        var kept: [UInt32: [UInt64]] = [:]
        for id in liveStacks() {
            if let f = retiredFrames[id] {
                kept[id] = f
            } else if let plain = plainRef(ofStack: id, in: released) {
                kept[id] = frames(plain)
            }
        }
        retiredFrames = kept
        if released == 0 {
            firstEpochStacks = IdSet()
        } else {
            free(idTables[Int(released & 1)])
            idTables[Int(released & 1)] = nil
            refs[Int(released & 1)] = [:]
        }
        released &+= 1
        switchSeenAt = nil
        hg_arena_release(seg, released)
    }

    /// The shim's epoch now (the arena state's high bits).
    static func shimEpoch(_ seg: UnsafePointer<hg_segment>) -> UInt64 {
        hg_arena_state(seg) >> UInt64(HG_ARENA_EPOCH_SHIFT)
    }
}
