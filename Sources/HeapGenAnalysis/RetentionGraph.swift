// The reference graph a report explains findings with, tied to the analysis's sites.

import HeapGenTrace

/// A `referenceGraph` record as the analyzer met it, with what the live table knew about
/// each of its blocks at that position: the block's site (stack id and type id, as the
/// findings name them), its age and its size.
///
/// Per-block facts are flat arrays (4 + 4 + 4 + 8 bytes a block) so a graph of millions of
/// blocks stays tens of MB next to the record itself.
public struct RetentionGraph: Sendable, Equatable {
    /// Marker for a block the live table did not know (allocated outside the trace).
    public static let unknown = UInt32.max

    /// The record as read.
    public var record: ReferenceGraphRecord
    /// Per block of `record.blocks`: its site's (canonical) stack id, or ``unknown``.
    public var stacks: [UInt32]
    /// Per block: its site's type id (0 when unknown).
    public var types: [UInt32]
    /// Per block: its age rank: the number of marks seen before it was allocated (the live
    /// table keeps no finer order; ties are broken by address, i.e. the block index).
    public var epochs: [UInt32]
    /// Per block: its requested size in bytes (0 when unknown).
    public var sizes: [UInt64]
    /// Marks (of any kind) the analyzer had seen when it met the record.
    public var marksBefore: Int

    /// True when the graph was taken at the mark just before it (`--retention-at`): it is that
    /// mark's snapshot; other graphs (exit, a program's request) come after it.
    public var isAtMark: Bool {
        if case .mark = record.trigger { return marksBefore > 0 }
        return false
    }

    /// True when the graph was taken at or before mark `m` (0-based).
    public func isAtOrBefore(mark m: Int) -> Bool {
        marksBefore <= m || (marksBefore == m + 1 && isAtMark)
    }

    /// Blocks in the graph.
    public var blockCount: Int { record.blocks.count }

    /// Node ages for ``RetentionAnalysis``: epoch, then block index (smaller is older).
    public var ages: [UInt64] {
        epochs.enumerated().map { UInt64($0.element) << 32 | UInt64(truncatingIfNeeded: $0.offset) }
    }
}
