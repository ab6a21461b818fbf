import CHeapGenCollector
import HeapGenTrace

/// Moves records from a segment's ring into its trace. Owns reusable buffers:
/// the hot loop allocates nothing per record (stacks, type names and marks
/// are read into fixed scratch buffers; only names and module paths become
/// Swift strings, once each).
final class SegmentDrainer {
    /// Slots taken from a ring per call.
    static let batchSize = 4096
    private static let maxFrames = 1024
    /// HG_SIZE_MASK (a macro Swift does not import).
    private let sizeMask: UInt64 = (1 << UInt64(HG_KIND_SHIFT)) - 1
    private static let maxText = 64 * 1024
    private static let maxModuleSegments = 64
    private static let maxBuildID = 512
    private static let maxPath = 4096

    private let slots = UnsafeMutablePointer<hg_record>.allocate(capacity: batchSize)
    private let frames = UnsafeMutablePointer<UInt64>.allocate(capacity: maxFrames)
    private let text = UnsafeMutablePointer<CChar>.allocate(capacity: maxText + 1)
    private let moduleSegments = UnsafeMutablePointer<hg_module_seg>.allocate(capacity: maxModuleSegments)
    private let buildID = UnsafeMutablePointer<UInt8>.allocate(capacity: maxBuildID)
    private let modulePath = UnsafeMutablePointer<CChar>.allocate(capacity: maxPath + 1)
    /// Answers HG_K_CONTROL requests.
    let controlChannel = ControlChannel()
    /// Live heaps taken at HG_K_FORK records, for the children's traces.
    let forks = ForkSnapshots()
    /// Told of HG_K_CHILD_EXIT records: (the reporting parent, child pid as the parent
    /// knows it, raw wait status).
    var childExited: ((Segment, Int32, Int32) -> Void)?
    /// Told of HG_K_EXEC records about a child of the segment's process (a vfork child that
    /// shares the segment, or one posix_spawn started): (the segment, the child's pid as
    /// the segment's process knows it, the program, or nil when the exec failed).
    var childExec: ((Segment, Int32, Segment.ExecedProgram?) -> Void)?
    /// Told of every module a program maps (HG_K_MODULE_LOAD), after its trace has it.
    var moduleMapped: ((ModuleRecord) -> Void)?

    init() {}

    deinit {
        slots.deallocate()
        frames.deallocate()
        text.deallocate()
        moduleSegments.deallocate()
        buildID.deallocate()
        modulePath.deallocate()
    }

    /// Drains one batch of published slots; returns how many. When there is nothing to
    /// drain, checks the ring (``RingWatch``): a segment found corrupt drains nothing more
    /// (``RingWatch/corruption`` is set; the recording loop ends its recording).
    func drain(_ seg: Segment) -> Int {
        guard seg.watch.corruption == nil else { return 0 }
        let n = hg_drain(seg.raw, &seg.tail, slots, Self.batchSize)
        if n > 0 {
            translate(seg, count: n)
            seg.consumed &+= UInt64(n)
            seg.watch.progressed()
            reportLost(seg)
        } else {
            seg.watch.check(seg.raw, tail: seg.tail, pid: seg.pid, now: monotonicNanoseconds())
        }
        advanceEpochs(seg)
        return n
    }

    /// Drains everything left in the ring of a process image that is gone,
    /// skipping (and counting) torn slots. At most one ring's worth: the shared head is
    /// clamped to one ring past our tail.
    func drainFinal(_ seg: Segment) {
        controlChannel.answering = false  // nobody is left to wait for an answer
        defer { controlChannel.answering = true }
        let limit = hg_final_limit(seg.raw, seg.tail)
        while seg.tail < limit {
            let n = hg_drain_final(seg.raw, &seg.tail, limit, slots, Self.batchSize, &seg.torn)
            if n > 0 {
                translate(seg, count: n)
                seg.consumed &+= UInt64(n)
            }
        }
        reportLost(seg)
    }

