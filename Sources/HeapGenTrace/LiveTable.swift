// Compact open-addressing map from address to (size, stack) for live blocks.

/// Live blocks by address: linear probing, backward-shift deletion (no tombstones),
/// three parallel arrays (24 bytes + 4 per slot at most twice the live count...
/// i.e. memory proportional to the peak number of live blocks, not to events).
final class LiveTable {
    private var keys: UnsafeMutablePointer<UInt64>
    private var sizes: UnsafeMutablePointer<UInt64>
    private var stacks: UnsafeMutablePointer<UInt32>
    private var capacity: Int
    private var mask: Int
    private var shift: UInt64
    /// Key 0 marks an empty slot; a block at address 0 is kept aside.
    private var zero: (size: UInt64, stack: UInt32)?
    private(set) var count = 0

    init(capacity initial: Int = 1024) {
        var c = 16
        while c < initial { c &*= 2 }
        capacity = c
        mask = c - 1
        shift = UInt64(64 - c.trailingZeroBitCount)
        keys = .allocate(capacity: c)
        keys.initialize(repeating: 0, count: c)
        sizes = .allocate(capacity: c)
        sizes.initialize(repeating: 0, count: c)
        stacks = .allocate(capacity: c)
        stacks.initialize(repeating: 0, count: c)
    }

    deinit {
        keys.deallocate()
        sizes.deallocate()
        stacks.deallocate()
    }

    @inline(__always)
    private func home(_ key: UInt64) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) &>> shift)
    }

    /// Inserts or replaces; returns the previous value for `key`, if any.
    @discardableResult
    func insert(_ key: UInt64, size: UInt64, stack: UInt32) -> (size: UInt64, stack: UInt32)? {
        if key == 0 {
            let old = zero
            zero = (size, stack)
            if old == nil { count &+= 1 }
            return old
        }
        var i = home(key)
        while true {
            let k = keys[i]
            if k == key {
                let old = (sizes[i], stacks[i])
                sizes[i] = size
                stacks[i] = stack
                return old
            }
            if k == 0 { break }
            i = (i &+ 1) & mask
        }
        keys[i] = key
        sizes[i] = size
        stacks[i] = stack
        count &+= 1
        if count &* 4 > capacity &* 3 { grow() }
        return nil
    }

    /// Removes `key`; returns its value if it was there.
    @discardableResult
    func remove(_ key: UInt64) -> (size: UInt64, stack: UInt32)? {
        if key == 0 {
            let old = zero
            zero = nil
            if old != nil { count &-= 1 }
            return old
        }
        var i = home(key)
        while true {
            let k = keys[i]
            if k == key { break }
            if k == 0 { return nil }
            i = (i &+ 1) & mask
        }
        let old = (sizes[i], stacks[i])
        count &-= 1
        // Backward-shift deletion: pull later entries of the cluster into the hole.
        var hole = i
        var j = i
        while true {
            j = (j &+ 1) & mask
            let k = keys[j]
            if k == 0 { break }
            let h = home(k)
            // Leave k if its home lies cyclically in (hole, j].
            let stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j)
            if stays { continue }
            keys[hole] = k
            sizes[hole] = sizes[j]
            stacks[hole] = stacks[j]
            hole = j
        }
        keys[hole] = 0
        return old
    }

    func contains(_ key: UInt64) -> Bool {
        if key == 0 { return zero != nil }
        var i = home(key)
        while true {
            let k = keys[i]
            if k == key { return true }
            if k == 0 { return false }
            i = (i &+ 1) & mask
        }
    }

    private func grow() {
        let oldKeys = keys, oldSizes = sizes, oldStacks = stacks, oldCapacity = capacity
        capacity = oldCapacity &* 2
        mask = capacity - 1
        shift = UInt64(64 - capacity.trailingZeroBitCount)
        keys = .allocate(capacity: capacity)
        keys.initialize(repeating: 0, count: capacity)
        sizes = .allocate(capacity: capacity)
        stacks = .allocate(capacity: capacity)
        for s in 0..<oldCapacity where oldKeys[s] != 0 {
            var i = home(oldKeys[s])
            while keys[i] != 0 { i = (i &+ 1) & mask }
            keys[i] = oldKeys[s]
            sizes[i] = oldSizes[s]
            stacks[i] = oldStacks[s]
        }
        oldKeys.deallocate()
        oldSizes.deallocate()
        oldStacks.deallocate()
    }
}
