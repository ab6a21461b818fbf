// Replays the live heap of a trace record by record, per allocation site.

import HeapGenTrace

/// An allocation site: a (stack id, Swift type id) pair of one trace, as in ``AllocationSite``.
public struct SiteKey: Hashable, Sendable {
    public var stack: UInt32
    public var type: UInt32

    public init(stack: UInt32, type: UInt32) {
        self.stack = stack
        self.type = type
    }
}

/// A block live at the current point of a ``LiveHeapReplay``.
public struct LiveBlockInfo: Sendable {
    public var address: UInt64
    /// Requested bytes.
    public var size: UInt64
    /// Index in ``LiveHeapReplay/sites``.
    public var site: Int
    /// Marks (of any kind) seen before the block was allocated.
    public var epoch: Int
}

/// Replays the heap of one trace in order: which blocks are live, per site, at every point.
///
/// One pass, memory proportional to the live blocks plus the sites and stacks of the trace
/// (never to the number of events). Feed every record with ``consume(_:)``; at any point the
/// per-site live counts are in ``liveObjects`` / ``liveBytes`` and ``forEachLiveBlock(_:)``
/// walks the live blocks. ``finish(trace:)`` gives what symbolication needs.
///
/// Semantics are those of ``GenerationAnalyzer`` and ``TraceSummary``, since all three replay
/// heap events with `HeapGenTrace`'s `LiveHeap` (one table, one realloc rule): the old block
/// of a realloc is set aside and comes back on a `reallocUndo` (with its size, site and
/// epoch); an allocation at an address already live replaces the old block; a free of an
/// address that is not live is ignored. `heapgen.settle` marks do not start a generation.
public struct LiveHeapReplay {
    /// What a record did.
    public enum Step {
        /// An allocation of `size` bytes at site `site` (index in ``sites``).
        case allocated(site: Int, size: UInt64)
        /// Mark `index` (0-based among all marks) with `label`; the heap is as it was at the mark.
        case mark(index: Int, label: String)
        /// Anything else.
        case other
    }

    /// Every site seen so far, in order of first allocation.
    public private(set) var sites: [SiteKey] = []
    /// Live blocks per site now.
    public private(set) var liveObjects: [Int] = []
    /// Live requested bytes per site now.
    public private(set) var liveBytes: [Int] = []
    /// Marks seen so far (of any kind): the epoch of a block allocated now.
    public private(set) var markCount = 0
    /// Generation of each epoch: ordinary marks seen before it (settle marks do not count).
    public private(set) var epochGeneration: [Int] = [0]
    /// Per site: live blocks allocated since ``countAddedFromNow()`` was last called (empty before).
    public private(set) var addedObjects: [Int] = []
    /// Per site: live requested bytes of those blocks.
    public private(set) var addedBytes: [Int] = []
    /// Blocks of this epoch or later count as added; `nil`: not counting.
    private var addedEpoch: Int32?

    /// Live blocks and pending reallocs (a class: copied before a change if shared, so the
    /// replay keeps value semantics).
    private var blocks = LiveHeap<Block>()
    private var siteIndex: [SiteKey: Int] = [:]
    private var stacks: [UInt32: [UInt64]] = [:]
    private var stackPositions: [UInt32: UInt64] = [:]
    /// Gets every record but heap events and stacks: keeps the module map, marks, types,
    /// process and end, so ``ModuleTimeline/module(containing:at:)`` works on its result.
    private var context = GenerationAnalyzer(options: AnalysisOptions(maxSites: 0))
    /// Keeps every stack's frames (else ``TraceContext/withStacks(_:)`` reads the needed ones again).
    private let keepingFrames: Bool
    /// Records given to `context`: the "record index" space of its module map.
    private var contextRecords: UInt64 = 0
    private var generation = 0

    /// What the replay keeps about a live block.
    private struct Block {
        var size: UInt64
        var site: Int32
        var epoch: Int32
    }