    /// Last drain of a segment found corrupt: what was published in order after our tail,
    /// up to one ring, whatever the shared tail and head say; then no more.
    func drainRescue(_ seg: Segment) {
        controlChannel.answering = false  // the program is being detached: no answers
        defer { controlChannel.answering = true }
        let limit = seg.tail &+ seg.raw.pointee.ring_slots
        while seg.tail < limit {
            let n = hg_drain_rescue(seg.raw, &seg.tail, limit, slots, Self.batchSize)
            if n == 0 { break }
            translate(seg, count: n)
            seg.consumed &+= UInt64(n)
        }
        reportLost(seg)
    }

    /// Emits a `lost` record when the shim's lost_events counter grew (clamped: the
    /// program may have written anything there).
    private func reportLost(_ seg: Segment) {
        let lost = seg.plausibleCounters().lostEvents
        if lost > seg.lostReported {
            seg.writer.lost(count: lost - seg.lostReported)
            seg.lostReported = lost
        }
    }

    private func translate(_ seg: Segment, count: Int) {
        let w = seg.writer
        // The collector's own live heap, for forked children: nil with --no-follow-fork.
        var heap = seg.liveHeap
        // Live tracking (control channel): nil unless the program asked, or when it is `heap`
        // itself (see ``separateTracker``): each tracker gets each event once.
        var tracker = Self.separateTracker(seg, heap)
        let epochs = seg.epochs
        for i in 0..<count {
            // The writer's look-up of the record 8 on, started now (TraceWriter.prefetch).
            if i &+ 8 < count { w.prefetch(slots[i &+ 8].addr) }
            let s = slots[i]
            let kind = UInt32(truncatingIfNeeded: s.size_kind >> UInt64(HG_KIND_SHIFT))
            switch kind {
            case UInt32(HG_K_MALLOC.rawValue)...UInt32(HG_K_PVALLOC.rawValue):
                var stack = s.ref
                if stack != 0 {
                    stack = epochs.knownID(stack) ?? stackID(seg, ref: stack)
                }
                var type = s.aux
                if type != 0 && !seg.types.contains(type) {
                    seg.undefinedTypes &+= 1
                    type = 0
                }
                if let aggregator = seg.aggregator {
                    aggregator.allocate(address: s.addr, size: s.size_kind & sizeMask, stack: stack, type: type, writer: w)
                } else {
                    w.appendAllocation(AllocationFunction(rawValue: UInt8(truncatingIfNeeded: kind)) ?? .malloc,
                                       address: s.addr, size: s.size_kind & sizeMask, stack: stack, type: type)
                }
                if let tracker {
                    tracker.allocate(address: s.addr, size: s.size_kind & sizeMask, stack: stack, type: type, position: s.pos)
                }
                if let heap { heap.allocate(address: s.addr, size: s.size_kind & sizeMask, stack: stack, type: type, position: s.pos) }
            case UInt32(HG_K_FREE.rawValue):
                if let aggregator = seg.aggregator { aggregator.free(address: s.addr, realloc: false, writer: w) } else { w.appendFree(.free, address: s.addr) }
                if let tracker { tracker.free(address: s.addr, realloc: false) }
                if let heap { heap.free(address: s.addr, realloc: false) }
            case UInt32(HG_K_REALLOC_FREE.rawValue):
                if let aggregator = seg.aggregator { aggregator.free(address: s.addr, realloc: true, writer: w) } else { w.appendFree(.realloc, address: s.addr) }
                if let tracker { tracker.free(address: s.addr, realloc: true) }
                if let heap { heap.free(address: s.addr, realloc: true) }
            case UInt32(HG_K_REALLOC_UNDO.rawValue):
                if let aggregator = seg.aggregator { aggregator.undo(address: s.addr, writer: w) } else { w.appendReallocUndo(address: s.addr) }
                if let tracker { tracker.undo(address: s.addr) }
                if let heap { heap.undo(address: s.addr) }
            case UInt32(HG_K_FORK.rawValue):
                if s.size_kind & sizeMask == 1 {
                    // No connection for the child: it runs untraced, and claims nothing.
                    seg.untracedForks.append(Int32(truncatingIfNeeded: s.aux))
                    continue
                }
                // The parent's live heap as the child will have it: taken here,
                // in ring order, claimed by the child's hello.
                // The first fork makes the heap from the trace so far (materializedLiveHeap).
                heap = seg.materializedLiveHeap()
                if let heap {
                    forks.put(InheritedHeap(of: seg, tracker: heap, scratch: frames, scratchCount: Self.maxFrames),
                              pid: seg.pid, forkID: s.addr)
                }
            case UInt32(HG_K_CONTROL.rawValue):
                // Every record before it has been consumed: answer now.
                controlChannel.handle(seg, s)
                heap = seg.liveHeap  // an answer may have made it (a scan in a forked child)
                tracker = Self.separateTracker(seg, heap)
            case UInt32(HG_K_NOP.rawValue):
                continue
            default:
                metadata(seg, s, kind: kind)
            }
        }
    }

