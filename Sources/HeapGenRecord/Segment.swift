import CHeapGenCollector
import HeapGenTrace

/// One accepted segment: the mapping of one traced process image, its ring
/// position and its trace writer. Owned by the recording loop (one thread).
final class Segment {
    /// The validated mapping (layout copied from the header once).
    let raw: UnsafeMutablePointer<hg_segment>
    let pid: Int32
    let ppid: Int32
    let origin: ProcessOrigin
    /// 0 for a pid's first image, n for its n-th exec'd image.
    let image: Int
    /// The trace file.
    let path: String
    let writer: TraceWriter

    /// Next ring position to consume.
    var tail: UInt64 = 0
    /// The shim's arena epochs: which refs are still readable, and the trace ids of the
    /// stacks defined so far.
    let epochs: ArenaEpochs
    /// Type ids already defined in the trace.
    var types = IdSet()

    /// Allocations whose stack blob was invalid (recorded with stack 0).
    var badStacks: UInt64 = 0
    /// Allocations whose stack was made in an arena epoch already released (published
    /// after a whole half of other allocations): recorded with stack 0, counted as lost.
    var staleStacks: UInt64 = 0
    /// Allocations naming a type id that was never defined (recorded with type 0).
    var undefinedTypes: UInt64 = 0
    /// Metadata records (module, type name, mark) whose blob was invalid, and unknown kinds.
    var badRecords: UInt64 = 0
    /// Slots claimed but never published, found by the final drain.
    var torn: UInt64 = 0
    /// The shim's lost_events already reported with `lost` records.
    var lostReported: UInt64 = 0
    /// Order of acceptance in the recording (0 = first).
    var sequence = 0
    /// The image asked for its exit scan (`--leaks`, `--retention`), whatever came of it.
    var exitScanRequested = false
    /// Its process has exited and been reaped; its trace waits for the exit status its
    /// parent reports. No more collector marks go into it.
    var exited = false
    /// For an image in a PID namespace below the collector's: its pid in each namespace from
    /// the collector's (`pid`) down to its own. Its parent's `wait` reports it by the one of
    /// the parent's namespace.
    var namespacePids: [Int32]?

    /// The image's pid in the namespace `depth` levels below the collector's.
    func pid(atDepth depth: Int) -> Int32? {
        guard let list = namespacePids else { return depth == 0 ? pid : nil }
        return depth < list.count ? list[depth] : nil
    }

    /// How many PID namespaces below the collector's the image lives in.
    var namespaceDepth: Int { (namespacePids?.count ?? 1) - 1 }
    /// Slots consumed.
    var consumed: UInt64 = 0
    /// When the drainer last saw a mark made by the program or from outside
    /// (monotonic ns), for `--settle`; nil once the settle mark for it is in.
    var settleDue: UInt64?
    /// Collector marks (`--mark-every`, `--settle`) not in the ring yet because it was full,
    /// oldest first; retried after draining.
    var pendingMarks: [(label: String, origin: UInt32)] = []
    /// Control channel state: names and modules for answers, live tracking once asked.
    let control = SegmentControl()
    /// When the segment was accepted (monotonic ns), to bound the shim's counters.
    let acceptedAt = monotonicNanoseconds()
    /// Checks of the shared ring state against ours; set ``RingWatch/corruption`` ends the recording.
    var watch = RingWatch()
    /// Some shim counter was out of range and was dropped (see ``ShimCounters``).
    var droppedCounters = false
    /// threadStart records seen, to bound the shim's counters.
    var threadsSeen: UInt64 = 0

    /// The shim's counters, those out of range dropped (the program can write anything there).
    func plausibleCounters() -> ShimCounters {
        let counters = ShimCounters(raw, elapsedNanoseconds: monotonicNanoseconds() &- acceptedAt, threads: threadsSeen)
        if counters.dropped { droppedCounters = true }
        return counters
    }

    /// The live heap from the first event on, kept while forked children are
    /// followed: the collector's own. With `--leaks` (not in a forked child) it is also
    /// the control channel's tracker until the program sends `untrack`.
    ///
    /// Made on first need when ``replaysLiveHeap`` is set (see ``materializedLiveHeap()``):
    /// a program that never forks then costs the collector no live map at all.
    var liveHeap: LiveTracker?
    /// Forks are followed but ``liveHeap`` is not made yet: it will be, from the trace.
    var replaysLiveHeap = false
    /// `--aggregate`: folds heap events into counts written at marks (nil: events are written).
    var aggregator: Aggregator?
    /// Frames of the stacks this image inherited at its fork (ids from ``InheritedHeap/firstID``).
    var inheritedFrames: [UInt32: [UInt64]] = [:]
    /// Blocks this image inherited at its fork.
    var inheritedBlocks: UInt64 = 0
    /// The errno of each fork whose child the shim could not connect for (it ran untraced).
    var untracedForks: [Int32] = []
    /// The program this image was exec'ing at its last `HG_K_EXEC` record, nil when none
    /// is under way (none yet, or the last one failed).
    var execing: ExecedProgram?
    /// The status this image said it exits with (`HG_K_EXIT`: exit(), _exit(), main's
    /// return), for when nobody reports how it ended; nil before that.
    var exitAnnounced: Int32?

