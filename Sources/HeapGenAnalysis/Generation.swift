// One generation of the trace (the part between two ordinary marks).

/// Statistics of one generation, as in Instruments' *Mark Generation*.
///
/// With ordinary marks m1…mM, generation 0 (*setup*) is everything before m1,
/// generation g (1…M-1) lies between m_g and m_{g+1} and is *cycle g*, and
/// generation M (*tail*) is everything after mM. A trace without marks has one
/// generation, the setup, covering the whole trace. ``AnalysisOptions/settleLabel``
/// marks do not split generations.
///
/// A realloc that succeeds counts as an allocation (and its old block as a free)
/// in the generation where it happens; the new block belongs to that generation.
public struct GenerationStats: Codable, Sendable, Equatable {
    /// Where the generation lies in the push/pop structure of the trace.
    public enum Role: String, Codable, Sendable {
        /// Before the first mark.
        case setup
        /// Between two ordinary marks.
        case cycle
        /// After the last ordinary mark.
        case tail
    }

    /// 0 for the setup, g for cycle g, M for the tail.
    public var index: Int
    /// Setup, cycle or tail.
    public var role: Role
    /// True for the first ``AnalysisOptions/warmUp`` cycles (not judged for growth).
    public var isWarmUp: Bool
    /// Label of the mark that ends the generation; `nil` for the tail (and for a trace without marks).
    public var label: String?
    /// Index in ``Analysis/marks`` of the mark that ends the generation; `nil` if none.
    public var closingMark: Int?
    /// Allocation records (calls that returned a block) in the generation.
    public var allocations: UInt64
    /// Free records (calls) in the generation, including untracked ones and the old
    /// blocks of reallocs.
    public var frees: UInt64
    /// Requested bytes of those allocations.
    public var allocatedBytes: UInt64
    /// Live blocks of the whole heap at the closing mark (at the end of the trace if none).
    public var liveObjects: UInt64
    /// Live requested bytes of the whole heap at the closing mark (at the end of the trace if none).
    public var liveBytes: UInt64
    /// Highest live bytes of the whole heap at any moment during the generation.
    public var peakLiveBytes: UInt64
    /// Blocks allocated in this generation that are still live at the final snapshot
    /// (``Analysis/snapshot``). Blocks allocated after the snapshot never count.
    public var persistentObjects: UInt64
    /// Requested bytes of those blocks.
    public var persistentBytes: UInt64

    /// Creates generation statistics (the analyzer makes these; public for tests and tools).
    public init(index: Int, role: Role, isWarmUp: Bool, label: String?, closingMark: Int?,
                allocations: UInt64, frees: UInt64, allocatedBytes: UInt64, liveObjects: UInt64,
                liveBytes: UInt64, peakLiveBytes: UInt64, persistentObjects: UInt64, persistentBytes: UInt64) {
        self.index = index
        self.role = role
        self.isWarmUp = isWarmUp
        self.label = label
        self.closingMark = closingMark
        self.allocations = allocations
        self.frees = frees
        self.allocatedBytes = allocatedBytes
        self.liveObjects = liveObjects
        self.liveBytes = liveBytes
        self.peakLiveBytes = peakLiveBytes
        self.persistentObjects = persistentObjects
        self.persistentBytes = persistentBytes
    }
}