    /// - Parameter keepingFrames: keep every stack's frames as the trace defines them (what
    ///   an export of every site needs); false keeps none, and ``TraceContext/withStacks(_:)``
    ///   reads the few a caller names again from the trace. A test suite's trace defines
    ///   millions of stacks: 2.4 GB of frames for a diff that names a few thousand.
    public init(keepingFrames: Bool = true) {
        self.keepingFrames = keepingFrames
    }

    /// Live blocks now.
    public var liveBlockCount: Int { blocks.count }

    /// Applies a heap event to the live blocks and the per-site counts.
    private mutating func apply(_ event: LiveHeapEvent<Block>) {
        if !isKnownUniquelyReferenced(&blocks) { blocks = blocks.copy() }
        let change = blocks.apply(event)
        if let old = change.removed { release(old) }
        if let new = change.added { add(new) }
    }

    /// Takes the next record of the trace.
    @discardableResult
    public mutating func consume(_ record: TraceRecord) -> Step {
        switch record {
        case let .allocation(_, address, size, stack, type):
            let site = siteOf(SiteKey(stack: stack, type: type))
            let block = Block(size: size, site: Int32(site), epoch: Int32(truncatingIfNeeded: markCount))
            apply(.allocation(address: address, block: block))
            return .allocated(site: site, size: size)
        case let .free(function, address):
            apply(function == .realloc ? .reallocFree(address: address) : .free(address: address))
            return .other
        case let .reallocUndo(address):
            apply(.reallocUndo(address: address))
            return .other
        case let .stack(id, frames):
            if keepingFrames {
                stacks[id] = frames
                stackPositions[id] = contextRecords
            }
            return .other
        case let .mark(label, _, _):
            feedContext(record)
            let index = markCount
            markCount += 1
            if label != AnalysisOptions.settleLabel { generation += 1 }
            epochGeneration.append(generation)
            return .mark(index: index, label: label)
        default:
            feedContext(record)
            return .other
        }
    }

    /// From now on, counts per site the live blocks allocated after this point
    /// (``addedObjects``, ``addedBytes``), starting from zero.
    public mutating func countAddedFromNow() {
        addedEpoch = Int32(truncatingIfNeeded: markCount)
        addedObjects = [Int](repeating: 0, count: sites.count)
        addedBytes = [Int](repeating: 0, count: sites.count)
    }

    /// Calls `body` for every block live now (in no particular order).
    public func forEachLiveBlock(_ body: (LiveBlockInfo) throws -> Void) rethrows {
        try blocks.forEach { address, block in
            try body(LiveBlockInfo(address: address, size: block.size, site: Int(block.site), epoch: Int(block.epoch)))
        }
    }

    /// What symbolication and reporting need from the records consumed so far.
    public func finish(trace: String) -> TraceContext {
        TraceContext(trace: trace, analysis: context.finish(), sites: sites, stacks: stacks,
                     stackPositions: stackPositions, framesKept: keepingFrames)
    }

    // MARK: - Private

    private mutating func feedContext(_ record: TraceRecord) {
        context.consume(record)
        contextRecords &+= 1
    }

    /// Whether ``consume(_:)`` gives `record` to the context (and so counts it in the
    /// positions of ``TraceContext/stackPositions``): all but heap events and stacks.
    static func feedsContext(_ record: TraceRecord) -> Bool {
        switch record {
        case .allocation, .free, .reallocUndo, .stack: false
        default: true
        }
    }

    private mutating func siteOf(_ key: SiteKey) -> Int {
        if let s = siteIndex[key] { return s }
        let s = sites.count
        sites.append(key)
        liveObjects.append(0)
        liveBytes.append(0)
        if addedEpoch != nil {
            addedObjects.append(0)
            addedBytes.append(0)
        }
        siteIndex[key] = s
        return s
    }

