// One allocation site: a (stack, Swift type) pair.

/// Allocations from one stack and of one Swift type (type id 0 = not a Swift object).
///
/// Two types allocated from the same stack are two sites; ``TypeRollup`` sums the
/// sites of one type. A realloc that succeeds belongs to the site (stack) of the
/// realloc call, not to the site of the block it replaces: this is what heaptrack
/// and Instruments do, and it is what makes a buffer grown by realloc every cycle
/// show up as growth of the realloc's site.
public struct AllocationSite: Codable, Sendable, Equatable {
    /// Live objects and bytes of the site from a mark on (sparse: a point is stored
    /// only at marks where the values changed since the previous point).
    public struct Point: Codable, Sendable, Equatable {
        /// Index in ``Analysis/marks``.
        public var mark: Int
        /// Live blocks of the site from this mark on.
        public var objects: UInt64
        /// Live requested bytes of the site from this mark on.
        public var bytes: UInt64

        /// Creates a point.
        public init(mark: Int, objects: UInt64, bytes: UInt64) {
            self.mark = mark
            self.objects = objects
            self.bytes = bytes
        }
    }

    /// What the site did over the cycles.
    public enum Behavior: String, Codable, Sendable {
        /// A ``Finding/Kind/abandoned`` finding.
        case abandoned
        /// A ``Finding/Kind/leaked`` finding.
        case leaked
        /// A ``Finding/Kind/cache`` finding.
        case cache
        /// Held more at the final snapshot than at the end of setup, without the pattern
        /// of abandoned memory or of a cache (or there were too few cycles to judge).
        case grown
        /// Rose above its level at a point after setup (its peak is in a later generation)
        /// and was back at or below its setup level at the final snapshot. Not a finding.
        case transient
        /// None of the above.
        case flat
    }

    /// Stack id of the allocations (0 = no stack); frames in ``Analysis/stacks``.
    public var stackID: UInt32
    /// Swift type id of the allocations (0 = not a Swift object).
    public var typeID: UInt32
    /// Demangled name of the Swift type, if any.
    public var typeName: String?
    /// Allocation records of the site.
    public var allocations: UInt64
    /// Requested bytes of those allocations.
    public var allocatedBytes: UInt64
    /// Live objects and bytes at each mark, sparse (see ``Point``); 0 before the first point.
    public var liveAtMarks: [Point]
    /// Live blocks of the site at the final snapshot (``Analysis/snapshot``).
    public var snapshotObjects: UInt64
    /// Live requested bytes of the site at the final snapshot.
    public var snapshotBytes: UInt64
    /// Live blocks of the site at the end of the trace.
    public var liveAtExitObjects: UInt64
    /// Live requested bytes of the site at the end of the trace.
    public var liveAtExitBytes: UInt64
    /// Highest live requested bytes of the site at any moment.
    public var peakBytes: UInt64
    /// Generation in which ``peakBytes`` was first reached.
    public var peakGeneration: Int
    /// What the site did over the cycles.
    public var behavior: Behavior

    /// Creates a site summary (the analyzer makes these; public for tests and tools).
    public init(stackID: UInt32, typeID: UInt32, typeName: String?, allocations: UInt64, allocatedBytes: UInt64,
                liveAtMarks: [Point], snapshotObjects: UInt64, snapshotBytes: UInt64,
                liveAtExitObjects: UInt64, liveAtExitBytes: UInt64, peakBytes: UInt64, peakGeneration: Int,
                behavior: Behavior) {
        self.stackID = stackID
        self.typeID = typeID
        self.typeName = typeName
        self.allocations = allocations
        self.allocatedBytes = allocatedBytes
        self.liveAtMarks = liveAtMarks
        self.snapshotObjects = snapshotObjects
        self.snapshotBytes = snapshotBytes
        self.liveAtExitObjects = liveAtExitObjects
        self.liveAtExitBytes = liveAtExitBytes
        self.peakBytes = peakBytes
        self.peakGeneration = peakGeneration
        self.behavior = behavior
    }

    /// Live objects and bytes of the site at mark `index` (of ``Analysis/marks``).
    public func live(atMark index: Int) -> (objects: UInt64, bytes: UInt64) {
        // Last point at or before `index`.
        var low = 0, high = liveAtMarks.count
        while low < high {
            let mid = (low + high) / 2
            if liveAtMarks[mid].mark <= index { low = mid + 1 } else { high = mid }
        }
        guard low > 0 else { return (0, 0) }
        return (liveAtMarks[low - 1].objects, liveAtMarks[low - 1].bytes)
    }
}
