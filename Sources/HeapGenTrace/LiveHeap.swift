// The one live-heap model: address → live block, and the one realloc rule every replay of
// heap events (summary, analyzer, diff replay, collector) applies.

/// A heap event as a ``LiveHeap`` applies it; `Block` is the record the consumer keeps
/// about a block it allocates.
public enum LiveHeapEvent<Block> {
    /// An allocation (or a block inherited at a fork) returned `address`.
    case allocation(address: UInt64, block: Block)
    /// `free` (or any deallocation but realloc's) of `address`.
    case free(address: UInt64)
    /// The free-half of a `realloc(address, …)`: the realloc may still fail.
    case reallocFree(address: UInt64)
    /// The realloc that freed `address` failed: the block is live again.
    case reallocUndo(address: UInt64)
}

/// What one ``LiveHeap/apply(_:)`` did to the live heap.
public struct LiveHeapChange<Block> {
    /// The block that stopped being live: freed, or replaced by a block at the same address.
    public var removed: Block?
    /// The block that became live: allocated, or brought back by a reallocUndo.
    public var added: Block?
    /// Free: the address was live. reallocUndo: a pending realloc of the address was found.
    /// Allocation: always true.
    public var matched: Bool

    @inlinable
    public init(removed: Block?, added: Block?, matched: Bool) {
        self.removed = removed
        self.added = added
        self.matched = matched
    }
}

/// The live blocks of one traced process by address, with the blocks set aside by reallocs
/// that may still fail. One model for every replay of heap events (``TraceSummary``, the
/// generation analyzer, the diff replay, the collector's live tracking), so they all agree.
///
/// **Table.** Open addressing with linear probing and backward-shift deletion (no
/// tombstones), one slot of 8 bytes + `Block` per entry, at most 3/4 full (or as the
/// owner chooses): memory is proportional to the peak number of live blocks, never to
/// the number of events. Key 0
/// marks an empty slot; a block at address 0 is kept aside. `Block` is the consumer's
/// record (size, stack, site, generation... as it needs): plain integers only, since empty
/// slots are all-zero bytes.
///
/// **The realloc rule** (``apply(_:)``, the one way events change the heap):
/// - `reallocFree(p)` of a live `p` removes the block and sets it aside as *pending*; of
///   an address that is not live, it drops any stale pending entry of `p` (this realloc's
///   undo must not revive an older block).
/// - `reallocUndo(p)` makes the pending block of `p` live again (replacing any block live
///   at `p`); with none pending it changes nothing (`matched` false).
/// - `allocation(p)` drops any pending entry of `p` (the realloc that freed `p` succeeded,
///   since `p` was handed out again) and replaces any block live at `p`.
/// - Events carry no thread, so a realloc that moved its block cannot be paired with the
///   block it freed: when more than ``maxPendingReallocs`` are pending (moved blocks never
///   reused, `realloc(p, 0)`), the older half is dropped. An undo follows its own free
///   closely, so only stale entries go.
///
/// Public, and `@inlinable`, rather than `package`: the generic methods must be specialized
/// for each consumer's `Block` in the consumer's module, and `package` declarations are not
/// inlined across modules (measured: the analyzer ran 5× slower through unspecialized calls).
public final class LiveHeap<Block: BitwiseCopyable> {
    @usableFromInline
    struct Slot {
        @usableFromInline var key: UInt64
        @usableFromInline var block: Block

        @inlinable
        init(key: UInt64, block: Block) {
            self.key = key
            self.block = block
        }
    }

    /// A block set aside by a realloc's free, with the order of that free.
    @usableFromInline
    struct Pending {
        @usableFromInline var block: Block
        @usableFromInline var serial: UInt64

        @inlinable
        init(block: Block, serial: UInt64) {
            self.block = block
            self.serial = serial
        }
    }

