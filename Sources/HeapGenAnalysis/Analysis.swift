// The result of a generation analysis.

import HeapGenTrace

/// Everything a generation analysis found in one trace: totals, the per-generation
/// table, the findings, and the sites, stacks, types and modules needed to report them.
///
/// Kept small when encoded: ``sites`` holds the sites of findings plus the top
/// ``AnalysisOptions/maxSites`` by live bytes at exit and by peak bytes; ``stacks`` holds
/// the frames of the stacks those sites use. An analysis made by ``GenerationAnalyzer``
/// also keeps the live counts of *every* site at the marks (sparse) and every stack
/// definition, for ``regrouped(by:)``; those are not encoded, and equality ignores them.
public struct Analysis: Codable, Sendable, Equatable {
    /// The options the analysis ran with (``AnalysisOptions/unreachable`` is not kept).
    public var options: AnalysisOptions
    /// Counts over the whole trace.
    public var totals: AnalysisTotals
    /// Every mark of the trace, in order, settle marks included.
    public var marks: [GenerationMark]
    /// Where "still live after the cycles" was measured.
    public var snapshot: SnapshotPoint
    /// Setup, cycles, tail (see ``GenerationStats``).
    public var generations: [GenerationStats]
    /// Number of cycles (ordinary marks minus one, at least 0).
    public var cycles: Int
    /// Cycles after the warm-up, judged for growth. Growth findings need at least 2.
    public var judgedCycles: Int
    /// Abandoned, then leaked, then cache findings (see ``Finding/reportOrder(_:_:)``), each
    /// site (raw stack and type) judged alone; ``regrouped(by:)`` judges sites of one source
    /// call together.
    public var findings: [Finding]
    /// Sites of findings plus the top sites by live bytes at exit and by peak bytes;
    /// ordered by live bytes at exit, peak bytes, stack id, type id.
    public var sites: [AllocationSite]
    /// Number of distinct sites in the trace.
    public var siteCount: Int
    /// Every Swift type with its sites summed; ordered by snapshot bytes descending, then type id.
    public var typeRollups: [TypeRollup]
    /// Names of the Swift types of the trace.
    @IDKeyed public var typeNames: [UInt32: String]
    /// Frames (innermost first) of the stacks used by ``sites`` and ``findings``.
    @IDKeyed public var stacks: [UInt32: [UInt64]]
    /// Record position (see ``ModuleEvent/recordIndex``) where each stack in ``stacks`` was
    /// defined: its frames belong to the modules loaded at that point.
    @IDKeyed public var stackRecordIndices: [UInt32: UInt64]
    /// Every module load and unload, in trace order.
    public var modules: [ModuleEvent]
    /// The process record (pid 0 and an empty executable if the trace had none).
    public var process: ProcessRecord
    /// The end record; `nil` if the records given to the analyzer had none.
    public var end: EndRecord?
    /// Caveats: too few cycles to judge, lost events, ignored marks...
    public var notes: [String]
    /// Suppression lines the program's `__lsan_default_suppressions()` returned at exit
    /// (`heapgen record --leaks`); `nil` if it defines none.
    public var programSuppressions: String?
    /// What heapgen warned about the process while recording it (`recordingWarning`
    /// records): allocations it could not see. Also the first of ``notes``.
    public var recordingWarnings: [String] = []
    /// Timed cycles after the warm-up in which the program made no heap event: each merged
    /// into the next, so not in ``judgedCycles``. Not encoded.
    public var idleCycles = 0
    /// The first frees of addresses that were not live (``StrayFreeExplainer/maxExplained``),
    /// explained; ``AnalysisTotals/untrackedFrees`` counts them all. Not encoded.
    public var strayFrees: [StrayFree] = []
    /// The curves of every site, for ``regrouped(by:)``. Neither encoded nor compared.
    var regrouping = RegroupingData()
    /// Stacks the recording cut at its frame limit (`stackTruncated` records): their
    /// outermost callers are missing. Stack id → frames recorded, for the stacks a report
    /// can ask about (of findings, regrouping candidates, sites live at exit or at a mark,
    /// the reference graph's blocks). Not encoded.
    public var truncatedStacks: [UInt32: Int] = [:]
    /// The reference graph of the final snapshot (see ``RetentionGraph``), when the trace has
    /// a `referenceGraph` record. Not encoded.
    public var retentionGraph: RetentionGraph?

    private enum CodingKeys: String, CodingKey {
        case options, totals, marks, snapshot, generations, cycles, judgedCycles, findings, sites, siteCount
        case typeRollups, typeNames, stacks, stackRecordIndices, modules, process, end, notes, programSuppressions
        case recordingWarnings
    }

    init(options: AnalysisOptions, totals: AnalysisTotals, marks: [GenerationMark], snapshot: SnapshotPoint,
         generations: [GenerationStats], cycles: Int, judgedCycles: Int, findings: [Finding],
         sites: [AllocationSite], siteCount: Int, typeRollups: [TypeRollup], typeNames: [UInt32: String],
         stacks: [UInt32: [UInt64]], stackRecordIndices: [UInt32: UInt64], modules: [ModuleEvent],
         process: ProcessRecord, end: EndRecord?, notes: [String]) {
        self.options = options
        self.totals = totals
        self.marks = marks
        self.snapshot = snapshot
        self.generations = generations
        self.cycles = cycles
        self.judgedCycles = judgedCycles
        self.findings = findings
        self.sites = sites
        self.siteCount = siteCount
        self.typeRollups = typeRollups
        self.typeNames = typeNames
        self.stacks = stacks
        self.stackRecordIndices = stackRecordIndices
        self.modules = modules
        self.process = process
        self.end = end
        self.notes = notes
    }

    /// The kept site for (`stackID`, `typeID`), if it is in ``sites``.
    public func site(stackID: UInt32, typeID: UInt32) -> AllocationSite? {
        sites.first { $0.stackID == stackID && $0.typeID == typeID }
    }
}
