// One-pass generation analysis of a trace.

import HeapGenTrace

/// Finds allocation sites that grow in every push/pop cycle of a trace (abandoned
/// memory), tells them from caches and transient spikes, and reports what is live at
/// the marks and at exit.
///
/// Feed the records of one trace in order with ``consume(_:)``, then call ``finish()``
/// (which may be called at any point, and again after more records). One pass; memory
/// is proportional to the live blocks plus sites + marks + the points of the site series
/// (a site's live counts are kept only at marks where they changed), never to
/// sites × marks, nor to the number of events.
///
/// ## Semantics
/// - **Generations** are split by ordinary marks (see ``GenerationStats``). A mark labelled
///   ``AnalysisOptions/settleLabel`` after the last ordinary mark is not a boundary; the
///   first such mark is the *final snapshot* (``SnapshotPoint``). A settle-labelled mark
///   followed by ordinary marks is ignored.
/// - **Realloc**: the rule of ``LiveHeap``, shared with ``TraceSummary`` and every other
///   replay. `free(.realloc, old)` releases `old` and keeps it aside; a later
///   `reallocUndo(old)` (the realloc failed) makes it live again with its size, site and
///   generation. The `allocation(.realloc, new)` of a successful realloc is a new block of
///   the realloc's site, in the current generation. Events carry no thread, so a successful
///   realloc cannot be paired with the block it replaced; blocks kept aside stay until the
///   address is allocated or freed by a realloc again, or until more than 4096 are kept
///   (the oldest half goes). A stale entry is harmless: an undo always follows its own
///   `free(.realloc)` of that address.
/// - A free of an address that is not live is counted in ``AnalysisTotals/untrackedFrees``.
/// - **Sites** are (stack id, type id) pairs; see ``AllocationSite`` and ``TypeRollup``. Stack
///   ids that are one code path in different module load epochs (the shim defines every
///   stack again after a module load or unload) count as the first of them
///   (``StackIdentity``), so a library loaded and unloaded k times is one site, not k.
///   The analysis keeps the live counts of every site at the marks, so that sites a caller
///   knows to be one (a source call the compiler duplicated) can be judged together:
///   ``Analysis/regrouped(by:)``.
/// - **Classification** (growth findings) is described on ``Finding/Kind``. A cycle *grows*
///   when the site's live objects or bytes at its closing mark exceed those at its opening
///   mark (subject to the thresholds of ``AnalysisOptions``).
public struct GenerationAnalyzer {
    /// Options of this analysis (normalised: no negative counts).
    public let options: AnalysisOptions

    /// Live blocks and reallocs that may still fail (copied on write: the analyzer is a value).
    var table = LiveHeap<Block>()

    // Sites.
    var sites = SiteTable()
    /// Per site with a point: (mark, live objects, live bytes) whenever they changed at a
    /// mark. Most sites of a test suite are never live at a mark: a dictionary, not an
    /// empty array for each (8 bytes a site).
    var series: [UInt32: [SeriesPoint]] = [:]
    /// Sites changed since the last mark, one bit each, and the words of ``dirtyBits`` that
    /// have a bit set (a list of sites grew to every site in a trace without marks).
    var dirtyBits: [UInt64] = []
    var dirtyWords: [UInt32] = []
    /// Stack id → the first site seen with that stack, plus one.
    var stackSites = IdMap()
    /// (stack id << 32 | type id) → site, for a stack's sites after its first (few: a stack
    /// nearly always allocates one type).
    var siteByKey: [UInt64: UInt32] = [:]
    /// Per site with blocks live at the candidate snapshot that went since: those gone of
    /// judged cycles (emptied when the candidate changes).
    var goneSurvivors: [UInt32: ObjectsAndBytes] = [:]
    /// Stacks that are one code path (the shim defines stacks again after each module load
    /// or unload): see ``StackIdentity``.
    var stackIdentity = StackIdentity()
    /// Stack id → the first stack id with the same module-relative frames, where different.
    var stackAlias: [UInt32: UInt32] = [:]

    // Epochs: the parts between two marks of any kind. A block remembers its epoch.
    var epoch: UInt32 = 0
    /// Ordinary marks so far = the current generation.
    var generation = 0
    /// Generation of each epoch so far.
    var epochGeneration: [Int] = [0]
    /// Counters of the closed epochs, and of the current one.
    var epochCounts: [EpochCounts] = []
    var current = EpochCounts()
    var marks: [GenerationMark] = []

