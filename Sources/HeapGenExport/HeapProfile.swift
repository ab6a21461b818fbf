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
/// allocated up to the point and what of it was live there. One pass over the trace.
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
    /// - Throws: ``TraceError`` if the trace cannot be read, ``TracePointError`` if the point
    ///   is not in it.
    public static func load(trace: String, at point: TracePoint = .end) throws -> HeapProfile {
        var reader = try TraceReader(path: trace)
        var replay = LiveHeapReplay()
        var watch = TracePointWatcher(point)
        /// Allocations per (site, epoch), all of them: the point may be decided later.
        var allocations: [UInt64: (objects: Int64, bytes: Int64)] = [:]
        var inuse: [UInt64: (objects: Int64, bytes: Int64)]?
        var pointEpochLimit: Int?   // allocations of epochs below this are before the point
        func key(_ site: Int, _ epoch: Int) -> UInt64 { UInt64(site) << 32 | UInt64(epoch) }
        func takeInuse(_ replay: LiveHeapReplay) -> [UInt64: (objects: Int64, bytes: Int64)] {
            var counts: [UInt64: (objects: Int64, bytes: Int64)] = [:]
            replay.forEachLiveBlock { b in
                counts[key(b.site, b.epoch), default: (0, 0)].objects &+= 1
                counts[key(b.site, b.epoch), default: (0, 0)].bytes &+= Int64(truncatingIfNeeded: b.size)
            }
            return counts
        }
        if point == .start {
            inuse = [:]
            pointEpochLimit = 0
        }
        try reader.forEach { record in
            switch replay.consume(record) {
            case let .allocated(site, size):
                // Those after the point are dropped below (the final snapshot is known only at the end).
                allocations[key(site, replay.markCount), default: (0, 0)].objects &+= 1
                allocations[key(site, replay.markCount), default: (0, 0)].bytes &+= Int64(truncatingIfNeeded: size)
            case let .mark(index, label):
                if watch.reached(markIndex: index, label: label) {
                    inuse = takeInuse(replay)
                    pointEpochLimit = index + 1
                }
            case .other:
                break
            }
        }
        if watch.isAtEnd {
            inuse = takeInuse(replay)
            pointEpochLimit = replay.markCount + 1
        }
        let context = replay.finish(trace: trace)
        let resolved = try watch.resolve(marks: context.marks).get()
        let limit = pointEpochLimit ?? 0

        var merged: [UInt64: HeapValues] = [:]
        for (k, a) in allocations where Int(k & 0xffff_ffff) < limit {
            merged[k, default: HeapValues()].allocObjects = a.objects
            merged[k, default: HeapValues()].allocSpace = a.bytes
        }
        for (k, u) in inuse ?? [:] {
            merged[k, default: HeapValues()].inuseObjects = u.objects
            merged[k, default: HeapValues()].inuseSpace = u.bytes
        }
        // Epochs to generations.
        let generations = replay.epochGeneration
        var bySiteGeneration: [UInt64: HeapValues] = [:]
        for (k, v) in merged where !v.isZero {
            let epoch = Int(k & 0xffff_ffff)
            let g = epoch < generations.count ? generations[epoch] : generations.last ?? 0
            let site = Int(k >> 32)
            bySiteGeneration[key(site, g), default: HeapValues()] = bySiteGeneration[key(site, g), default: HeapValues()] + v
        }
        let samples = bySiteGeneration.sorted { $0.key < $1.key }.map {
            Sample(site: Int($0.key >> 32), generation: Int($0.key & 0xffff_ffff), values: $0.value)
        }
        return HeapProfile(context: context, point: resolved, samples: samples,
                           generationNames: Self.generationNames(context.marks, count: (generations.last ?? 0) + 1))
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

    /// Values per site, all generations summed.
    public var valuesBySite: [Int: HeapValues] {
        var out: [Int: HeapValues] = [:]
        for s in samples { out[s.site] = (out[s.site] ?? HeapValues()) + s.values }
        return out
    }
}
