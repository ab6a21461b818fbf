/// A set of 32-bit ids (stack refs, type ids) stored as a two-level bitset:
/// 8 KiB pages of 65,536 bits, allocated when an id in their range is first
/// inserted. Lookup is two loads; memory grows with the ranges in use only.
final class SparseBitset {
    private static let pageBits = 16
    private static let wordsPerPage = (1 << pageBits) / 64
    private var pages: [UnsafeMutablePointer<UInt64>?] = []
    private(set) var count = 0

    init() {}

    deinit {
        for page in pages { page?.deallocate() }
    }

    @inline(__always)
    func contains(_ id: UInt32) -> Bool {
        let p = Int(id >> UInt32(Self.pageBits))
        guard p < pages.count, let page = pages[p] else { return false }
        let bit = Int(id & 0xFFFF)
        return page[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }

    func insert(_ id: UInt32) {
        let p = Int(id >> UInt32(Self.pageBits))
        if p >= pages.count { pages.append(contentsOf: repeatElement(nil, count: p + 1 - pages.count)) }
        let page: UnsafeMutablePointer<UInt64>
        if let existing = pages[p] {
            page = existing
        } else {
            page = .allocate(capacity: Self.wordsPerPage)
            page.initialize(repeating: 0, count: Self.wordsPerPage)
            pages[p] = page
        }
        let bit = Int(id & 0xFFFF)
        let mask: UInt64 = 1 << UInt64(bit & 63)
        if page[bit >> 6] & mask == 0 {
            page[bit >> 6] |= mask
            count += 1
        }
    }

    /// Bytes held by the pages.
    var memoryBytes: Int { pages.reduce(0) { $0 + ($1 == nil ? 0 : Self.wordsPerPage * 8) } + pages.count * 8 }
}
