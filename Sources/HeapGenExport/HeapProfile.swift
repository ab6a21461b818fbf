// Per-site, per-generation allocation and in-use counts of a trace, for exports.

import HeapGenAnalysis
import HeapGenTrace

/// The four heap-profile values (pprof's sample types, in this order).
public struct HeapValues: Sendable, Equatable {
    /// Allocations made up to the point.
    public var allocObjects: Int64 = 0
    /// Requested bytes of those allocations.
    public var allocSpace: Int64 = 0
    /// Of those, blocks live at the point.
    public var inuseObjects: Int64 = 0
    /// Requested bytes of the blocks live at the point.
    public var inuseSpace: Int64 = 0

    public init(allocObjects: Int64 = 0, allocSpace: Int64 = 0, inuseObjects: Int64 = 0, inuseSpace: Int64 = 0) {
        self.allocObjects = allocObjects
        self.allocSpace = allocSpace
        self.inuseObjects = inuseObjects
        self.inuseSpace = inuseSpace
    }

    public var isZero: Bool { allocObjects == 0 && allocSpace == 0 && inuseObjects == 0 && inuseSpace == 0 }

    /// One of the values by its pprof name.
    public func value(_ sample: HeapSample) -> Int64 {
        switch sample {
        case .allocObjects: allocObjects
        case .allocSpace: allocSpace
        case .inuseObjects: inuseObjects
        case .inuseSpace: inuseSpace
        }
    }

    static func + (a: HeapValues, b: HeapValues) -> HeapValues {
        HeapValues(allocObjects: a.allocObjects &+ b.allocObjects, allocSpace: a.allocSpace &+ b.allocSpace,
                   inuseObjects: a.inuseObjects &+ b.inuseObjects, inuseSpace: a.inuseSpace &+ b.inuseSpace)
    }
}

/// pprof's heap sample types.
public enum HeapSample: String, CaseIterable, Sendable {
    case allocObjects = "alloc_objects"
    case allocSpace = "alloc_space"
    case inuseObjects = "inuse_objects"
    case inuseSpace = "inuse_space"

    /// `count` or `bytes`.
    public var unit: String {
        switch self {
        case .allocObjects, .inuseObjects: "count"
        case .allocSpace, .inuseSpace: "bytes"
        }
    }
}

/// A trace's heap profile at one point: per allocation site and generation, what was
/// allocated up to the point and what of it was live there. One pass over the trace; the
/// stacks are read again by ``forEachStack(including:_:)`` when an export needs them.
public struct HeapProfile: Sendable {
    /// One (site, generation) and its values.
    public struct Sample: Sendable {
        /// Index in ``TraceContext/sites`` of ``context``.
        public var site: Int
        /// The generation the allocations came from (see ``generationNames``).
        public var generation: Int
        public var values: HeapValues
    }

    public var context: TraceContext
    /// Where in-use was measured; allocations are counted up to the same point.
    public var point: ResolvedPoint
    /// Samples with at least one non-zero value, by site then generation.
    public var samples: [Sample]
    /// Per generation index: the label of the mark that ends it, followed by ` #index` of
    /// that mark when several generations end with the same label (or with an empty one);
    /// `end` for the generation that the end of the trace closes.
    public var generationNames: [String]