    // The final snapshot candidate: the last ordinary mark, or the first settle mark after it.
    var candidateMark: Int?
    /// Blocks with an epoch below this were allocated before the candidate mark.
    var candidateLimit: UInt32 = 0
    /// Per epoch: blocks live at the candidate that have gone since (net of reallocUndos).
    var goneSinceCandidate: [ObjectsAndBytes] = [ObjectsAndBytes()]
    var touchedEpochs: [UInt32] = []

    // Whole heap.
    var liveBytes = 0
    var peakBytes = 0
    var peakEpoch: UInt32 = 0
    var totals = AnalysisTotals()
    var recordIndex: UInt64 = 0
    /// The first frees of addresses that were not live (record, address), for
    /// ``StrayFreeExplainer``.
    var strays: [(record: UInt64, address: UInt64)] = []
    /// Keeps the loads of the batched consume from being optimised away.
    var touchSink: UInt64 = 0

    // Definitions.
    var typeNames: [UInt32: String] = [:]
    /// Every stack's frames, until the store holds more than ``frameNodeLimit`` nodes; then
    /// only the stacks ``finish()`` hands out, defined again by a second pass (``framesDropped``).
    var stackFrames = StackFrameStore()
    /// Stack id → depth, for the stacks of ``stackFrames`` the recording cut at its frame limit.
    var truncatedStacks: [UInt32: Int] = [:]
    /// Nodes ``stackFrames`` may hold before it is emptied; `Int.max`: every stack is kept.
    var frameNodeLimit = Int.max
    /// True once ``stackFrames`` outgrew ``frameNodeLimit``: stack definitions are no longer
    /// kept, and ``finish()`` needs ``defineNeededStacks(_:)`` first.
    var framesDropped = false
    var modules: [ModuleEvent] = []
    var process: ProcessRecord?
    var end: EndRecord?
    /// Addresses from the trace's `unreachable` records (a leak scan at exit), still
    /// unreachable: an address allocated again after the scan is dropped. Nil: no scan.
    var scannedUnreachable: Set<UInt64>?
    /// From the trace's `indirectLeaks` records: each indirectly leaked block's owner
    /// (a directly leaked block), by address; dropped like ``scannedUnreachable``.
    var scannedOwners: [UInt64: UInt64] = [:]
    /// `referenceGraph` records met so far, resolved against the live table; ``finish()``
    /// keeps the one of the final snapshot.
    var graphs: [RetentionGraph] = []
    /// From `programSuppressions` records: the program's own LeakSanitizer suppressions.
    var programSuppressions: String?
    /// From `recordingWarning` records.
    var recordingWarnings: [String] = []

    /// Prefix-tree nodes of frames ``analyze(path:options:)`` keeps while it reads (~20 MB).
    ///
    /// A test suite's trace defines millions of stacks (28 M nodes, 780 MB for the 3.8 M
    /// stacks of swift-argument-parser's tests), but a report needs the frames of a few
    /// thousand: past this many nodes the first pass drops them and a second pass reads
    /// again only the definitions ``finish()`` can hand out. Smaller traces keep them all
    /// and are read once.
    static let defaultFrameNodeLimit = 1 << 20

    /// Creates an analyzer with `options` (negative counts are taken as 0).
    public init(options: AnalysisOptions = AnalysisOptions()) {
        var options = options
        options.warmUp = max(0, options.warmUp)
        options.toleratedMisses = max(0, options.toleratedMisses)
        options.maxSites = max(0, options.maxSites)
        self.options = options
    }

    /// Reads the trace at `path` and analyzes it.
    ///
    /// - Throws: ``TraceError`` if the trace cannot be read or is invalid.
    public static func analyze(path: String, options: AnalysisOptions = AnalysisOptions()) throws -> Analysis {
        try analyze(path: path, options: options, frameNodeLimit: defaultFrameNodeLimit)
    }

