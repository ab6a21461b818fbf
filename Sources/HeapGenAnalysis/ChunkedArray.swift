// An append-only array in fixed chunks: growing it never copies.

/// An array that grows by fixed chunks of ``chunkSize`` elements.
///
/// A Swift array doubles its buffer and copies into the new one, so while it grows it
/// holds 1.5 times its capacity, and up to twice its count after: 300 MB for a moment for
/// the 3.9 M sites of a test suite's trace. Chunks are never copied, and at most one is
/// partly empty.
///
/// The chunks are raw buffers, listed in a raw table the struct holds itself, so an
/// element read is two loads and a write adds one uniqueness check (copy on write, as an
/// array's). An array of arrays costs two uniqueness checks and two bounds checks a
/// write, and reaching the table through a class property a dynamic exclusivity check:
/// either made `report` on a 20 M-event trace a quarter to a half slower.
struct ChunkedArray<Element> {
    static var chunkBits: Int { 16 }
    static var chunkSize: Int { 1 << chunkBits }

    /// Owns the table and the chunks: frees them when the last copy of the array goes.
    private final class Owner {
        let table: UnsafeMutablePointer<UnsafeMutablePointer<Element>>
        let capacity: Int
        var count: Int

        init(capacity: Int, count: Int) {
            table = .allocate(capacity: capacity)
            self.capacity = capacity
            self.count = count
        }

        deinit {
            var left = count
            for c in 0..<(count + ChunkedArray.chunkSize - 1) / ChunkedArray.chunkSize {
                table[c].deinitialize(count: min(left, ChunkedArray.chunkSize))
                table[c].deallocate()
                left -= ChunkedArray.chunkSize
            }
            table.deallocate()
        }
    }

    private var owner: Owner
    private var table: UnsafeMutablePointer<UnsafeMutablePointer<Element>>
    private(set) var count = 0

    init() {
        owner = Owner(capacity: 16, count: 0)
        table = owner.table
    }

    var indices: Range<Int> { 0..<count }

    /// A table of `capacity` slots with copies of the chunks (`copyElements`) or the same
    /// chunks moved over (the old owner then forgets them).
    private mutating func reown(capacity: Int, copyElements: Bool) {
        let chunkCount = (count + Self.chunkSize - 1) / Self.chunkSize
        let new = Owner(capacity: capacity, count: count)
        if copyElements {
            var left = count
            for c in 0..<chunkCount {
                let p = UnsafeMutablePointer<Element>.allocate(capacity: Self.chunkSize)
                p.initialize(from: table[c], count: min(left, Self.chunkSize))
                new.table[c] = p
                left -= Self.chunkSize
            }
        } else {
            new.table.initialize(from: table, count: chunkCount)
            owner.count = 0
        }
        owner = new
        table = new.table
    }

    mutating func append(_ element: Element) {
        if !isKnownUniquelyReferenced(&owner) { reown(capacity: owner.capacity, copyElements: true) }
        let i = count
        if i & (Self.chunkSize - 1) == 0 {
            let c = i &>> Self.chunkBits
            if c == owner.capacity { reown(capacity: 2 * c, copyElements: false) }
            table[c] = .allocate(capacity: Self.chunkSize)
        }
        (table[i &>> Self.chunkBits] + (i & (Self.chunkSize - 1))).initialize(to: element)
        count = i + 1
        owner.count = count
    }

    subscript(i: Int) -> Element {
        @inline(__always) get {
            precondition(i >= 0 && i < count, "ChunkedArray index out of range")
            return table[i &>> Self.chunkBits][i & (Self.chunkSize - 1)]
        }
        @inline(__always) _modify {
            precondition(i >= 0 && i < count, "ChunkedArray index out of range")
            if !isKnownUniquelyReferenced(&owner) { reown(capacity: owner.capacity, copyElements: true) }
            yield &table[i &>> Self.chunkBits][i & (Self.chunkSize - 1)]
        }
    }
}
