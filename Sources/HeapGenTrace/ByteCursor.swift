// Bounds-checked decoding of one chunk payload.

/// Reads fields from a chunk payload. Every read is bounds-checked against the
/// payload and throws `.corrupt` (a chunk holds whole records, so running off
/// its end is corruption, not truncation).
struct ByteCursor {
    let base: UnsafePointer<UInt8>
    let count: Int
    var position = 0
    /// File offset of `base[0]`, for error messages.
    let fileOffset: UInt64
    let file: String

    /// All errors name `fileOffset` itself (a decompressed payload has no file offsets).
    let fixedOffset: Bool

    init(_ bytes: UnsafeRawBufferPointer, fileOffset: UInt64, file: String, fixedOffset: Bool = false) {
        self.fixedOffset = fixedOffset
        // A chunk payload is never empty; an empty buffer still gets a valid (unused) base.
        base = bytes.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? UnsafePointer(bitPattern: 1)!
        count = bytes.count
        self.fileOffset = fileOffset
        self.file = file
    }

    var remaining: Int { count &- position }
    var atEnd: Bool { position >= count }

    /// A `.corrupt` error at payload position `at` (default: the current position).
    func corrupt(_ message: String, at: Int? = nil) -> TraceError {
        if fixedOffset {
            return TraceError(.corrupt, "\(message) (at byte \(at ?? position) of the decompressed chunk)",
                              offset: fileOffset, file: file)
        }
        return TraceError(.corrupt, message, offset: fileOffset &+ UInt64(at ?? position), file: file)
    }

    @inline(__always)
    mutating func byte() throws(TraceError) -> UInt8 {
        guard position < count else { throw corrupt("record runs past the end of its chunk") }
        let b = base[position]
        position &+= 1
        return b
    }

    @inline(__always)
    mutating func varint() throws(TraceError) -> UInt64 {
        if count &- position >= Varint.maxBytes {
            // Fast path: all ten possible bytes are in the chunk.
            let p = base + position
            var b = p[0]
            if b < 0x80 {
                position &+= 1
                return UInt64(b)
            }
            var result = UInt64(b & 0x7F)
            var i = 1
            while true {
                b = p[i]
                if i == 9 && b > 1 { break }
                result |= UInt64(b & 0x7F) &<< UInt64(7 &* i)
                i &+= 1
                if b < 0x80 {
                    position &+= i
                    return result
                }
                if i == 10 { break }
            }
        }
        return try varintSlow()
    }

    private mutating func varintSlow() throws(TraceError) -> UInt64 {
        let start = position
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < count else { throw corrupt("varint runs past the end of its chunk", at: start) }
            let b = base[position]
            position &+= 1
            if shift == 63 && b > 1 {
                throw corrupt("varint does not fit in 64 bits", at: start)
            }
            result |= UInt64(b & 0x7F) &<< shift
            if b < 0x80 { return result }
            shift &+= 7
        }
    }

    /// A varint that must fit in 32 bits (ids, tids, flags).
    @inline(__always)
    mutating func varint32(_ what: StaticString) throws(TraceError) -> UInt32 {
        let start = position
        let v = try varint()
        guard let v32 = UInt32(exactly: v) else { throw corrupt("\(what) \(v) does not fit in 32 bits", at: start) }
        return v32
    }

    /// Signed 32-bit value stored as its 32-bit two's-complement bit pattern (pid, status).
    mutating func int32(_ what: StaticString) throws(TraceError) -> Int32 {
        Int32(bitPattern: try varint32(what))
    }

    /// A zigzag delta added (wrapping) to `previous`.
    @inline(__always)
    mutating func delta(from previous: UInt64) throws(TraceError) -> UInt64 {
        previous &+ Varint.unzigzag(try varint())
    }

    /// A length prefix bounded by `limit` and by the bytes left in the chunk.
    mutating func length(_ what: StaticString, limit: Int) throws(TraceError) -> Int {
        let start = position
        let v = try varint()
        guard v <= UInt64(limit) else { throw corrupt("\(what) \(v) is over the limit of \(limit)", at: start) }
        let n = Int(v)
        guard n <= remaining else {
            throw corrupt("\(what) \(n) is more than the \(remaining) bytes left in the chunk", at: start)
        }
        return n
    }

    /// Raw bytes of a `string` or `bytes` field (length + bytes), not copied.
    mutating func rawBytes(_ what: StaticString, limit: Int) throws(TraceError) -> UnsafeBufferPointer<UInt8> {
        let n = try length(what, limit: limit)
        let bytes = UnsafeBufferPointer(start: base + position, count: n)
        position &+= n
        return bytes
    }

    /// A `string` field: at most 64 KiB of valid UTF-8.
    mutating func string(_ what: StaticString) throws(TraceError) -> String {
        let start = position
        let bytes = try rawBytes(what, limit: TraceFormat.maxStringBytes)
        guard let s = String(validating: bytes, as: UTF8.self) else {
            throw corrupt("\(what) is not valid UTF-8", at: start)
        }
        return s
    }

    /// A `bytes` field, bounded by the chunk.
    mutating func bytes(_ what: StaticString) throws(TraceError) -> [UInt8] {
        Array(try rawBytes(what, limit: TraceFormat.maxChunkPayload))
    }

    mutating func skip(_ n: Int) {
        position &+= n
    }
}
