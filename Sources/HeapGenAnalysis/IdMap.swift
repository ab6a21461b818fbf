// A map from 32-bit ids to 32-bit values: arrays where the ids are dense, a dictionary elsewhere.

/// Maps 32-bit ids (stack ids) to nonzero 32-bit values.
///
/// Trace stack ids come in dense runs (the collector numbers the stacks of later arena
/// epochs consecutively, from 2^24), but any id is valid. Ids are kept in pages of
/// ``pageSize`` slots, 4 bytes an id, as long as the pages number at most one slot per
/// ``minimumFill`` ids of the map (paged or not) plus one page; ids that would make a
/// page beyond that go to a dictionary (~20 bytes an id) instead. A dictionary for all
/// 3.8 M stacks of a test suite's trace cost 150 MB; the pages cost 15 MB.
///
/// The bound counts the dictionary's ids too: counting only the paged ones, the sparse
/// epoch-0 ids that come first (100 k refs over 2 M) sent every later id to the
/// dictionary as well (67 MB on that trace).
struct IdMap {
    static let pageBits = 12
    static var pageSize: Int { 1 << pageBits }
    /// A new page is made only while the pages have at most this many slots per id of the map.
    static let minimumFill = 4

    /// Pages by `id >> pageBits`; an empty array: no page.
    private var pages: [[UInt32]] = []
    private var pageCount = 0
    /// Ids in the map.
    private var count = 0
    private var others: [UInt32: UInt32] = [:]

    /// Ids kept in the dictionary, not in pages.
    var unpagedCount: Int { others.count }

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

    /// Calls `body` with every id and its value, in no particular order.
    func forEach(_ body: (UInt32, UInt32) -> Void) {
        for (p, page) in pages.enumerated() where !page.isEmpty {
            for (i, value) in page.enumerated() where value != 0 { body(UInt32(p << Self.pageBits | i), value) }
        }
        for (id, value) in others { body(id, value) }
    }

    /// Sets the value of `id`, which has none yet, to `value` (nonzero).
    mutating func insert(_ id: UInt32, _ value: UInt32) {
        precondition(value != 0)
        let p = Int(id &>> UInt32(Self.pageBits))
        let hasPage = p < pages.count && !pages[p].isEmpty
        count += 1
        if hasPage || (pageCount + 1) * Self.pageSize <= Self.minimumFill * count + Self.pageSize {
            if p >= pages.count { pages.append(contentsOf: repeatElement([], count: p + 1 - pages.count)) }
            if !hasPage {
                pages[p] = [UInt32](repeating: 0, count: Self.pageSize)
                pageCount += 1
            }
            pages[p][Int(id) & (Self.pageSize - 1)] = value
        } else {
            others[id] = value
        }
    }
}