    /// ``analyze(path:options:)`` that keeps frames only up to `frameNodeLimit` prefix-tree
    /// nodes during the first pass (see ``defaultFrameNodeLimit``).
    ///
    /// Once the frames are dropped the stack identity is compact too (see ``StackIdentity``):
    /// the second pass checks its answers, and a wrong one (two different stacks with one
    /// 64-bit key: ~2^32 distinct stacks make one likely) makes the trace read again with
    /// it refused. `fingerprintMask`: tests only.
    static func analyze(path: String, options: AnalysisOptions, frameNodeLimit: Int,
                        fingerprintMask: UInt32 = .max) throws -> Analysis {
        var refused: Set<UInt64> = []
        while true {
            var reader = try TraceReader(path: path)
            var analyzer = GenerationAnalyzer(options: options)
            analyzer.frameNodeLimit = frameNodeLimit
            analyzer.stackIdentity.refused = refused
            analyzer.stackIdentity.fingerprintMask = fingerprintMask
            try analyzer.firstPass(&reader)
            analyzer.stackIdentity = StackIdentity()  // not needed again: its memory for finish()
            if analyzer.framesDropped {
                let wrong = try analyzer.defineNeededStacks(&reader)
                if !wrong.isEmpty {
                    refused.formUnion(wrong.map { UInt64($0.key) << 32 | UInt64($0.value) })
                    continue
                }
            }
            var analysis = analyzer.finish()
            // An aggregated trace's addresses are made up: nothing to explain a stray by.
            if !reader.isAggregated {
                analysis.strayFrees = try StrayFreeExplainer.explain(path: path, strays: analyzer.strays, into: &analysis)
            } else {
                // Its frees come before its allocations within a generation (docs/trace-format.md).
                analysis.notes.append(Self.aggregatedPeakNote)
            }
            return analysis
        }
    }

    /// Said of an aggregated trace, whose counts keep no order within a generation.
    public static let aggregatedPeakNote = "The trace is aggregated (record --aggregate): the order of events within a generation is not kept, so the peak shown is the highest the counts prove, at most the real one."

    /// Reads every record of `reader` into the analyzer.
    private mutating func firstPass(_ reader: inout TraceReader) throws {
        var batch = EventBatch()
        try reader.forEach { record in
            switch record {
            case let .allocation(function, address, size, stack, type):
                batch.append(HeapEvent(kind: function == .inherited ? .inherited : .allocation, address: address,
                                       size: size, stack: stack, type: type))
            case let .free(function, address):
                batch.append(HeapEvent(kind: function == .realloc ? .reallocFree : .free, address: address))
            case let .reallocUndo(address):
                batch.append(HeapEvent(kind: .reallocUndo, address: address))
            default:
                consume(&batch)
                consume(record)
            }
            if batch.isFull { consume(&batch) }
        }
        consume(&batch)
    }

    /// Takes the buffered heap events, in order, and empties `batch`.
    ///
    /// Faster than one event at a time on large heaps: the live-table slots the batch will
    /// probe are loaded first, so that their cache misses overlap instead of stalling one
    /// event at a time.
    mutating func consume(_ batch: inout EventBatch) {
        guard batch.count > 0 else { return }
        if !isKnownUniquelyReferenced(&table) { table = table.copy() }
        var sink: UInt64 = 0
        for i in 0..<batch.count { sink ^= table.touch(batch.events[i].address) }
        touchSink ^= sink
        for i in 0..<batch.count {
            let event = batch.events[i]
            switch event.kind {
            case .allocation: allocate(address: event.address, size: event.size, stack: event.stack, type: event.type)
            case .inherited:
                allocate(address: event.address, size: event.size, stack: event.stack, type: event.type, inherited: true)
            case .free: free(address: event.address, realloc: false)
            case .reallocFree: free(address: event.address, realloc: true)
            case .reallocUndo: undo(address: event.address)
            }
            recordIndex &+= 1
        }
        batch.count = 0
    }