    // Exclusivity is not checked at run time on these: a heap is used by one thread, and
    // the checks cost the collector a fifth of its tracking time when they were measured.
    @usableFromInline @exclusivity(unchecked) var slots: UnsafeMutablePointer<Slot>
    @usableFromInline @exclusivity(unchecked) var capacity: Int
    @usableFromInline @exclusivity(unchecked) var mask: Int
    @usableFromInline @exclusivity(unchecked) var shift: UInt64
    /// Percent of the slots that may be full before the table doubles.
    @usableFromInline let maxLoadPercent: Int
    /// Live blocks above which the table doubles.
    @usableFromInline @exclusivity(unchecked) var growLimit: Int
    /// The block at address 0, kept aside (key 0 marks empty slots).
    @usableFromInline @exclusivity(unchecked) var zero: Block?
    @usableFromInline @exclusivity(unchecked) var pending: [UInt64: Pending] = [:]
    @usableFromInline @exclusivity(unchecked) var pendingSerial: UInt64 = 0
    /// Pending entries per bucket of addresses: an allocation looks `pending` up only when
    /// its bucket is non-zero (most allocations have no pending realloc at their address,
    /// and a dictionary miss per allocation cost the analyzer ~13 % on realloc-heavy traces).
    /// At most ``maxPendingReallocs`` + 1 entries, so the counters cannot overflow.
    @usableFromInline @exclusivity(unchecked) var pendingBuckets = [UInt16](repeating: 0, count: 1 << 15)
    @usableFromInline @exclusivity(unchecked) var liveCount = 0

    /// Live blocks.
    @inlinable
    public var count: Int { liveCount }

    /// Pending reallocs kept before the older half is dropped.
    public static var maxPendingReallocs: Int { 4096 }

    /// An empty heap of `initial` slots (rounded up to a power of two) that doubles when
    /// more than `maxLoadPercent` % of them are full: 75 keeps memory small (the analyzer,
    /// whose batched lookups hide the longer probes); 50 makes inserts cheaper (the collector,
    /// which must keep up with the program).
    public init(capacity initial: Int = 1024, maxLoadPercent: Int = 75) {
        var c = 16
        while c < initial { c &*= 2 }
        capacity = c
        mask = c &- 1
        shift = UInt64(64 &- c.trailingZeroBitCount)
        self.maxLoadPercent = min(90, max(10, maxLoadPercent))
        growLimit = c * self.maxLoadPercent / 100
        slots = Self.allocateZeroed(c)
    }

    deinit {
        slots.deallocate()
    }

    /// `n` slots of zero bytes: all empty (a zero key), whatever `Block` is.
    @usableFromInline
    static func allocateZeroed(_ n: Int) -> UnsafeMutablePointer<Slot> {
        let raw = UnsafeMutableRawPointer.allocate(byteCount: n * MemoryLayout<Slot>.stride,
                                                   alignment: MemoryLayout<Slot>.alignment)
        raw.initializeMemory(as: UInt8.self, repeating: 0, count: n * MemoryLayout<Slot>.stride)
        return raw.bindMemory(to: Slot.self, capacity: n)
    }

    /// A deep copy (for copy-on-write of a value type that holds the heap).
    public func copy() -> LiveHeap {
        let other = LiveHeap(capacity: capacity, maxLoadPercent: maxLoadPercent)
        other.slots.update(from: slots, count: capacity)
        other.zero = zero
        other.liveCount = liveCount
        other.pending = pending
        other.pendingBuckets = pendingBuckets
        other.pendingSerial = pendingSerial
        return other
    }

    /// Blocks set aside by reallocs that may still fail (stale ones included).
    public var pendingCount: Int { pending.count }

    // MARK: The realloc rule

    /// Applies one heap event by the realloc rule (see the type's documentation).
    @inlinable @inline(__always)
    public func apply(_ event: LiveHeapEvent<Block>) -> LiveHeapChange<Block> {
        switch event {
        case let .allocation(address, block):
            if !pending.isEmpty && pendingBuckets[Self.bucket(address)] != 0 { _ = takePending(address) }
            return LiveHeapChange(removed: insert(address, block), added: block, matched: true)
        case let .free(address):
            let old = remove(address)
            return LiveHeapChange(removed: old, added: nil, matched: old != nil)
        case let .reallocFree(address):
            guard let old = remove(address) else {
                if !pending.isEmpty { _ = takePending(address) }
                return LiveHeapChange(removed: nil, added: nil, matched: false)
            }
            setAside(address, old)
            return LiveHeapChange(removed: old, added: nil, matched: true)
        case let .reallocUndo(address):
            guard let kept = takePending(address) else {
                return LiveHeapChange(removed: nil, added: nil, matched: false)
            }
            return LiveHeapChange(removed: insert(address, kept.block), added: kept.block, matched: true)
        }
    }

    @inlinable @inline(__always)
    static func bucket(_ address: UInt64) -> Int {
        Int(truncatingIfNeeded: (address &* 0x9E37_79B9_7F4A_7C15) &>> 49)
    }