    private mutating func add(_ block: Block) {
        liveObjects[Int(block.site)] &+= 1
        liveBytes[Int(block.site)] &+= Int(truncatingIfNeeded: block.size)
        if let addedEpoch, block.epoch >= addedEpoch {
            addedObjects[Int(block.site)] &+= 1
            addedBytes[Int(block.site)] &+= Int(truncatingIfNeeded: block.size)
        }
    }

    private mutating func release(_ block: Block) {
        liveObjects[Int(block.site)] &-= 1
        liveBytes[Int(block.site)] &-= Int(truncatingIfNeeded: block.size)
        if let addedEpoch, block.epoch >= addedEpoch {
            addedObjects[Int(block.site)] &-= 1
            addedBytes[Int(block.site)] &-= Int(truncatingIfNeeded: block.size)
        }
    }
}

/// What is needed to name the sites of a trace after a replay: their stacks, the module
/// map, the marks, the type names, the process.
public struct TraceContext: Sendable {
    /// The trace's path (or name).
    public var trace: String
    /// A generation analysis of the trace's records without heap events: its marks, modules,
    /// type names, process and end record are the trace's; its sites and totals are empty.
    public var analysis: Analysis
    /// Sites in the order of the replay (indices of the replay's per-site arrays).
    public var sites: [SiteKey]
    /// Frames (innermost first) of every stack of the trace (of those named to
    /// ``withStacks(_:)`` when the replay kept none).
    public var stacks: [UInt32: [UInt64]]
    /// Per stack: the position to pass to ``ModuleTimeline/module(containing:at:)`` of
    /// ``analysis`` for its frames.
    public var stackPositions: [UInt32: UInt64]

    /// False when the replay kept no frames (``LiveHeapReplay/init(keepingFrames:)``).
    var framesKept: Bool

    init(trace: String, analysis: Analysis, sites: [SiteKey], stacks: [UInt32: [UInt64]],
         stackPositions: [UInt32: UInt64], framesKept: Bool) {
        self.trace = trace
        self.analysis = analysis
        self.sites = sites
        self.stacks = stacks
        self.stackPositions = stackPositions
        self.framesKept = framesKept
    }

    /// This context with the frames and positions of the stacks `ids`, read again from the
    /// trace file when the replay kept none (the same records, counted the same way).
    ///
    /// - Throws: ``TraceError`` if the trace cannot be read again.
    public func withStacks(_ ids: [UInt32]) throws -> TraceContext {
        guard !framesKept else { return self }
        var needed = IdSet()
        for id in ids { needed.insert(id) }
        var found = self
        found.framesKept = true
        try forEachStack(in: needed) { id, frames, position in
            found.stacks[id] = frames
            found.stackPositions[id] = position
        }
        return found
    }

    /// Calls `body` with the frames (innermost first) and position of each stack of `ids`, in
    /// trace order: from the kept frames, or read again from the trace file, one stack at a
    /// time (an export of millions of stacks keeps none of them). A stack the trace defines
    /// twice comes twice, as ``stacks`` keeps the later one.
    ///
    /// - Throws: ``TraceError`` if the trace cannot be read again, or what `body` throws.
    public func forEachStack(in ids: IdSet,
                             _ body: (_ id: UInt32, _ frames: [UInt64], _ position: UInt64) throws -> Void) throws {
        if framesKept {
            let kept = stackPositions.filter { ids.contains($0.key) }.sorted { ($0.value, $0.key) < ($1.value, $1.key) }
            for (id, position) in kept { try body(id, stacks[id] ?? [], position) }
            return
        }
        var reader = try TraceReader(path: trace)
        var position: UInt64 = 0
        try reader.forEach { record in
            if case let .stack(id, frames) = record, ids.contains(id) {
                try body(id, frames, position)
            }
            if LiveHeapReplay.feedsContext(record) { position &+= 1 }
        }
    }

    /// Every mark of the trace, in order (settle marks included).
    public var marks: [GenerationMark] { analysis.marks }

    /// Demangled name of Swift type `id`, if any.
    public func typeName(_ id: UInt32) -> String? {
        id == 0 ? nil : analysis.typeNames[id]
    }
}
