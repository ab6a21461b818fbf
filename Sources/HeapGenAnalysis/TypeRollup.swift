// All sites of one Swift type.

/// The sum of every site of one Swift type (type id ≠ 0), over all sites of the trace.
public struct TypeRollup: Codable, Sendable, Equatable, PerCycleSeries {
    /// The Swift type id.
    public var typeID: UInt32
    /// Demangled name of the type, if defined.
    public var typeName: String?
    /// Number of sites (stacks) allocating the type.
    public var sites: Int
    /// Allocation records of the type (all its sites).
    public var allocations: UInt64
    /// Requested bytes of those allocations.
    public var allocatedBytes: UInt64
    /// Live blocks of the type at the final snapshot.
    public var snapshotObjects: UInt64
    /// Live requested bytes of the type at the final snapshot.
    public var snapshotBytes: UInt64
    /// Live blocks of the type at the end of the trace.
    public var liveAtExitObjects: UInt64
    /// Live requested bytes of the type at the end of the trace.
    public var liveAtExitBytes: UInt64
    /// Change of the type's live objects over every cycle (index 0 = cycle 1), sparse
    /// (``objectsPerCycle`` is the plain array).
    public var objectsSeries: CycleSeries
    /// Change of the type's live bytes over every cycle (index 0 = cycle 1), sparse
    /// (``bytesPerCycle`` is the plain array).
    public var bytesSeries: CycleSeries

    /// Creates a rollup (the analyzer makes these; public for tests and tools).
    public init(typeID: UInt32, typeName: String?, sites: Int, allocations: UInt64, allocatedBytes: UInt64,
                snapshotObjects: UInt64, snapshotBytes: UInt64, liveAtExitObjects: UInt64,
                liveAtExitBytes: UInt64, objectsPerCycle: [Int], bytesPerCycle: [Int]) {
        self.typeID = typeID
        self.typeName = typeName
        self.sites = sites
        self.allocations = allocations
        self.allocatedBytes = allocatedBytes
        self.snapshotObjects = snapshotObjects
        self.snapshotBytes = snapshotBytes
        self.liveAtExitObjects = liveAtExitObjects
        self.liveAtExitBytes = liveAtExitBytes
        self.objectsSeries = CycleSeries(objectsPerCycle)
        self.bytesSeries = CycleSeries(bytesPerCycle)
    }


    /// The JSON keys are those of the plain arrays (the series encode as arrays).
    private enum CodingKeys: String, CodingKey {
        case typeID, typeName, sites, allocations, allocatedBytes, snapshotObjects, snapshotBytes
        case liveAtExitObjects, liveAtExitBytes
        case objectsSeries = "objectsPerCycle", bytesSeries = "bytesPerCycle"
    }
}
