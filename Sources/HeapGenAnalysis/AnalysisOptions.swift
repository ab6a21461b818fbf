// How the analyzer judges growth.

/// Settings of a generation analysis.
///
/// Growth is judged on the *cycles* of a trace (the generations between two
/// ordinary marks), skipping the first ``warmUp`` cycles: caches, lazily
/// initialised singletons and first-use buffers fill there.
public struct AnalysisOptions: Sendable, Equatable, Codable {
    /// Number of leading cycles ignored when judging growth (default 1). Their
    /// deltas still appear in ``Finding/objectsPerCycle`` and ``Finding/bytesPerCycle``.
    /// At least 2 cycles must remain after the warm-up, else there are no growth findings.
    public var warmUp: Int
    /// Judged cycles that may show no growth while a site is still called abandoned (default 1):
    /// a site is abandoned if it grew in at least `judged cycles - toleratedMisses` of them,
    /// and in more than half of them (with 2 judged cycles, in both).
    public var toleratedMisses: Int
    /// A cycle counts as growth only if its live bytes rose by at least this much (0 = any rise).
    public var minBytesPerCycle: Int
    /// A cycle counts as growth only if its live objects rose by at least this much (0 = any rise).
    public var minObjectsPerCycle: Int
    /// Addresses of blocks live at the end of the trace that a conservative scanner found
    /// unreachable. When given, a site with live blocks at exit that are *all* in this set is
    /// reported as ``Finding/Kind/leaked``. `nil` (the default): no leak classification.
    ///
    /// Not encoded: an encoded analysis records only that a set was given (see ``Analysis/notes``).
    public var unreachable: Set<UInt64>?
    /// Besides the sites of findings, ``Analysis/sites`` keeps the `maxSites` sites with
    /// the most live bytes at exit and the `maxSites` sites with the highest peaks (default 50).
    public var maxSites: Int
    /// Judge only the cycles from this mark on (with ``to``): an ordinary mark's position
    /// (`"0"` = the first ordinary mark) or label (the first ordinary mark with that label).
    /// `nil`: from the first mark. Cycle numbers of the findings then count from the window's
    /// first cycle, and the warm-up is the window's first ``warmUp`` cycles.
    public var from: String? = nil
    /// Judge only the cycles up to this mark (position or label: the first ordinary mark with
    /// that label after ``from``); the window's final snapshot is this mark. `nil`: to the last.
    public var to: String? = nil

    /// Label of the mark the collector adds shortly after the last cycle (origin
    /// ``MarkOrigin/timer``) so that memory released asynchronously after the last cycle
    /// is gone before the final snapshot. Recognised by label alone.
    public static let settleLabel = "heapgen.settle"

    /// Creates options; every argument has the documented default.
    public init(warmUp: Int = 1, toleratedMisses: Int = 1, minBytesPerCycle: Int = 0,
                minObjectsPerCycle: Int = 0, unreachable: Set<UInt64>? = nil, maxSites: Int = 50) {
        self.warmUp = warmUp
        self.toleratedMisses = toleratedMisses
        self.minBytesPerCycle = minBytesPerCycle
        self.minObjectsPerCycle = minObjectsPerCycle
        self.unreachable = unreachable
        self.maxSites = maxSites
    }

    private enum CodingKeys: String, CodingKey {
        case warmUp, toleratedMisses, minBytesPerCycle, minObjectsPerCycle, maxSites, from, to
    }

    /// Decodes the options; ``unreachable`` is never encoded and decodes as `nil`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        warmUp = try c.decode(Int.self, forKey: .warmUp)
        toleratedMisses = try c.decode(Int.self, forKey: .toleratedMisses)
        minBytesPerCycle = try c.decode(Int.self, forKey: .minBytesPerCycle)
        minObjectsPerCycle = try c.decode(Int.self, forKey: .minObjectsPerCycle)
        maxSites = try c.decode(Int.self, forKey: .maxSites)
        from = try c.decodeIfPresent(String.self, forKey: .from)
        to = try c.decodeIfPresent(String.self, forKey: .to)
        unreachable = nil
    }

    /// Encodes the options without ``unreachable``.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(warmUp, forKey: .warmUp)
        try c.encode(toleratedMisses, forKey: .toleratedMisses)
        try c.encode(minBytesPerCycle, forKey: .minBytesPerCycle)
        try c.encode(minObjectsPerCycle, forKey: .minObjectsPerCycle)
        try c.encode(maxSites, forKey: .maxSites)
        try c.encodeIfPresent(from, forKey: .from)
        try c.encodeIfPresent(to, forKey: .to)
    }

    /// True if a cycle with these deltas counts as growth: live objects or bytes rose,
    /// and each rise reaches its threshold when that threshold is set.
    func grows(objects: Int, bytes: Int) -> Bool {
        guard objects > 0 || bytes > 0 else { return false }
        if minObjectsPerCycle > 0 && objects < minObjectsPerCycle { return false }
        if minBytesPerCycle > 0 && bytes < minBytesPerCycle { return false }
        return true
    }
}
