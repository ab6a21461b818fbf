// LEB128 varints and zigzag signed varints (docs/trace-format.md, "All integers...").

/// Encoding helpers for unsigned LEB128 and zigzag varints.
enum Varint {
    /// The most bytes a 64-bit varint takes.
    static let maxBytes = 10

    /// Zigzag-encodes the two's-complement difference `delta` (e.g. `address &- previous`).
    @inline(__always)
    static func zigzag(_ delta: UInt64) -> UInt64 {
        let d = Int64(bitPattern: delta)
        return UInt64(bitPattern: (d &<< 1) ^ (d &>> 63))
    }

    /// Inverse of ``zigzag(_:)``: the difference to add (wrapping) to the previous value.
    @inline(__always)
    static func unzigzag(_ value: UInt64) -> UInt64 {
        (value &>> 1) ^ (0 &- (value & 1))
    }

    /// Writes `value` as LEB128 at `buffer[offset...]` and returns the offset past it.
    /// The caller guarantees room for ``maxBytes`` bytes.
    @inline(__always)
    static func put(_ value: UInt64, into buffer: UnsafeMutablePointer<UInt8>, at offset: Int) -> Int {
        var v = value
        var i = offset
        while v >= 0x80 {
            buffer[i] = UInt8(truncatingIfNeeded: v) | 0x80
            v &>>= 7
            i &+= 1
        }
        buffer[i] = UInt8(truncatingIfNeeded: v)
        return i &+ 1
    }

    /// Number of bytes ``put(_:into:at:)`` writes for `value`.
    static func size(of value: UInt64) -> Int {
        var v = value
        var n = 1
        while v >= 0x80 {
            v &>>= 7
            n &+= 1
        }
        return n
    }
}
