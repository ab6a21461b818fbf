// Column chunks (minor version 6; docs/trace-format.md, "Column chunks"): the varint fields
// of event records stored in streams of their own, each compressed apart.

import CZstd

/// Layout of column chunks.
///
/// Why: zstd codes literals with one Huffman table per block, so interleaved records make
/// tags, sizes, ids and address deltas share one table; apart, each field costs about its own
/// entropy (measured: the bench trace 58.2 → 39.7 MB, the storm trace 76.6 → 49.3 MB, for
/// less zstd time). A varint's first byte and its further bytes go to separate streams too:
/// mixed, they cost about a bit more a byte.
enum ColumnChunk {
    /// Bit 31 of a compressed chunk's u32 prefix: the payload is stored in columns.
    static let flag: UInt32 = 1 << 31
    /// The records stream, then a first-byte and a further-bytes stream per ``EventField``.
    static let streamCount = 1 + 2 * EventField.count
}

/// The varint fields of event records that column chunks store apart.
enum EventField: Int {
    /// Address deltas (svarint).
    case address = 0
    /// Requested sizes.
    case size = 1
    /// Stack and type ids.
    case id = 2
    /// `k`, how many allocations back a free names.
    case back = 3

    static let count = 4
}

/// The writer's field streams of the pending chunk: per ``EventField`` a stream of first
/// bytes and one of further bytes (``ColumnChunk/streamCount`` − 1 buffers in one block).
final class FieldStreams {
    /// Room of each stream: a chunk is flushed at the threshold, so no stream exceeds it by
    /// more than one record.
    static let capacity = TraceFormat.flushThreshold + 256
    private static let streams = 2 * EventField.count
    let base: UnsafeMutablePointer<UInt8>
    /// Bytes in each stream.
    let ends: UnsafeMutablePointer<Int>
    /// Bytes in all streams.
    private(set) var total = 0

    init() {
        base = .allocate(capacity: Self.capacity * Self.streams)
        ends = .allocate(capacity: Self.streams)
        ends.initialize(repeating: 0, count: Self.streams)
    }

    deinit {
        base.deallocate()
        ends.deallocate()
    }

    /// Appends `value`: its first LEB128 byte to the field's first-byte stream, the LEB128 of
    /// the rest (`value >> 7`, when there is any) to its further-bytes stream.
    @inline(__always)
    func put(_ value: UInt64, _ field: EventField) {
        let s = 2 &* field.rawValue
        let i = ends[s]
        if value < 0x80 {
            base[s &* Self.capacity &+ i] = UInt8(truncatingIfNeeded: value)
            ends[s] = i &+ 1
            total &+= 1
            return
        }
        base[s &* Self.capacity &+ i] = UInt8(truncatingIfNeeded: value) | 0x80
        ends[s] = i &+ 1
        let m = s &+ 1
        let before = ends[m]
        let after = Varint.put(value &>> 7, into: base + m &* Self.capacity, at: before)
        ends[m] = after
        total &+= 1 &+ after &- before
    }

    /// Stream `s` (0-based among the field streams).
    func stream(_ s: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base + s * Self.capacity, count: ends[s])
    }

    func reset() {
        ends.update(repeating: 0, count: Self.streams)
        total = 0
    }
}