    @inlinable
    func setAside(_ address: UInt64, _ block: Block) {
        if pending.updateValue(Pending(block: block, serial: pendingSerial), forKey: address) == nil {
            pendingBuckets[Self.bucket(address)] &+= 1
        }
        pendingSerial &+= 1
        if pending.count > Self.maxPendingReallocs { dropOlderPendingHalf() }
    }

    /// Removes and returns the pending entry of `address`, if any.
    @inlinable
    func takePending(_ address: UInt64) -> Pending? {
        guard let kept = pending.removeValue(forKey: address) else { return nil }
        pendingBuckets[Self.bucket(address)] &-= 1
        return kept
    }

    @usableFromInline
    func dropOlderPendingHalf() {
        let serials = pending.values.map(\.serial).sorted()
        let cutoff = serials[serials.count / 2]
        pending = pending.filter { $0.value.serial >= cutoff }
        for i in pendingBuckets.indices { pendingBuckets[i] = 0 }
        for address in pending.keys { pendingBuckets[Self.bucket(address)] &+= 1 }
    }

    // MARK: The table

    @inlinable @inline(__always)
    func home(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) &>> shift)
    }

    /// Inserts or replaces, outside the realloc rule; returns the block that was live at `address`.
    @inlinable @inline(__always) @discardableResult
    public func insert(_ address: UInt64, _ block: Block) -> Block? {
        if address == 0 {
            let old = zero
            zero = block
            if old == nil { liveCount &+= 1 }
            return old
        }
        let s = slots
        var i = home(address)
        while true {
            let k = s[i].key
            if k == address {
                let old = s[i].block
                s[i].block = block
                return old
            }
            if k == 0 { break }
            i = (i &+ 1) & mask
        }
        s[i] = Slot(key: address, block: block)
        liveCount &+= 1
        if liveCount > growLimit { grow() }
        return nil
    }

    /// Removes the block at `address`, outside the realloc rule; returns it if it was live.
    @inlinable @inline(__always) @discardableResult
    public func remove(_ address: UInt64) -> Block? {
        if address == 0 {
            let old = zero
            zero = nil
            if old != nil { liveCount &-= 1 }
            return old
        }
        let s = slots
        let m = mask
        var i = home(address)
        while true {
            let k = s[i].key
            if k == address { break }
            if k == 0 { return nil }
            i = (i &+ 1) & m
        }
        let old = s[i].block
        liveCount &-= 1
        // Backward-shift deletion: pull later entries of the cluster into the hole.
        var hole = i
        var j = i
        while true {
            j = (j &+ 1) & m
            let k = s[j].key
            if k == 0 { break }
            let h = home(k)
            // k stays if its home lies cyclically in (hole, j].
            let stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j)
            if stays { continue }
            s[hole] = s[j]
            hole = j
        }
        s[hole].key = 0
        return old
    }

    /// Loads the home slot of `address` (to bring it into the cache ahead of use); returns its key.
    @inlinable @inline(__always)
    public func touch(_ address: UInt64) -> UInt64 {
        slots[home(address)].key
    }

    /// The block live at `address`, if any.
    @inlinable
    public func lookup(_ address: UInt64) -> Block? {
        if address == 0 { return zero }
        var i = home(address)
        while true {
            let k = slots[i].key
            if k == address { return slots[i].block }
            if k == 0 { return nil }
            i = (i &+ 1) & mask
        }
    }

    /// True if a block is live at `address`.
    @inlinable
    public func contains(_ address: UInt64) -> Bool {
        lookup(address) != nil
    }

    /// Calls `body` for every live block (in no particular order).
    @inlinable
    public func forEach(_ body: (UInt64, Block) throws -> Void) rethrows {
        if let zero { try body(0, zero) }
        for i in 0..<capacity where slots[i].key != 0 {
            try body(slots[i].key, slots[i].block)
        }
    }

    @usableFromInline
    func grow() {
        let old = slots, oldCapacity = capacity
        capacity = oldCapacity &* 2
        mask = capacity &- 1
        shift = UInt64(64 &- capacity.trailingZeroBitCount)
        growLimit = capacity * maxLoadPercent / 100
        slots = Self.allocateZeroed(capacity)
        for s in 0..<oldCapacity where old[s].key != 0 {
            var i = home(old[s].key)
            while slots[i].key != 0 { i = (i &+ 1) & mask }
            slots[i] = old[s]
        }
        old.deallocate()
    }
}
