// Set of 32-bit ids (stack ids, type ids): the trace reader's and the collector's.

/// A set of 32-bit ids stored as a two-level bitset: pages of 65,536 bits (8 KiB),
/// allocated when an id in their range is first inserted. Lookup is two loads; memory
/// grows with the id ranges in use only, so both dense small ids (a trace's) and
/// scattered large ones (the collector's arena references, up to 2^31) stay cheap.
/// Public with an inlinable lookup (not `package`, which is not inlined across modules):
/// the collector looks ids up once per allocation.
public struct IdSet {
    @usableFromInline static var pageBits: Int { 16 }
    @usableFromInline static var wordsPerPage: Int { (1 << pageBits) / 64 }
    /// Pages by `id >> 16`; an empty array is a page with no id yet.
    @usableFromInline var pages: [[UInt64]] = []
    /// Ids in the set.
    public private(set) var count = 0

    public init() {}

    @inlinable @inline(__always)
    public func contains(_ id: UInt32) -> Bool {
        let p = Int(id &>> 16)
        guard p < pages.count else { return false }
        let word = Int(id & 0xFFFF) &>> 6
        return pages[p].withUnsafeBufferPointer { page in
            word < page.count && page[word] & (1 &<< UInt64(id & 63)) != 0
        }
    }

    /// Inserts `id`; returns false if it was already there.
    @discardableResult
    public mutating func insert(_ id: UInt32) -> Bool {
        let p = Int(id &>> 16)
        if p >= pages.count { pages.append(contentsOf: repeatElement([], count: p + 1 - pages.count)) }
        if pages[p].isEmpty { pages[p] = [UInt64](repeating: 0, count: Self.wordsPerPage) }
        let word = Int(id & 0xFFFF) &>> 6
        let bit: UInt64 = 1 &<< UInt64(id & 63)
        if pages[p][word] & bit != 0 { return false }
        pages[p][word] |= bit
        count += 1
        return true
    }
}