extension ChunkCompressor {
    /// Encodes the stored bytes of a column chunk into ``output`` after `headerRoom` bytes:
    /// prefix (plain length | ``ColumnChunk/flag``), per stream its length and stored length,
    /// then the streams, each a zstd frame when that is smaller (and `compress`), else plain.
    /// Returns the stored length.
    func encodeColumns(_ streams: [UnsafeRawBufferPointer], compress: Bool, headerRoom: Int) -> Int {
        var bound = ChunkCompression.prefixSize + streams.count * 2 * Varint.maxBytes
        for s in streams { bound += ZSTD_compressBound(s.count) }
        reserveScratch(bound)
        ensureOutput(headerRoom + bound)
        // The streams go to the scratch buffer first: the lengths before them are varints.
        var stored = [Int](repeating: 0, count: streams.count)
        var at = 0
        for (k, s) in streams.enumerated() where s.count > 0 {
            if compress, let n = frame(s, into: scratch + at, capacity: ZSTD_compressBound(s.count)), n < s.count {
                stored[k] = n
            } else {
                UnsafeMutableRawPointer(scratch + at).copyMemory(from: s.baseAddress!, byteCount: s.count)
                stored[k] = s.count
            }
            at += stored[k]
        }
        let plain = streams.reduce(0) { $0 + $1.count }
        let out = (output + headerRoom).assumingMemoryBound(to: UInt8.self)
        (output + headerRoom).storeBytes(of: (UInt32(plain) | ColumnChunk.flag).littleEndian, as: UInt32.self)
        var i = ChunkCompression.prefixSize
        for (k, s) in streams.enumerated() {
            i = Varint.put(UInt64(s.count), into: out, at: i)
            i = Varint.put(UInt64(stored[k]), into: out, at: i)
        }
        (out + i).update(from: scratch, count: at)
        return i + at
    }
}

extension ChunkDecompressor {
    /// The streams a column chunk's stored bytes (after the prefix, whose plain length is
    /// `plain`) decode to, in one buffer valid until the next call.
    ///
    /// - Throws: ``TraceError`` `.corrupt` (at `offset`, the chunk's start) when a length is
    ///   out of range, a stream is stored longer than its length, the lengths do not add up
    ///   to `plain`, bytes are left over, or a zstd frame fails or decompresses to another length.
    func decompressColumns(_ body: UnsafeRawBufferPointer, plain: Int, offset: UInt64,
                           file: String) throws(TraceError) -> [UnsafeRawBufferPointer] {
        func corrupt(_ message: String) -> TraceError {
            TraceError(.corrupt, "column chunk: \(message)", offset: offset, file: file)
        }
        var c = ByteCursor(body, fileOffset: offset, file: file, fixedOffset: true)
        var lengths: [(length: Int, stored: Int)] = []
        var total = 0
        for k in 0..<ColumnChunk.streamCount {
            let length = try c.varint()
            let stored = try c.varint()
            guard length <= UInt64(plain) - UInt64(total) else {
                throw corrupt("stream \(k) is \(length) bytes, more than the \(plain) the chunk states (with the streams before it)")
            }
            guard stored <= length else { throw corrupt("stream \(k) is stored in \(stored) bytes, more than its \(length)") }
            lengths.append((Int(length), Int(stored)))
            total += Int(length)
        }
        guard total == plain else { throw corrupt("the streams hold \(total) bytes, not the \(plain) the chunk states") }
        guard c.remaining == lengths.reduce(0, { $0 + $1.stored }) else {
            throw corrupt("the streams are stored in \(lengths.reduce(0, { $0 + $1.stored })) bytes, but \(c.remaining) follow")
        }
        let buffer = try reserve(plain, offset: offset, file: file)
        var out: [UnsafeRawBufferPointer] = []
        var at = 0
        for (k, s) in lengths.enumerated() {
            let source = UnsafeRawBufferPointer(start: c.base + c.position, count: s.stored)
            if s.stored == s.length {
                if s.length > 0 { (buffer + at).copyMemory(from: source.baseAddress!, byteCount: s.length) }
            } else {
                try inflate(source, into: buffer + at, length: s.length, offset: offset, file: file, what: "stream \(k)")
            }
            out.append(UnsafeRawBufferPointer(start: buffer + at, count: s.length))
            c.skip(s.stored)
            at += s.length
        }
        return out
    }
}

/// Where the varint fields of event records come from: inline in the record (plain and
/// single-frame chunks) or from a column chunk's streams.
protocol EventFields {
    /// The next value of `field`; `c` is the records stream.
    mutating func varint(_ field: EventField, _ c: inout ByteCursor) throws(TraceError) -> UInt64
}

extension EventFields {
    /// An address delta (zigzag) added, wrapping, to `previous`: ``ByteCursor/delta(from:)``
    /// for event fields.
    @inline(__always)
    mutating func delta(from previous: UInt64, _ c: inout ByteCursor) throws(TraceError) -> UInt64 {
        previous &+ Varint.unzigzag(try varint(.address, &c))
    }
}

