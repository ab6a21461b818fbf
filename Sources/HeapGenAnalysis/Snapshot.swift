// The point at which "what the cycles left behind" is measured.

/// The final snapshot: a ``AnalysisOptions/settleLabel`` mark after the last ordinary
/// mark if there is one (memory released asynchronously after the last cycle is gone
/// by then), else the last ordinary mark, else (a trace without marks) the end of the trace.
public struct SnapshotPoint: Codable, Sendable, Equatable {
    /// Which point was used.
    public enum Source: String, Codable, Sendable {
        case settleMark
        case lastMark
        case endOfTrace
    }

    /// Which point was used.
    public var source: Source
    /// Index in ``Analysis/marks``; `nil` for ``Source/endOfTrace``.
    public var markIndex: Int?
    /// Live blocks of the whole heap at the snapshot.
    public var liveObjects: UInt64
    /// Live requested bytes of the whole heap at the snapshot.
    public var liveBytes: UInt64

    /// Creates a snapshot point.
    public init(source: Source, markIndex: Int?, liveObjects: UInt64, liveBytes: UInt64) {
        self.source = source
        self.markIndex = markIndex
        self.liveObjects = liveObjects
        self.liveBytes = liveBytes
    }
}