    /// Reads `trace` and counts its allocations up to `point` (end of trace by default).
    ///
    /// No stack frames are kept: ``forEachStack(including:_:)`` reads the stacks of the samples again,
    /// one at a time (a test suite's trace defines millions of them).
    ///
    /// - Throws: ``TraceError`` if the trace cannot be read, ``TracePointError`` if the point
    ///   is not in it.
    public static func load(trace: String, at point: TracePoint = .end) throws -> HeapProfile {
        var reader = try TraceReader(path: trace)
        var replay = LiveHeapReplay(keepingFrames: false)
        var watch = TracePointWatcher(point)
        /// Allocations per (site, epoch), all of them: the point may be decided later, and
        /// those of epochs after it are dropped below.
        var allocations = SiteEpochCounts()
        /// Live blocks per (site, epoch) at the point: taken again each time a point is
        /// reached (the last mark of a label is the one), so kept apart until the end.
        var inuse: [UInt64: (objects: Int64, bytes: Int64)] = [:]
        var pointEpochLimit: Int?   // allocations of epochs below this are before the point
        let key = SiteEpochCounts.key
        func takeInuse(_ replay: LiveHeapReplay) {
            inuse = [:]
            replay.forEachLiveBlock { b in
                inuse[key(b.site, b.epoch), default: (0, 0)].objects &+= 1
                inuse[key(b.site, b.epoch), default: (0, 0)].bytes &+= Int64(truncatingIfNeeded: b.size)
            }
        }
        if point == .start {
            pointEpochLimit = 0
        }
        try reader.forEach { record in
            switch replay.consume(record) {
            case let .allocated(site, size):
                allocations.add(site: site, epoch: replay.markCount, bytes: Int64(truncatingIfNeeded: size))
            case let .mark(index, label):
                if watch.reached(markIndex: index, label: label) {
                    takeInuse(replay)
                    pointEpochLimit = index + 1
                }
            case .other:
                break
            }
        }
        if watch.isAtEnd {
            takeInuse(replay)
            pointEpochLimit = replay.markCount + 1
        }
        let context = replay.finish(trace: trace)
        let resolved = try watch.resolve(marks: context.marks).get()
        let limit = pointEpochLimit ?? 0

        // Epochs to generations (settle marks end no generation, so two epochs may be one):
        // one sample per (site, epoch) first, then sorted and those of one generation merged.
        let generations = replay.epochGeneration
        replay = LiveHeapReplay(keepingFrames: false)   // its live blocks are counted: let them go
        func sample(_ k: UInt64, _ v: HeapValues) -> Sample {
            let epoch = Int(k & 0xffff_ffff)
            let g = epoch < generations.count ? generations[epoch] : generations.last ?? 0
            return Sample(site: Int(k >> 32), generation: g, values: v)
        }
        var unmerged: [Sample] = []
        unmerged.reserveCapacity(allocations.count)
        allocations.forEach { k, objects, bytes in
            var v = HeapValues()
            if Int(k & 0xffff_ffff) < limit {
                v.allocObjects = objects
                v.allocSpace = bytes
            }
            if let u = inuse.removeValue(forKey: k) {
                v.inuseObjects = u.objects
                v.inuseSpace = u.bytes
            }
            if !v.isZero { unmerged.append(sample(k, v)) }
        }
        allocations = SiteEpochCounts()
        for (k, u) in inuse { unmerged.append(sample(k, HeapValues(inuseObjects: u.objects, inuseSpace: u.bytes))) }
        inuse = [:]
        unmerged.sort { ($0.site, $0.generation) < ($1.site, $1.generation) }
        // Merged in place: a second array would be another 48 bytes a sample at the peak.
        var samples = unmerged
        unmerged = []
        var kept = 0
        for i in samples.indices {
            if kept > 0 && samples[kept - 1].site == samples[i].site && samples[kept - 1].generation == samples[i].generation {
                samples[kept - 1].values = samples[kept - 1].values + samples[i].values
            } else {
                samples[kept] = samples[i]
                kept += 1
            }
        }
        samples.removeSubrange(kept...)
        return HeapProfile(context: context, point: resolved, samples: samples,
                           generationNames: Self.generationNames(context.marks, count: (generations.last ?? 0) + 1))
    }

