// Set of defined stack or type ids.

/// The ids defined so far. Dense small ids (the usual case: the collector
/// numbers them from 1) live in a bitmap of at most 2 MiB; others in a `Set`,
/// which grows only with records actually read.
struct IdSet {
    private var bits: [UInt64] = []
    private var large: Set<UInt32> = []
    private(set) var count = 0

    /// Ids below this go in the bitmap.
    private static let bitmapLimit: UInt32 = 1 << 24

    @inline(__always)
    func contains(_ id: UInt32) -> Bool {
        if id < Self.bitmapLimit {
            let word = Int(id &>> 6)
            return word < bits.count && bits[word] & (1 &<< UInt64(id & 63)) != 0
        }
        return large.contains(id)
    }

    /// Inserts `id`; returns false if it was already there.
    mutating func insert(_ id: UInt32) -> Bool {
        if id < Self.bitmapLimit {
            let word = Int(id &>> 6)
            if word >= bits.count {
                let grown = min(max(word + 1, bits.count * 2, 64), Int(Self.bitmapLimit / 64))
                bits.append(contentsOf: repeatElement(0, count: grown - bits.count))
            }
            let bit: UInt64 = 1 &<< UInt64(id & 63)
            if bits[word] & bit != 0 { return false }
            bits[word] |= bit
        } else {
            if !large.insert(id).inserted { return false }
        }
        count += 1
        return true
    }
}
