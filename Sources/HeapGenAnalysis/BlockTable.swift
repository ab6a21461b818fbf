// Live blocks by address, for the analyzer (size, site and epoch per block).

/// What the analyzer keeps about one live block.
struct Block: Equatable {
    /// Requested bytes.
    var size: UInt64
    /// Dense index of the allocation site.
    var site: UInt32
    /// Number of marks (of any kind) seen before the block was allocated.
    var epoch: UInt32
}

/// Live blocks by address: open addressing with linear probing and backward-shift
/// deletion (no tombstones), one 24-byte slot per entry, at most 3/4 full.
///
/// Memory is proportional to the peak number of live blocks, never to the number
/// of events. `HeapGenTrace.LiveTable` is internal to its module and keeps only a
/// stack id, so the analyzer has its own table with the site and the epoch.
final class BlockTable {
    private struct Slot {
        var key: UInt64
        var block: Block
    }

    private var slots: UnsafeMutablePointer<Slot>
    private var capacity: Int
    private var mask: Int
    private var shift: UInt64
    /// Key 0 marks an empty slot; a block at address 0 is kept aside.
    private var zero: Block?
    private(set) var count = 0

    init(capacity initial: Int = 1024) {
        var c = 16
        while c < initial { c &*= 2 }
        capacity = c
        mask = c &- 1
        shift = UInt64(64 &- c.trailingZeroBitCount)
        slots = .allocate(capacity: c)
        slots.initialize(repeating: Slot(key: 0, block: Block(size: 0, site: 0, epoch: 0)), count: c)
    }

    deinit {
        slots.deallocate()
    }

    /// A deep copy (for copy-on-write of the analyzer).
    func copy() -> BlockTable {
        let other = BlockTable(capacity: capacity)
        other.slots.update(from: slots, count: capacity)
        other.zero = zero
        other.count = count
        return other
    }

    @inline(__always)
    private func home(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) &>> shift)
    }

    /// Inserts or replaces; returns the previous block at `key`, if any.
    @inline(__always)
    func insert(_ key: UInt64, _ block: Block) -> Block? {
        if key == 0 {
            let old = zero
            zero = block
            if old == nil { count &+= 1 }
            return old
        }
        let s = slots
        var i = home(key)
        while true {
            let k = s[i].key
            if k == key {
                let old = s[i].block
                s[i].block = block
                return old
            }
            if k == 0 { break }
            i = (i &+ 1) & mask
        }
        s[i] = Slot(key: key, block: block)
        count &+= 1
        if count &* 4 > capacity &* 3 { grow() }
        return nil
    }

    /// Removes `key`; returns its block if it was live.
    @inline(__always)
    func remove(_ key: UInt64) -> Block? {
        if key == 0 {
            let old = zero
            zero = nil
            if old != nil { count &-= 1 }
            return old
        }
        let s = slots
        let m = mask
        var i = home(key)
        while true {
            let k = s[i].key
            if k == key { break }
            if k == 0 { return nil }
            i = (i &+ 1) & m
        }
        let old = s[i].block
        count &-= 1
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

    /// Loads the home slot of `key` (to bring it into the cache ahead of use); returns its key.
    @inline(__always)
    func touch(_ key: UInt64) -> UInt64 {
        slots[home(key)].key
    }

    /// The block at `key`, if live.
    func lookup(_ key: UInt64) -> Block? {
        if key == 0 { return zero }
        var i = home(key)
        while true {
            let k = slots[i].key
            if k == key { return slots[i].block }
            if k == 0 { return nil }
            i = (i &+ 1) & mask
        }
    }

    /// Calls `body` for every live block (in no particular order).
    func forEach(_ body: (UInt64, Block) throws -> Void) rethrows {
        if let zero { try body(0, zero) }
        for i in 0..<capacity where slots[i].key != 0 {
            try body(slots[i].key, slots[i].block)
        }
    }

    private func grow() {
        let old = slots, oldCapacity = capacity
        capacity = oldCapacity &* 2
        mask = capacity &- 1
        shift = UInt64(64 &- capacity.trailingZeroBitCount)
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: Slot(key: 0, block: Block(size: 0, site: 0, epoch: 0)), count: capacity)
        for s in 0..<oldCapacity where old[s].key != 0 {
            var i = home(old[s].key)
            while slots[i].key != 0 { i = (i &+ 1) & mask }
            slots[i] = old[s]
        }
        old.deallocate()
    }
}