    /// The control channel's tracker if it is not `heap`: with `--leaks`, the two are one
    /// object from the first event (RecordingLoop), fed once as `heap`.
    @inline(__always)
    private static func separateTracker(_ seg: Segment, _ heap: LiveTracker?) -> LiveTracker? {
        let tracker = seg.control.tracker
        return tracker === heap ? nil : tracker
    }

    /// The trace id of the stack a record's `ref` names when ``ArenaEpochs/knownID(_:)`` has
    /// none: defined now (expanded from the arena); 0 if its epoch is gone or its chain is
    /// malformed (counted).
    @inline(never)
    private func stackID(_ seg: Segment, ref: UInt32) -> UInt32 {
        let epochs = seg.epochs
        // Asked now, not once per batch: the shim may have begun the next epoch since
        // (acquire: that epoch's nodes are visible once its state is).
        let shimEpoch = ArenaEpochs.shimEpoch(seg.raw)
        if let (epoch, plain) = epochs.locate(ref, shimEpoch: shimEpoch) {
            guard epoch == 0 || epochs.hasRoom else {
                seg.badStacks &+= 1
                return 0
            }
            return defineStack(seg, plain: plain) { epochs.define(epoch: epoch, plain: plain) }
        }
        // Published after its epoch was released (a thread preempted between interning and
        // publishing): read like a seqlock while the shim has not started writing over the
        // half. Its switch to the next epoch is an acquire-release CAS that precedes those
        // writes, so the same epoch after our reads means they read intact nodes.
        guard let plain = epochs.lateRef(ref, shimEpoch: shimEpoch), epochs.hasRoom else {
            seg.staleStacks &+= 1
            return 0
        }
        return defineStack(seg, plain: plain, intact: { ArenaEpochs.shimEpoch(seg.raw) == shimEpoch },
                           id: epochs.defineLate)
    }

    /// Expands call-tree node `plain` (the innermost frame of a stack) into its whole
    /// stack and defines it in the trace under `id()`, with a `stackTruncated` record if the
    /// shim cut it at its frame limit; returns the id (0 if the chain is malformed, or if
    /// `intact` says the nodes may have been written over while read: counted as lost).
    private func defineStack(_ seg: Segment, plain: UInt32, intact: () -> Bool = { true },
                             id: () -> UInt32) -> UInt32 {
        var truncated: UInt32 = 0
        let n = hg_read_stack_flags(seg.raw, plain, frames, UInt32(Self.maxFrames), &truncated)
        guard intact() else {
            seg.staleStacks &+= 1
            return 0
        }
        guard n > 0 else {
            seg.badStacks &+= 1
            return 0
        }
        let id = id()
        seg.writer.defineStack(id: id, frames: UnsafeBufferPointer(start: frames, count: Int(n)))
        if truncated != 0 {
            seg.writer.stackTruncated(id: id)
        }
        return id
    }

    /// Lets the shim reuse the older arena half once it is well into the newer one
    /// (``ArenaEpochs/advance(_:tail:liveStacks:frames:)``).
    private func advanceEpochs(_ seg: Segment) {
        let frames = frames
        seg.epochs.advance(seg.raw, tail: seg.tail, liveStacks: { seg.liveStackIDs() }, frames: { plain in
            seg.arenaFrames(plain, scratch: frames, scratchCount: Self.maxFrames)
        })
    }

    /// A blob ref from a metadata record, plain, or nil if its epoch was released.
    private func blobRef(_ seg: Segment, _ ref: UInt32) -> UInt32? {
        seg.epochs.locate(ref, shimEpoch: ArenaEpochs.shimEpoch(seg.raw))?.plain
    }