    /// Takes the next record of the trace.
    public mutating func consume(_ record: TraceRecord) {
        if !isKnownUniquelyReferenced(&table) { table = table.copy() }
        defer { recordIndex &+= 1 }
        switch record {
        case let .allocation(function, address, size, stack, type):
            allocate(address: address, size: size, stack: stack, type: type, inherited: function == .inherited)
        case let .free(function, address):
            free(address: address, realloc: function == .realloc)
        case let .reallocUndo(address):
            undo(address: address)
        case let .mark(label, time, origin):
            mark(label: label, time: time, origin: origin)
        case let .stack(id, frames):
            if !framesDropped {
                stackFrames.define(id, frames: frames, record: recordIndex)
                if stackFrames.nodeCount > frameNodeLimit {
                    stackFrames = StackFrameStore()
                    truncatedStacks = [:]
                    framesDropped = true
                    stackIdentity.compact()
                }
            }
            let first = stackIdentity.canonical(id, frames: frames)
            if first != id { stackAlias[id] = first }
        case let .stackTruncated(id):
            if !framesDropped { truncatedStacks[id] = stackFrames.depth(of: id) ?? 0 }
        case let .type(id, _, name):
            typeNames[id] = name
        case let .moduleLoad(module):
            stackIdentity.load(module)
            modules.append(ModuleEvent(kind: .load, loadBias: module.loadBias, module: module,
                                       recordIndex: recordIndex, generation: generation))
        case let .moduleUnload(loadBias):
            stackIdentity.unload(loadBias: loadBias)
            modules.append(ModuleEvent(kind: .unload, loadBias: loadBias, module: nil,
                                       recordIndex: recordIndex, generation: generation))
        case .threadStart:
            break
        case let .referenceGraph(graph):
            takeGraph(graph)
        case let .lost(count):
            totals.lostRecords &+= count
        case let .unreachable(addresses):
            if scannedUnreachable == nil { scannedUnreachable = [] }
            scannedUnreachable!.formUnion(addresses)
        case let .programSuppressions(text):
            programSuppressions = (programSuppressions ?? "") + text + (text.hasSuffix("\n") ? "" : "\n")
        case let .recordingWarning(text):
            recordingWarnings.append(text)
        case let .indirectLeaks(leaks):
            for leak in leaks { scannedOwners[leak.address] = leak.owner }
        case let .process(record):
            process = record
        case let .end(record):
            end = record
        }
    }

    /// Resolves each block of a reference graph against the live table at this position.
    private mutating func takeGraph(_ record: ReferenceGraphRecord) {
        let n = record.blocks.count
        var stacks = [UInt32](repeating: RetentionGraph.unknown, count: n)
        var types = [UInt32](repeating: 0, count: n)
        var epochs = [UInt32](repeating: UInt32.max, count: n)
        var sizes = [UInt64](repeating: 0, count: n)
        let stackOf = record.blocks.isEmpty ? [] : siteStacks()
        for (i, address) in record.blocks.enumerated() {
            guard let block = table.lookup(address) else { continue }
            stacks[i] = stackOf[Int(block.site)]
            types[i] = sites.type(Int(block.site))
            epochs[i] = block.epoch
            sizes[i] = block.size
        }
        let graph = RetentionGraph(record: record, stacks: stacks, types: types, epochs: epochs, sizes: sizes,
                                   marksBefore: marks.count)
        // A later graph of the same kind at the same mark count replaces the earlier one:
        // memory stays two graphs per mark at most (the mark's own, and a later one; in
        // practice one or two a trace).
        if let last = graphs.last, last.marksBefore == graph.marksBefore, last.isAtMark == graph.isAtMark {
            graphs.removeLast()
        }
        graphs.append(graph)
    }

    // MARK: Events

    @inline(__always)
    /// `inherited`: a block a forked child had from its parent at the fork: live, but
    /// not an allocation of this process (not counted as one).
    private mutating func allocate(address: UInt64, size: UInt64, stack: UInt32, type: UInt32, inherited: Bool = false) {
        totals.events &+= 1
        let stack = stackAlias.isEmpty ? stack : stackAlias[stack] ?? stack
        let site = siteIndex(stack: stack, type: type)
        if !inherited {
            totals.allocations &+= 1
            totals.allocatedBytes &+= size
            current.allocations &+= 1
            current.allocatedBytes &+= size
            sites.allocated(Int(site), size: size)
        }
        let block = Block(size: size, site: site, epoch: epoch)
        // A block allocated after the leak scan is not the one the scan judged.
        if scannedUnreachable != nil { scannedUnreachable!.remove(address) }
        if !scannedOwners.isEmpty { scannedOwners[address] = nil }
        if let old = table.apply(.allocation(address: address, block: block)).removed {
            totals.duplicateAllocations &+= 1
            released(old)
        }
        added(block)
    }