    /// ``liveHeap``, made now if it is still to be made: by replaying the heap events this
    /// segment's trace holds so far (the pending chunk is written first), which are every
    /// event consumed from the ring up to now, in ring order; from then on the drainer keeps
    /// it up to date as each event comes. The blocks' ring positions are not in the trace:
    /// they are 0, as for inherited blocks (fork snapshots and scans do not use them).
    /// If the trace cannot be written or read back, the heap holds what could be read.
    func materializedLiveHeap() -> LiveTracker? {
        if let liveHeap { return liveHeap }
        guard replaysLiveHeap else { return nil }
        replaysLiveHeap = false
        let heap = LiveTracker(since: 0)
        liveHeap = heap
        try? writer.flush()
        // Strict: the trace has no end record yet, which ends the reading with `.truncated`
        // after every whole chunk was delivered (non-strict reading would log a salvage).
        guard var reader = try? TraceReader(path: path, strict: true) else { return heap }
        try? reader.forEach { record in
            switch record {
            case .allocation(_, let address, let size, let stack, let type):
                heap.allocate(address: address, size: size, stack: stack, type: type, position: 0)
            case .free(let function, let address):
                heap.free(address: address, realloc: function == .realloc)
            case .reallocUndo(let address):
                heap.undo(address: address)
            default:
                break
            }
        }
        keepReleasedFrames(of: heap)
        return heap
    }

    /// Stacks of `heap`'s blocks whose arena epoch was released before the heap was made:
    /// their frames are read back from the trace (one more pass, at the first fork only).
    private func keepReleasedFrames(of heap: LiveTracker) {
        var wanted = Set<UInt32>()
        heap.forEachBlock { if $0.stack != 0 && epochs.isReleased($0.stack) && epochs.retired($0.stack) == nil { wanted.insert($0.stack) } }
        guard !wanted.isEmpty, var reader = try? TraceReader(path: path, strict: true) else { return }
        var found: [UInt32: [UInt64]] = [:]
        try? reader.forEach { record in
            if case .stack(let id, let frames) = record, wanted.contains(id) { found[id] = frames }
        }
        epochs.keepRetired(found)
    }

    /// The frames of trace stack `id`: an inherited stack, a stack in an arena epoch still
    /// read, or one kept when its epoch was released.
    func frames(ofStack id: UInt32, scratch: UnsafeMutablePointer<UInt64>, scratchCount: Int) -> [UInt64] {
        if id >= InheritedHeap.firstID { return inheritedFrames[id] ?? [] }
        guard let plain = epochs.plainRef(ofStack: id) else { return epochs.retired(id) ?? [] }
        return arenaFrames(plain, scratch: scratch, scratchCount: scratchCount)
    }

    /// The frames of the stack whose innermost node is `plain` in the arena (empty if the
    /// chain is malformed).
    func arenaFrames(_ plain: UInt32, scratch: UnsafeMutablePointer<UInt64>, scratchCount: Int) -> [UInt64] {
        let n = hg_read_stack(raw, plain, scratch, UInt32(scratchCount))
        return Array(UnsafeBufferPointer(start: scratch, count: Int(n)))
    }

    /// A program an image (or a child it started) exec'd, as its `HG_K_EXEC` record says.
    struct ExecedProgram {
        /// The last component of the path it was exec'd by (may be empty).
        var name: String
        /// The environment it was given no longer preloads heapgen.
        var environmentDropped: Bool
        /// When the collector read the exec's record, or saw the exec (monotonic ns; 0 unknown).
        var execNanoseconds: UInt64 = 0
        /// The signal that killed it within ``RecordingLoop/killedBeforeHelloNanoseconds``
        /// of its exec: too soon for heapgen to start in it (a test killing its child).
        var killedEarlyBy: Int32?
    }

    /// Whether a block this image allocated itself (not one inherited at its fork) may be
    /// live now: false only when the collector's live heap shows none.
    func mayHaveOwnLiveBlocks() -> Bool {
        guard let heap = materializedLiveHeap() else { return true }
        var own = false
        heap.forEachBlock { if $0.stack < InheritedHeap.firstID { own = true } }
        return own
    }

    /// The stack ids live blocks use now, in the collector's live heap and the control
    /// channel's tracker (those that exist).
    func liveStackIDs() -> Set<UInt32> {
        var ids = Set<UInt32>()
        for tracker in [liveHeap, control.tracker] {
            tracker?.forEachBlock { if $0.stack != 0 { ids.insert($0.stack) } }
        }
        return ids
    }

    /// The name of type `id`, if this image defined it.
    func typeName(_ id: UInt32) -> String? {
        control.typeNames[id]
    }

    init(raw: UnsafeMutablePointer<hg_segment>, origin: ProcessOrigin, image: Int, path: String, writer: TraceWriter) {
        self.raw = raw
        self.epochs = ArenaEpochs(halfBytes: raw.pointee.arena_half)
        self.pid = raw.pointee.pid
        self.ppid = raw.pointee.ppid
        self.origin = origin
        self.image = image
        self.path = path
        self.writer = writer
    }

    deinit {
        hg_segment_close(raw)
        raw.deallocate()
    }

    /// The shim's counters, read now.
    func counters() -> hg_counters {
        var c = hg_counters()
        hg_segment_counters(raw, &c)
        return c
    }
}
