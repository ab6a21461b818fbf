// A map from 32-bit ids to 32-bit values: arrays where the ids are dense, a dictionary elsewhere.

/// Maps 32-bit ids (stack ids) to nonzero 32-bit values.
///
/// Trace stack ids come in dense runs (the collector numbers the stacks of later arena
/// epochs consecutively, from 2^24), but any id is valid. Ids are kept in pages of
/// ``pageSize`` slots, 4 bytes an id, as long as the pages hold at least one id per
/// ``minimumFill`` slots on average; ids that would make a sparse page go to a
/// dictionary (~20 bytes an id) instead. A dictionary for all 3.8 M stacks of a test
/// suite's trace cost 150 MB; the pages cost 15 MB.
struct IdMap {
    static let pageBits = 12
    static var pageSize: Int { 1 << pageBits }
    /// A new page is made only while the pages hold at least one id per this many slots.
    static let minimumFill = 4

    /// Pages by `id >> pageBits`; an empty array: no page.
    private var pages: [[UInt32]] = []
    private var pageCount = 0
    /// Ids in the pages.
    private var paged = 0
    private var others: [UInt32: UInt32] = [:]

    /// The value of `id`, 0 if none.
    @inline(__always)
    subscript(id: UInt32) -> UInt32 {
        let p = Int(id &>> UInt32(Self.pageBits))
        if p < pages.count && !pages[p].isEmpty {
            let value = pages[p][Int(id) & (Self.pageSize - 1)]
            if value != 0 || others.isEmpty { return value }
        }
        return others[id] ?? 0
    }

    /// Sets the value of `id`, which has none yet, to `value` (nonzero).
    mutating func insert(_ id: UInt32, _ value: UInt32) {
        precondition(value != 0)
        let p = Int(id &>> UInt32(Self.pageBits))
        let hasPage = p < pages.count && !pages[p].isEmpty
        if hasPage || (pageCount + 1) * Self.pageSize <= Self.minimumFill * (paged + 1) + Self.pageSize {
            if p >= pages.count { pages.append(contentsOf: repeatElement([], count: p + 1 - pages.count)) }
            if !hasPage {
                pages[p] = [UInt32](repeating: 0, count: Self.pageSize)
                pageCount += 1
            }
            pages[p][Int(id) & (Self.pageSize - 1)] = value
            paged += 1
        } else {
            others[id] = value
        }
    }
}