    /// Calls `body` for every stack of the samples, in trace order, with its frames
    /// (innermost first), its position (for ``ModuleTimeline``) and the indices in
    /// ``samples`` of its samples (ascending); then once with empty frames for the samples
    /// whose stack the trace does not define (stack 0: none was recorded). A stack the trace
    /// defines twice comes once, at its first definition.
    ///
    /// - Parameter including: whether a sample counts (by default all do).
    /// - Throws: ``TraceError`` if the trace cannot be read again, or what `body` throws.
    public func forEachStack(including: (Sample) -> Bool = { _ in true },
                             _ body: (_ frames: [UInt64], _ position: UInt64, _ samples: ArraySlice<Int>) throws -> Void) throws {
        // Sample indices by stack: one sorted array, not a dictionary of arrays.
        var byStack: [(stack: UInt32, sample: Int)] = []
        for (i, s) in samples.enumerated() where including(s) {
            byStack.append((context.sites[s.site].stack, i))
        }
        byStack.sort { ($0.stack, $0.sample) < ($1.stack, $1.sample) }
        let order = byStack.map(\.sample)
        var needed = IdSet()
        for e in byStack where e.stack != 0 { needed.insert(e.stack) }
        var done = IdSet()
        /// First index in `byStack` of `stack`.
        func first(_ stack: UInt32) -> Int {
            var low = 0, high = byStack.count
            while low < high {
                let mid = (low + high) / 2
                if byStack[mid].stack < stack { low = mid + 1 } else { high = mid }
            }
            return low
        }
        try context.forEachStack(in: needed) { id, frames, position in
            guard done.insert(id) else { return }
            let start = first(id)
            var end = start
            while end < byStack.count && byStack[end].stack == id { end += 1 }
            try body(frames, position, order[start..<end])
        }
        var undefined: [Int] = []
        for e in byStack where e.stack == 0 || !done.contains(e.stack) { undefined.append(e.sample) }
        if !undefined.isEmpty { try body([], UInt64.max, undefined.sorted()[...]) }
    }

    /// Names of generations 0..<count (see ``generationNames``).
    static func generationNames(_ marks: [GenerationMark], count: Int) -> [String] {
        let closing = marks.filter { $0.label != AnalysisOptions.settleLabel }
        var uses: [String: Int] = [:]
        for m in closing { uses[m.label, default: 0] += 1 }
        return (0..<count).map { g in
            guard g < closing.count else { return "end" }
            let m = closing[g]
            return m.label.isEmpty || uses[m.label, default: 0] > 1 ? "\(m.label.isEmpty ? "" : m.label + " ")#\(m.index)" : m.label
        }
    }
}

/// Allocations per (site, epoch) of a trace: a site's counts of its latest epoch in arrays
/// by site, earlier epochs in a dictionary. A trace without marks (a test suite's: millions
/// of sites) never uses the dictionary: 20 bytes a site instead of a 40-byte entry in a
/// table that doubles.
struct SiteEpochCounts {
    private var epoch: [Int32] = []
    private var objects: [Int64] = []
    private var bytes: [Int64] = []
    private var earlier: [UInt64: (objects: Int64, bytes: Int64)] = [:]

    /// Entries: (site, epoch) pairs with allocations.
    var count: Int { objects.count + earlier.count }

    /// The key of (`site`, `epoch`): `site << 32 | epoch`.
    static func key(_ site: Int, _ epoch: Int) -> UInt64 { UInt64(site) << 32 | UInt64(UInt32(truncatingIfNeeded: epoch)) }

    /// Counts an allocation of `bytes` at `site` in `epoch` (epochs of a site never go back).
    mutating func add(site: Int, epoch e: Int, bytes size: Int64) {
        if site >= objects.count {
            // Sites are numbered as they first allocate: this is the next one.
            epoch.append(contentsOf: repeatElement(Int32(e), count: site + 1 - objects.count))
            bytes.append(contentsOf: repeatElement(0, count: site + 1 - objects.count))
            objects.append(contentsOf: repeatElement(0, count: site + 1 - objects.count))
        }
        if Int(epoch[site]) != e {
            if objects[site] != 0 { earlier[Self.key(site, Int(epoch[site]))] = (objects[site], bytes[site]) }
            epoch[site] = Int32(truncatingIfNeeded: e)
            objects[site] = 0
            bytes[site] = 0
        }
        objects[site] &+= 1
        bytes[site] &+= size
    }

    /// Calls `body` with each (site << 32 | epoch) key and its counts, in no order.
    func forEach(_ body: (UInt64, Int64, Int64) -> Void) {
        for (k, v) in earlier { body(k, v.objects, v.bytes) }
        for site in objects.indices where objects[site] != 0 {
            body(Self.key(site, Int(epoch[site])), objects[site], bytes[site])
        }
    }
}