/// Fields inline in the records, as in plain chunks.
struct InlineFields: EventFields {
    @inline(__always)
    mutating func varint(_ field: EventField, _ c: inout ByteCursor) throws(TraceError) -> UInt64 {
        try c.varint()
    }
}

/// Fields from the streams of a column chunk.
struct ColumnFields: EventFields {
    /// One stream: bounds and read position (no file name to carry: errors go through the
    /// records cursor, whose offsets name the chunk).
    struct Stream {
        let base: UnsafePointer<UInt8>
        let count: Int
        var position = 0

        init(_ bytes: UnsafeRawBufferPointer) {
            base = bytes.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? UnsafePointer(bitPattern: 1)!
            count = bytes.count
        }
    }
    private var address, addressMore, size, sizeMore, id, idMore, back, backMore: Stream
    private static let names = ["address delta", "size", "stack and type id", "back"]

    /// `streams`: the chunk's field streams, first bytes and further bytes per ``EventField``.
    init(_ streams: ArraySlice<UnsafeRawBufferPointer>) {
        let s = Array(streams)
        address = Stream(s[0]); addressMore = Stream(s[1])
        size = Stream(s[2]); sizeMore = Stream(s[3])
        id = Stream(s[4]); idMore = Stream(s[5])
        back = Stream(s[6]); backMore = Stream(s[7])
    }

    @inline(__always)
    mutating func varint(_ field: EventField, _ c: inout ByteCursor) throws(TraceError) -> UInt64 {
        switch field {
        case .address: try Self.read(&address, &addressMore, field, c)
        case .size: try Self.read(&size, &sizeMore, field, c)
        case .id: try Self.read(&id, &idMore, field, c)
        case .back: try Self.read(&back, &backMore, field, c)
        }
    }

    /// A varint split in two: its first byte from `first`; when that has bit 7, the LEB128 of
    /// the value's bits from 7 up from `more`. Inline for values of one or two bytes (most).
    @inline(__always)
    private static func read(_ first: inout Stream, _ more: inout Stream, _ field: EventField,
                             _ c: ByteCursor) throws(TraceError) -> UInt64 {
        if first.position < first.count {
            let b = first.base[first.position]
            if b < 0x80 {
                first.position &+= 1
                return UInt64(b)
            }
            if more.position < more.count {
                let x = more.base[more.position]
                if x < 0x80 {
                    first.position &+= 1
                    more.position &+= 1
                    return UInt64(b & 0x7F) | UInt64(x) &<< 7
                }
            }
        }
        return try readSlow(&first, &more, field, c)
    }

    @inline(never)
    private static func readSlow(_ first: inout Stream, _ more: inout Stream, _ field: EventField,
                                 _ c: ByteCursor) throws(TraceError) -> UInt64 {
        guard first.position < first.count else {
            throw c.corrupt("the \(names[field.rawValue]) stream ends before the records that use it")
        }
        let b = first.base[first.position]
        first.position &+= 1
        if b < 0x80 { return UInt64(b) }
        var rest: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard more.position < more.count else {
                throw c.corrupt("the \(names[field.rawValue]) further-bytes stream ends before the records that use it")
            }
            let x = more.base[more.position]
            more.position &+= 1
            // The value has 64 bits: 7 in the first byte, at most 57 here.
            if shift == 56 && x > 1 { throw c.corrupt("a \(names[field.rawValue]) does not fit in 64 bits") }
            rest |= UInt64(x & 0x7F) &<< shift
            if x < 0x80 { return UInt64(b & 0x7F) | rest &<< 7 }
            shift &+= 7
        }
    }

    /// Throws unless every stream was read to its end.
    func checkConsumed(_ c: ByteCursor) throws(TraceError) {
        let all = [address, addressMore, size, sizeMore, id, idMore, back, backMore]
        for (k, s) in all.enumerated() where s.position != s.count {
            let what = k % 2 == 0 ? "" : " further-bytes"
            throw c.corrupt("the \(Self.names[k / 2])\(what) stream has \(s.count - s.position) bytes no record uses")
        }
    }
}
