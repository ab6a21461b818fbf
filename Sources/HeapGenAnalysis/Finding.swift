// A site whose memory the cycles left behind.

/// A site judged abandoned, leaked or a cache.
///
/// Deltas are measured on the site's live objects and bytes at the marks (the
/// live count at a cycle's closing mark minus the count at its opening mark), not
/// on "allocated in the cycle and still alive": a bounded cache that evicts one
/// entry for each one it inserts is flat.
public struct Finding: Codable, Sendable, Equatable, PerCycleSeries {
    /// Kinds, in report order.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// Grew in every judged cycle (up to ``AnalysisOptions/toleratedMisses`` misses, and in
        /// more than half of them), grew overall, and was still above its level at the start of the judged cycles at
        /// the final snapshot: memory still referenced but never used again.
        case abandoned
        /// Some block of the site live at the end of the trace is in
        /// ``AnalysisOptions/unreachable`` (``leakedObjects`` of them). Takes precedence over
        /// the other kinds.
        case leaked
        /// Not abandoned; rose above its setup level (live at the first mark) at some cycle's
        /// closing mark (in the warm-up or early cycles), then did not grow at all (thresholds
        /// ignored) in the last half (rounded up) of the judged cycles, and still held more than
        /// its setup level at the final snapshot. Listed apart; never a failure.
        case cache