    @inline(__always)
    private mutating func free(address: UInt64, realloc: Bool) {
        totals.events &+= 1
        totals.frees &+= 1
        current.frees &+= 1
        guard let block = table.apply(realloc ? .reallocFree(address: address) : .free(address: address)).removed else {
            totals.untrackedFrees &+= 1
            if strays.count < StrayFreeExplainer.maxExplained { strays.append((recordIndex, address)) }
            return
        }
        released(block)
    }

    private mutating func undo(address: UInt64) {
        totals.events &+= 1
        totals.reallocUndos &+= 1
        let change = table.apply(.reallocUndo(address: address))
        guard let block = change.added else {
            totals.unmatchedReallocUndos &+= 1
            return
        }
        if let old = change.removed {
            totals.duplicateAllocations &+= 1
            released(old)
        }
        added(block)
    }

    /// A block became live (allocated, or restored by a reallocUndo).
    @inline(__always)
    private mutating func added(_ block: Block) {
        let size = Int(truncatingIfNeeded: block.size)
        sites.add(Int(block.site), size: block.size, epoch: epoch)
        markDirty(block.site)
        liveBytes &+= size
        if liveBytes > current.peakLiveBytes {
            current.peakLiveBytes = liveBytes
            if liveBytes > peakBytes {
                peakBytes = liveBytes
                peakEpoch = epoch
            }
        }
        if block.epoch < candidateLimit { changedSinceCandidate(block, by: -1) }
    }

    /// A block stopped being live (freed, or replaced by a duplicate allocation).
    @inline(__always)
    private mutating func released(_ block: Block) {
        let size = Int(truncatingIfNeeded: block.size)
        sites.remove(Int(block.site), size: block.size)
        markDirty(block.site)
        liveBytes &-= size
        if block.epoch < candidateLimit { changedSinceCandidate(block, by: 1) }
    }

    /// A block allocated before the candidate snapshot went (`sign` 1) or came back (-1).
    private mutating func changedSinceCandidate(_ block: Block, by sign: Int) {
        let e = Int(block.epoch)
        let size = Int(truncatingIfNeeded: block.size)
        if goneSinceCandidate[e].objects == 0 && goneSinceCandidate[e].bytes == 0 {
            touchedEpochs.append(block.epoch)
        }
        goneSinceCandidate[e].objects &+= sign
        goneSinceCandidate[e].bytes &+= sign &* size
        // Survivors count blocks of judged cycles only: generations after the warm-up,
        // before the current one (which is the tail, if the candidate is a settle mark).
        let g = epochGeneration[e]
        if g > options.warmUp && g < generation {
            goneSurvivors[block.site, default: ObjectsAndBytes()].objects &+= sign
            goneSurvivors[block.site, default: ObjectsAndBytes()].bytes &+= sign &* size
        }
    }

    // MARK: Marks

    private mutating func mark(label: String, time: UInt64, origin: MarkOrigin) {
        let index = marks.count
        // Record the sites that changed since the previous mark.
        for w in dirtyWords {
            var word = dirtyBits[Int(w)]
            dirtyBits[Int(w)] = 0
            while word != 0 {
                let s32 = w << 6 | UInt32(word.trailingZeroBitCount)
                word &= word &- 1
                let s = Int(s32)
                let objects = Int(sites[s].liveObjects), bytes = sites[s].liveBytes
                let last = series[s32]?.last
                if (last?.objects ?? 0) != objects || (last?.bytes ?? 0) != bytes {
                    series[s32, default: []].append(SeriesPoint(mark: UInt32(truncatingIfNeeded: index),
                                                                objects: objects, bytes: bytes))
                }
            }
        }
        dirtyWords.removeAll(keepingCapacity: true)

        let isSettle = label == AnalysisOptions.settleLabel
        marks.append(GenerationMark(index: index, label: label, timeNanoseconds: time, origin: origin,
                                    role: isSettle ? .settle : .boundary, eventPosition: totals.events,
                                    generation: generation, liveObjects: UInt64(table.count),
                                    liveBytes: UInt64(clamping: liveBytes)))
        totals.events &+= 1
        epochCounts.append(current)
        current = EpochCounts(peakLiveBytes: liveBytes)
        if !isSettle {
            generation += 1
            makeCandidate(index)
        } else if candidateMark.map({ marks[$0].role == .boundary }) ?? true {
            makeCandidate(index)
        }
        epoch &+= 1
        epochGeneration.append(generation)
        goneSinceCandidate.append(ObjectsAndBytes())
    }

