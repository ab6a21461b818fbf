// The state compact events (minor version 5) refer to, kept the same way by the writer that
// encodes them and the decoder that reads them back.

/// What compact events refer to: the last address of each address slot, the addresses and
/// sizes of the last 4096 allocations (a ring), the last 16 freed addresses, and per size
/// class the last 8 addresses freed by a free of a recent allocation.
///
/// The one model of that state: ``TraceWriter`` and the record decoder each own one and
/// feed it the same events in the same order, so what a record names on one side is what
/// it names on the other. A class, so the hot loops work on plain pointers.
final class CompactEventState {
    let slots: UnsafeMutablePointer<UInt64>
    let recent: UnsafeMutablePointer<UInt64>
    /// Allocation records so far (every tag, so minor ≤ 4 allocations count too).
    var allocations: UInt64 = 0
    /// The last 16 freed addresses (a ring) and the free records so far (every tag).
    let freed: UnsafeMutablePointer<UInt64>
    var frees = 0
    /// Sizes of the last 4096 allocations (beside `recent`), and per size class the last 8
    /// addresses freed by a free of a recent allocation, and how many.
    let recentSizes: UnsafeMutablePointer<UInt64>
    let classFreed: UnsafeMutablePointer<UInt64>
    let classFrees: UnsafeMutablePointer<Int>

    static let recentMask = TraceFormat.recentAllocations - 1

    init() {
        slots = .allocate(capacity: TraceFormat.addressSlots)
        slots.initialize(repeating: 0, count: TraceFormat.addressSlots)
        recent = .allocate(capacity: TraceFormat.recentAllocations)
        recent.initialize(repeating: 0, count: TraceFormat.recentAllocations)
        freed = .allocate(capacity: 16)
        freed.initialize(repeating: 0, count: 16)
        recentSizes = .allocate(capacity: TraceFormat.recentAllocations)
        recentSizes.initialize(repeating: 0, count: TraceFormat.recentAllocations)
        classFreed = .allocate(capacity: TraceFormat.sizeClasses * 8)
        classFreed.initialize(repeating: 0, count: TraceFormat.sizeClasses * 8)
        classFrees = .allocate(capacity: TraceFormat.sizeClasses)
        classFrees.initialize(repeating: 0, count: TraceFormat.sizeClasses)
    }

    deinit {
        slots.deallocate()
        recent.deallocate()
        freed.deallocate()
        recentSizes.deallocate()
        classFreed.deallocate()
        classFrees.deallocate()
    }

    // MARK: Events, as both sides see them

    @inline(__always)
    func noteFree(_ address: UInt64) {
        freed[frees & 15] = address
        frees &+= 1
    }

    @inline(__always)
    func noteAllocation(_ address: UInt64, size: UInt64) {
        let at = Int(truncatingIfNeeded: allocations) & Self.recentMask
        recent[at] = address
        recentSizes[at] = size
        allocations &+= 1
    }

    /// A free of the allocation at ring index `at` (of ``recent``): its address joins the
    /// recent frees of its size class, when its size has one.
    @inline(__always)
    func noteFreeOfRecentAllocation(at: Int) {
        if let c = TraceFormat.sizeClass(recentSizes[at]) {
            classFreed[c &* 8 &+ (classFrees[c] & 7)] = recent[at]
            classFrees[c] &+= 1
        }
    }

    // MARK: Reading: what a record names

    /// The address freed `back` frees before the latest (0: the latest), if known.
    @inline(__always)
    func recentFree(_ back: Int) -> UInt64? {
        back < frees ? freed[(frees &- 1 &- back) & 15] : nil
    }

    /// The address freed `back` frees of the size class of `size` before the latest, if known.
    @inline(__always)
    func recentFree(_ back: Int, ofSize size: UInt64) -> UInt64? {
        guard let c = TraceFormat.sizeClass(size), back < classFrees[c] else { return nil }
        return classFreed[c &* 8 &+ ((classFrees[c] &- 1 &- back) & 7)]
    }

    /// The address of the allocation `back` allocations before the latest (0: the latest),
    /// noted as freed (``noteFreeOfRecentAllocation(at:)``).
    @inline(__always)
    func recentAllocation(_ back: UInt64, _ c: inout ByteCursor, at start: Int) throws(TraceError) -> UInt64 {
        guard back < UInt64(TraceFormat.recentAllocations) && back < allocations else {
            throw c.corrupt("free names the allocation \(back) allocations back, but only \(min(allocations, UInt64(TraceFormat.recentAllocations))) are known", at: start)
        }
        let at = Int(truncatingIfNeeded: allocations &- 1 &- back) & Self.recentMask
        noteFreeOfRecentAllocation(at: at)
        return recent[at]
    }

    // MARK: Writing: how to name an address

    /// `back` such that ``recentFree(_:)`` gives `address`, among the first `limit`; nil if none.
    @inline(__always)
    func recentFreeIndex(of address: UInt64, limit: Int) -> Int? {
        for j in 0..<limit where j < frees && freed[(frees &- 1 &- j) & 15] == address { return j }
        return nil
    }

    /// `back` such that ``recentFree(_:ofSize:)`` gives `address`, among the first `limit`.
    @inline(__always)
    func recentFreeIndex(of address: UInt64, ofSize size: UInt64, limit: Int) -> Int? {
        guard let c = TraceFormat.sizeClass(size) else { return nil }
        let count = classFrees[c]
        let ring = classFreed + c &* 8
        for j in 0..<limit where j < count && ring[(count &- 1 &- j) & 7] == address { return j }
        return nil
    }
}
