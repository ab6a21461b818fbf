// A mark of the trace, as the analysis sees it.

import HeapGenTrace

/// One `mark` record of the trace and the whole heap at that point.
public struct GenerationMark: Codable, Sendable, Equatable {
    /// What the mark does for the analysis.
    public enum Role: String, Codable, Sendable {
        /// An ordinary mark: it ends one generation and starts the next.
        case boundary
        /// A ``AnalysisOptions/settleLabel`` mark after the last ordinary mark: not a
        /// generation boundary; the first one is the final snapshot point.
        case settle
        /// A ``AnalysisOptions/settleLabel`` mark followed by ordinary marks: ignored
        /// (neither a boundary nor the final snapshot).
        case ignoredSettle
    }

    /// Position among all marks of the trace (0-based, settle marks included).
    public var index: Int
    /// The mark's label.
    public var label: String
    /// CLOCK_MONOTONIC of the traced process.
    public var timeNanoseconds: UInt64
    /// Who asked for the mark.
    public var origin: MarkOrigin
    /// Boundary, settle or ignored settle.
    public var role: Role
    /// Number of alloc, free, reallocUndo and mark records before this mark.
    public var eventPosition: UInt64
    /// Generation in which the mark lies (a boundary mark ends this generation).
    public var generation: Int
    /// Live blocks of the whole heap at the mark.
    public var liveObjects: UInt64
    /// Live requested bytes of the whole heap at the mark.
    public var liveBytes: UInt64

    /// Creates a mark (the analyzer makes these; public for tests and tools).
    public init(index: Int, label: String, timeNanoseconds: UInt64, origin: MarkOrigin, role: Role,
                eventPosition: UInt64, generation: Int, liveObjects: UInt64, liveBytes: UInt64) {
        self.index = index
        self.label = label
        self.timeNanoseconds = timeNanoseconds
        self.origin = origin
        self.role = role
        self.eventPosition = eventPosition
        self.generation = generation
        self.liveObjects = liveObjects
        self.liveBytes = liveBytes
    }
}