    /// The string blob a record's `ref` names, or nil if invalid or released.
    private func string(_ seg: Segment, ref: UInt32) -> String? {
        guard let plain = blobRef(seg, ref) else { return nil }
        let n = hg_read_string(seg.raw, plain, text, Self.maxText + 1)
        guard n >= 0 else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: text, count: Int(n)), as: UTF8.self)
    }

    @inline(never)
    private func metadata(_ seg: Segment, _ s: hg_record, kind: UInt32) {
        let w = seg.writer
        switch kind {
        case UInt32(HG_K_MODULE_LOAD.rawValue):
            var info = hg_module_info()
            guard let plain = blobRef(seg, s.ref), hg_read_module(seg.raw, plain, &info, moduleSegments, UInt32(Self.maxModuleSegments),
                                 buildID, UInt32(Self.maxBuildID), modulePath, Self.maxPath + 1) == 0 else {
                seg.badRecords &+= 1
                return
            }
            var segments: [ModuleRecord.Segment] = []
            segments.reserveCapacity(Int(info.nsegs))
            for k in 0..<Int(info.nsegs) {
                let m = moduleSegments[k]
                segments.append(.init(vaddr: m.vaddr, memsz: m.memsz, flags: m.flags))
            }
            let path = String(decoding: UnsafeRawBufferPointer(start: modulePath, count: Int(info.path_len)), as: UTF8.self)
            let id = Array(UnsafeBufferPointer(start: buildID, count: Int(info.build_id_len)))
            let module = ModuleRecord(loadBias: info.load_bias, path: path, buildID: id, segments: segments)
            w.moduleLoad(module)
            seg.control.moduleLoaded(module, position: s.pos)
            moduleMapped?(module)
        case UInt32(HG_K_MODULE_UNLOAD.rawValue):
            w.moduleUnload(loadBias: s.addr)
            seg.control.moduleUnloaded(loadBias: s.addr, position: s.pos)
        case UInt32(HG_K_TYPE_NAME.rawValue):
            // Each id is defined once; later definitions of the same id are ignored.
            guard s.aux != 0, !seg.types.contains(s.aux) else { return }
            guard let raw = string(seg, ref: s.ref) else {
                seg.badRecords &+= 1
                return
            }
            let name = StableTypeName.of(raw)
            w.defineType(id: s.aux, metadata: s.addr, name: name)
            seg.types.insert(s.aux)
            seg.control.typeNames[s.aux] = name
            seg.control.typeMetadata[s.aux] = s.addr
        case UInt32(HG_K_MARK.rawValue):
            let label = s.ref == 0 ? "" : string(seg, ref: s.ref)
            if label == nil { seg.badRecords &+= 1 }
            let origin = MarkOrigin(rawValue: UInt8(truncatingIfNeeded: s.aux)) ?? .external
            seg.aggregator?.flush(w)  // the mark closes the epoch
            w.mark(label: label ?? "", timeNanoseconds: s.size_kind & sizeMask, origin: origin)
            seg.control.tracker?.mark(label: label ?? "", time: s.size_kind & sizeMask, origin: origin)
            if origin != .timer { seg.settleDue = s.size_kind & sizeMask }
        case UInt32(HG_K_THREAD_START.rawValue):
            w.threadStart(tid: s.aux)
            seg.threadsSeen &+= 1
        case UInt32(HG_K_CHILD_EXIT.rawValue):
            childExited?(seg, Int32(truncatingIfNeeded: s.addr), Int32(truncatingIfNeeded: s.size_kind & sizeMask))
        case UInt32(HG_K_EXIT.rawValue):
            seg.exitAnnounced = Int32(truncatingIfNeeded: s.size_kind & sizeMask) & 0xff
        case UInt32(HG_K_EXEC.rawValue):
            let name = s.addr == 1
                ? Segment.ExecedProgram(name: string(seg, ref: s.ref) ?? "", environmentDropped: s.aux == 1,
                                        execNanoseconds: monotonicNanoseconds()) : nil
            let child = s.size_kind & sizeMask
            if child == 0 {
                seg.execing = name
            } else {
                childExec?(seg, Int32(truncatingIfNeeded: child), name)
            }
        default:
            // HG_K_STACK_TRUNC (reserved) and unknown kinds: skipped.
            seg.badRecords &+= 1
        }
    }
}