    private mutating func makeCandidate(_ index: Int) {
        candidateMark = index
        candidateLimit = UInt32(truncatingIfNeeded: index + 1)
        goneSurvivors.removeAll()
        for e in touchedEpochs { goneSinceCandidate[Int(e)] = ObjectsAndBytes() }
        touchedEpochs.removeAll(keepingCapacity: true)
    }

    // MARK: Sites

    @inline(__always)
    private mutating func siteIndex(stack: UInt32, type: UInt32) -> UInt32 {
        site(stack: stack, type: type) ?? newSite(stack: stack, type: type)
    }

    /// A site for (`stack`, `type`), which has none yet.
    private mutating func newSite(stack: UInt32, type: UInt32) -> UInt32 {
        let site = UInt32(sites.count)
        sites.append(type: type)
        if sites.count > dirtyBits.count << 6 { dirtyBits.append(0) }
        if stackSites[stack] == 0 {
            stackSites.insert(stack, site &+ 1)
        } else {
            siteByKey[UInt64(stack) << 32 | UInt64(type)] = site
        }
        return site
    }

    /// Notes that `site`'s live counts changed since the last mark.
    @inline(__always)
    private mutating func markDirty(_ site: UInt32) {
        let w = Int(site &>> 6), bit: UInt64 = 1 &<< UInt64(site & 63)
        if dirtyBits[w] == 0 { dirtyWords.append(UInt32(w)) }
        dirtyBits[w] |= bit
    }

    /// Each site's stack, by site index (the map from stacks to sites turned around: the
    /// sites keep no stack, 4 bytes a site).
    func siteStacks() -> [UInt32] {
        var stacks = [UInt32](repeating: 0, count: sites.count)
        stackSites.forEach { stack, site in stacks[Int(site &- 1)] = stack }
        for (key, site) in siteByKey { stacks[Int(site)] = UInt32(truncatingIfNeeded: key >> 32) }
        return stacks
    }

    /// The site of (`stack`, `type`), if any allocation had it.
    @inline(__always)
    func site(stack: UInt32, type: UInt32) -> UInt32? {
        let first = stackSites[stack]
        if first == 0 { return nil }
        if sites.type(Int(first &- 1)) == type { return first &- 1 }
        return siteByKey[UInt64(stack) << 32 | UInt64(type)]
    }
}

// MARK: - Internal state types

/// An alloc, free or reallocUndo record without the enum's payload handling.
struct HeapEvent {
    enum Kind: UInt8 {
        case allocation, free, reallocFree, reallocUndo, inherited
    }

    var kind: Kind
    var address: UInt64
    var size: UInt64 = 0
    var stack: UInt32 = 0
    var type: UInt32 = 0
}

/// A fixed buffer of heap events for the batched `consume(_: inout EventBatch)`.
struct EventBatch {
    static let capacity = 64
    var events = [HeapEvent](repeating: HeapEvent(kind: .free, address: 0), count: capacity)
    var count = 0

    var isFull: Bool { count == Self.capacity }

    @inline(__always)
    mutating func append(_ event: HeapEvent) {
        events[count] = event
        count &+= 1
    }
}

/// What the analyzer keeps about one live block (16 bytes: the table's slots are 24).
struct Block: Equatable {
    /// Requested bytes.
    var size: UInt64
    /// Dense index of the allocation site.
    var site: UInt32
    /// Number of marks (of any kind) seen before the block was allocated.
    var epoch: UInt32
}

/// A site's live counts at a mark where they changed.
struct SeriesPoint {
    var mark: UInt32
    var objects: Int
    var bytes: Int
}

struct ObjectsAndBytes {
    var objects = 0
    var bytes = 0
}

/// Counters of one epoch.
struct EpochCounts {
    var allocations: UInt64 = 0
    var frees: UInt64 = 0
    var allocatedBytes: UInt64 = 0
    var peakLiveBytes = 0
}
