// An append-only array in fixed chunks: growing it never copies.

/// An array that grows by fixed chunks of ``chunkSize`` elements.
///
/// A Swift array doubles its buffer and copies into the new one, so while it grows it
/// holds 1.5 times its capacity, and up to twice its count after: 300 MB for a moment for
/// the 3.9 M sites of a test suite's trace. Chunks are never copied, and at most one is
/// partly empty.
struct ChunkedArray<Element> {
    static var chunkBits: Int { 16 }
    static var chunkSize: Int { 1 << chunkBits }

    private var chunks: [[Element]] = []
    private(set) var count = 0

    var indices: Range<Int> { 0..<count }

    mutating func append(_ element: Element) {
        if count & (Self.chunkSize - 1) == 0 {
            var chunk: [Element] = []
            chunk.reserveCapacity(Self.chunkSize)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(element)
        count += 1
    }

    subscript(i: Int) -> Element {
        @inline(__always) get { chunks[i &>> Self.chunkBits][i & (Self.chunkSize - 1)] }
        @inline(__always) _modify { yield &chunks[i &>> Self.chunkBits][i & (Self.chunkSize - 1)] }
    }
}
