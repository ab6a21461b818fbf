// Whole-trace totals.

/// Counts over the whole trace.
public struct AnalysisTotals: Codable, Sendable, Equatable {
    /// Allocation records: the program's successful allocation calls (reallocs included).
    public var allocations: UInt64 = 0
    /// Free records: the program's `free` calls with a non-null pointer plus the old
    /// blocks of reallocs (including frees of untracked blocks).
    public var frees: UInt64 = 0
    /// Requested bytes of all allocations.
    public var allocatedBytes: UInt64 = 0
    /// reallocUndo records (reallocs that failed; their old block lives on).
    public var reallocUndos: UInt64 = 0
    /// Alloc, free, reallocUndo and mark records.
    public var events: UInt64 = 0
    /// Highest live requested bytes of the whole heap at any moment.
    public var peakBytes: UInt64 = 0
    /// Generation in which ``peakBytes`` was first reached.
    public var peakGeneration: Int = 0
    /// Blocks live at the end of the trace.
    public var liveAtExitObjects: UInt64 = 0
    /// Requested bytes live at the end of the trace.
    public var liveAtExitBytes: UInt64 = 0
    /// Frees of addresses that were not live: double frees, pointers into blocks, memory
    /// heapgen did not see allocated (``Analysis/strayFrees`` explains the first ones).
    public var untrackedFrees: UInt64 = 0
    /// reallocUndo records with no pending realloc of that address (ignored).
    public var unmatchedReallocUndos: UInt64 = 0
    /// Allocations returning an address that was already live (the old block is dropped).
    public var duplicateAllocations: UInt64 = 0
    /// Sum of the `lost` records.
    public var lostRecords: UInt64 = 0
    /// From the end record (0 without one): times the shim waited for room in its ring.
    public var producerWaits: UInt64 = 0
    /// From the end record: total time the shim waited for room, in nanoseconds.
    public var producerWaitNanoseconds: UInt64 = 0
    /// From the end record (the sum of `lost` records without one): events the shim gave up.
    public var lostEvents: UInt64 = 0
    /// From the end record: events found half-written and discarded.
    public var tornEvents: UInt64 = 0
    /// From the end record: blobs that did not fit in the shim's arena.
    public var arenaFull: UInt64 = 0
    /// From the end record: allocations recorded without their stack (stack 0) because the
    /// shim's stack store was full.
    public var stacksLost: UInt64 = 0
    /// The trace holds a leak scan's verdict (`unreachable` records: `--leaks`, and the process
    /// ran its exit scan). Without one, no finding can be `leaked`.
    public var leakScanned = false

    /// All counters zero.
    public init() {}
}
