// The running state of every allocation site, 24 bytes a site.

/// Counters of every site of a ``GenerationAnalyzer``, by dense site index.
///
/// A test suite's trace has millions of sites (3.8 M for swift-argument-parser's tests),
/// nearly all of which allocate a few small blocks: a site is kept in 32-bit fields
/// (``Compact``, 24 bytes) while its counters fit, and moved to a full record (``Wide``)
/// the first time one would not. The 48-byte record of every site cost 180 MB there.
/// A site's stack is not kept: the analyzer maps stacks to sites, and turns that map
/// around when it needs the other way (``GenerationAnalyzer/siteStacks()``).
///
/// Each site's peak epoch is kept apart, and only once a peak came in an epoch other
/// than 0: a trace without marks (a test suite's) never needs one.
///
/// Reads (``subscript(_:)``) give a ``SiteState`` with the full values, the same whether
/// the site is compact or wide; the counters wrap as `&+` / `&-` on those values would.
struct SiteTable {
    /// A site whose counters all fit in 32 bits, or a wide one (``allocations`` is
    /// ``wideMark``, ``liveBytes`` its index in ``wide``).
    struct Compact {
        var type: UInt32
        /// Live blocks (32 bits also when wide: 2^32 live blocks would take 128 GB of heap).
        var liveObjects: UInt32 = 0
        var liveBytes: UInt32 = 0
        var peakBytes: UInt32 = 0
        var allocations: UInt32 = 0
        var allocatedBytes: UInt32 = 0
    }

    /// The counters of a site that outgrew ``Compact`` (besides its live objects).
    struct Wide {
        var liveBytes: Int
        var peakBytes: Int
        var allocations: UInt64
        var allocatedBytes: UInt64
    }

    /// ``Compact/allocations`` of a wide site; a compact one counts fewer.
    static let wideMark = UInt32.max

    private var compact = ChunkedArray<Compact>()
    private var wide: [Wide] = []
    /// Each site's peak epoch, once some peak came in an epoch other than 0 (before: all 0).
    private var peakEpochs = ChunkedArray<UInt32>()
    private var tracksPeakEpochs = false

    var count: Int { compact.count }
    var indices: Range<Int> { compact.indices }
    /// Sites moved to a full record.
    var wideCount: Int { wide.count }

    /// A new site of `type`, with no blocks; its index is the count before.
    mutating func append(type: UInt32) {
        compact.append(Compact(type: type))
        if tracksPeakEpochs { peakEpochs.append(0) }
    }

    @inline(__always)
    func type(_ s: Int) -> UInt32 { compact[s].type }

    /// Every counter of site `s`.
    subscript(s: Int) -> SiteState {
        let c = compact[s]
        var state = SiteState(type: c.type)
        state.liveObjects = c.liveObjects
        state.peakEpoch = tracksPeakEpochs ? peakEpochs[s] : 0
        if c.allocations == Self.wideMark {
            let w = wide[Int(c.liveBytes)]
            state.liveBytes = w.liveBytes
            state.peakBytes = w.peakBytes
            state.allocations = w.allocations
            state.allocatedBytes = w.allocatedBytes
        } else {
            state.liveBytes = Int(c.liveBytes)
            state.peakBytes = Int(c.peakBytes)
            state.allocations = UInt64(c.allocations)
            state.allocatedBytes = UInt64(c.allocatedBytes)
        }
        return state
    }

    /// Site `s` allocated a block of `size` bytes (counted, not made live).
    @inline(__always)
    mutating func allocated(_ s: Int, size: UInt64) {
        if Self.allocated(size, in: &compact[s]) { return }
        let w = widen(s)
        wide[w].allocations &+= 1
        wide[w].allocatedBytes &+= size
    }

    /// A block of `size` bytes of site `s` became live in `epoch`.
    @inline(__always)
    mutating func add(_ s: Int, size: UInt64, epoch: UInt32) {
        switch Self.add(size, to: &compact[s]) {
        case .done:
            return
        case .peak:
            break
        case .wide:
            let w = widen(s)
            compact[s].liveObjects &+= 1
            let live = wide[w].liveBytes &+ Int(truncatingIfNeeded: size)
            wide[w].liveBytes = live
            guard live > wide[w].peakBytes else { return }
            wide[w].peakBytes = live
        }
        if epoch != 0 && !tracksPeakEpochs { trackPeakEpochs() }
        if tracksPeakEpochs { peakEpochs[s] = epoch }
    }

    /// A block of `size` bytes of site `s` stopped being live.
    @inline(__always)
    mutating func remove(_ s: Int, size: UInt64) {
        if Self.remove(size, from: &compact[s]) { return }
        let w = widen(s)
        compact[s].liveObjects &-= 1
        wide[w].liveBytes &-= Int(truncatingIfNeeded: size)
    }

    private enum AddResult { case done, peak, wide }

    /// Counts the allocation in `c` if it stays compact; false (and `c` unchanged) if not.
    @inline(__always)
    private static func allocated(_ size: UInt64, in c: inout Compact) -> Bool {
        guard c.allocations < wideMark - 1, size <= UInt64(UInt32.max) else { return false }
        let (bytes, overflow) = c.allocatedBytes.addingReportingOverflow(UInt32(truncatingIfNeeded: size))
        if overflow { return false }
        c.allocations &+= 1
        c.allocatedBytes = bytes
        return true
    }

    @inline(__always)
    private static func add(_ size: UInt64, to c: inout Compact) -> AddResult {
        guard c.allocations != wideMark, size <= UInt64(UInt32.max) else { return .wide }
        let (live, overflow) = c.liveBytes.addingReportingOverflow(UInt32(truncatingIfNeeded: size))
        if overflow { return .wide }
        c.liveObjects &+= 1
        c.liveBytes = live
        guard live > c.peakBytes else { return .done }
        c.peakBytes = live
        return .peak
    }

    @inline(__always)
    private static func remove(_ size: UInt64, from c: inout Compact) -> Bool {
        guard c.allocations != wideMark, size <= UInt64(c.liveBytes) else { return false }
        c.liveObjects &-= 1
        c.liveBytes &-= UInt32(truncatingIfNeeded: size)
        return true
    }

    /// The index in ``wide`` of site `s`, which is moved there first if compact.
    private mutating func widen(_ s: Int) -> Int {
        let c = compact[s]
        if c.allocations == Self.wideMark { return Int(c.liveBytes) }
        let w = wide.count
        precondition(w < Int(UInt32.max), "too many wide sites")
        wide.append(Wide(liveBytes: Int(c.liveBytes), peakBytes: Int(c.peakBytes),
                         allocations: UInt64(c.allocations), allocatedBytes: UInt64(c.allocatedBytes)))
        compact[s].allocations = Self.wideMark
        compact[s].liveBytes = UInt32(w)
        compact[s].peakBytes = 0
        compact[s].allocatedBytes = 0
        return w
    }

    /// Starts keeping peak epochs: every peak so far was in epoch 0.
    private mutating func trackPeakEpochs() {
        for _ in compact.indices { peakEpochs.append(0) }
        tracksPeakEpochs = true
    }
}

/// Every counter of one site, as ``SiteTable`` reads it.
struct SiteState {
    var type: UInt32
    /// Live blocks. 32 bits: 2^32 live blocks of one site would take 128 GB of heap.
    var liveObjects: UInt32 = 0
    var peakEpoch: UInt32 = 0
    var liveBytes = 0
    var peakBytes = 0
    var allocations: UInt64 = 0
    var allocatedBytes: UInt64 = 0

    init(type: UInt32) {
        self.type = type
    }
}