        /// Report order: abandoned, leaked, cache.
        var order: Int {
            switch self {
            case .abandoned: 0
            case .leaked: 1
            case .cache: 2
            }
        }
    }

    /// Abandoned, leaked or cache.
    public var kind: Kind
    /// Stack id of the site (frames in ``Analysis/stacks``).
    public var stackID: UInt32
    /// Swift type id of the site (0 = not a Swift object).
    public var typeID: UInt32
    /// Demangled name of the Swift type, if any.
    public var typeName: String?
    /// Number of cycles judged (all cycles after the warm-up).
    public var cycles: Int
    /// Judged cycles that grew.
    public var cyclesWithGrowth: Int
    /// Change of the site's live objects over every cycle, warm-up included (index 0 = cycle 1),
    /// sparse (``objectsPerCycle`` is the plain array).
    public var objectsSeries: CycleSeries
    /// Change of the site's live bytes over every cycle, warm-up included (index 0 = cycle 1),
    /// sparse (``bytesPerCycle`` is the plain array).
    public var bytesSeries: CycleSeries
    /// Blocks of the site live at the final snapshot that were allocated in a judged cycle:
    /// what the cycles left behind.
    public var survivingObjects: UInt64
    /// Requested bytes of those blocks.
    public var survivingBytes: UInt64
    /// Mean of ``bytesPerCycle`` over the judged cycles (0 if none were judged).
    public var averageBytesPerCycle: Double
    /// Mean of ``objectsPerCycle`` over the judged cycles (0 if none were judged).
    public var averageObjectsPerCycle: Double
    /// First cycle (1-based, warm-up included) that grew; `nil` if none did.
    public var firstCycleWithGrowth: Int?
    /// Live blocks of the site at the final snapshot (whenever allocated).
    public var snapshotObjects: UInt64
    /// Live requested bytes of the site at the final snapshot.
    public var snapshotBytes: UInt64
    /// Live blocks of the site at the end of the trace.
    public var liveAtExitObjects: UInt64
    /// Live requested bytes of the site at the end of the trace.
    public var liveAtExitBytes: UInt64
    /// The scope judged (``CycleScope/title``, e.g. `expectNoGrowth testLeaky() (LeakTests.swift:31)`);
    /// `nil` for the marks outside every scope. The cycles, series and survivors of a scope's
    /// finding are the scope's own (cycle 1 = the scope's first cycle).
    public var scope: String? = nil
    /// For a site abandoned only from some cycle on (a leak that starts mid-run): the first
    /// cycle (1-based, warm-up included) of the growing run; `nil` when it grew across all judged
    /// cycles. Its averages are then over the cycles from this one on.
    public var onsetCycle: Int? = nil
    /// Cycles from ``onsetCycle`` on that grew; `nil` without an onset.
    public var cyclesWithGrowthSinceOnset: Int? = nil
    /// Leaked findings: the site's blocks live at the end of the trace that are unreachable
    /// (a site may leak 9 of its 10 blocks); `nil` for other kinds.
    public var leakedObjects: UInt64?
    /// Leaked findings: requested bytes of those blocks; `nil` for other kinds.
    public var leakedBytes: UInt64?
    /// Leaked findings: of ``leakedObjects``, the blocks only another unreachable block
    /// reaches (indirect leaks, valgrind's and LeakSanitizer's split); `nil` for other kinds.
    public var indirectObjects: UInt64?
    /// Leaked findings: requested bytes of those indirect blocks.
    public var indirectBytes: UInt64?
    /// Leaked findings: the sites of the direct leaks owning the indirect ones (sorted);
    /// `nil` when there are none.
    public var leakOwners: [SiteID]?

    /// Creates a finding (the analyzer makes these; public for tests and tools).
    public init(kind: Kind, stackID: UInt32, typeID: UInt32, typeName: String?, cycles: Int,
                cyclesWithGrowth: Int, objectsPerCycle: [Int], bytesPerCycle: [Int],
                survivingObjects: UInt64, survivingBytes: UInt64, averageBytesPerCycle: Double,
                averageObjectsPerCycle: Double, firstCycleWithGrowth: Int?, snapshotObjects: UInt64,
                snapshotBytes: UInt64, liveAtExitObjects: UInt64, liveAtExitBytes: UInt64) {
        self.kind = kind
        self.stackID = stackID
        self.typeID = typeID
        self.typeName = typeName
        self.cycles = cycles
        self.cyclesWithGrowth = cyclesWithGrowth
        self.objectsSeries = CycleSeries(objectsPerCycle)
        self.bytesSeries = CycleSeries(bytesPerCycle)
        self.survivingObjects = survivingObjects
        self.survivingBytes = survivingBytes
        self.averageBytesPerCycle = averageBytesPerCycle
        self.averageObjectsPerCycle = averageObjectsPerCycle
        self.firstCycleWithGrowth = firstCycleWithGrowth
        self.snapshotObjects = snapshotObjects
        self.snapshotBytes = snapshotBytes
        self.liveAtExitObjects = liveAtExitObjects
        self.liveAtExitBytes = liveAtExitBytes
    }


    /// The JSON keys are those of the plain arrays (the series encode as arrays).
    private enum CodingKeys: String, CodingKey {
        case kind, stackID, typeID, typeName, cycles, cyclesWithGrowth
        case objectsSeries = "objectsPerCycle", bytesSeries = "bytesPerCycle"
        case survivingObjects, survivingBytes, averageBytesPerCycle, averageObjectsPerCycle, firstCycleWithGrowth
        case snapshotObjects, snapshotBytes, liveAtExitObjects, liveAtExitBytes
        case scope, onsetCycle, cyclesWithGrowthSinceOnset
        case leakedObjects, leakedBytes, indirectObjects, indirectBytes, leakOwners
    }

    /// Report order: kind (abandoned, leaked, cache), then average bytes per cycle
    /// descending, average objects per cycle descending, stack id, type id.
    public static func reportOrder(_ a: Finding, _ b: Finding) -> Bool {
        if a.kind != b.kind { return a.kind.order < b.kind.order }
        if a.averageBytesPerCycle != b.averageBytesPerCycle { return a.averageBytesPerCycle > b.averageBytesPerCycle }
        if a.averageObjectsPerCycle != b.averageObjectsPerCycle {
            return a.averageObjectsPerCycle > b.averageObjectsPerCycle
        }
        if a.stackID != b.stackID { return a.stackID < b.stackID }
        return a.typeID < b.typeID
    }
}
