// A minimal protocol buffers encoder: what profile.proto needs.

/// Writes protocol buffer messages (wire format: varint and length-delimited fields).
///
/// Scalars follow proto3: a field whose value is 0 (or an empty string) is not written,
/// unless `always` is set. Repeated scalars are written packed. Nested messages are
/// built by a closure on a fresh writer and written length-delimited.
///
/// ```swift
/// var w = ProtobufWriter()
/// w.int64(1, 150)                          // 08 96 01
/// w.message(2) { $0.string(1, "hi") }      // 12 04 0a 02 68 69
/// ```
public struct ProtobufWriter: Sendable {
    /// Wire types.
    public enum WireType: UInt64, Sendable {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    /// The encoded bytes so far.
    public private(set) var bytes: [UInt8] = []

    public init() {}

    /// The bytes written so far, handed over: the writer starts again empty (a top-level
    /// message is a series of fields, so its pieces can be written out as they fill).
    public mutating func takeBytes() -> [UInt8] {
        let taken = bytes
        bytes = []
        return taken
    }

    /// Appends `value` as an unsigned LEB128 varint (1…10 bytes).
    public mutating func appendVarint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// Appends a field key (field number and wire type).
    public mutating func appendKey(_ field: Int, _ type: WireType) {
        precondition(field >= 1 && field < 1 << 29, "protobuf field numbers are 1…2^29-1")
        appendVarint(UInt64(field) << 3 | type.rawValue)
    }

    /// A `uint64` field.
    public mutating func uint64(_ field: Int, _ value: UInt64, always: Bool = false) {
        guard value != 0 || always else { return }
        appendKey(field, .varint)
        appendVarint(value)
    }

    /// An `int64` field: negative values take 10 bytes (two's complement), as protobuf specifies.
    public mutating func int64(_ field: Int, _ value: Int64, always: Bool = false) {
        uint64(field, UInt64(bitPattern: value), always: always)
    }

    /// A `bool` field.
    public mutating func bool(_ field: Int, _ value: Bool, always: Bool = false) {
        uint64(field, value ? 1 : 0, always: always)
    }

    /// A `bytes` field.
    public mutating func bytes(_ field: Int, _ value: [UInt8], always: Bool = false) {
        guard !value.isEmpty || always else { return }
        appendKey(field, .lengthDelimited)
        appendVarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A `string` field (UTF-8).
    public mutating func string(_ field: Int, _ value: String, always: Bool = false) {
        bytes(field, Array(value.utf8), always: always)
    }

    /// A packed `repeated uint64` field (nothing when empty).
    public mutating func packedUInt64(_ field: Int, _ values: [UInt64]) {
        guard !values.isEmpty else { return }
        var inner = ProtobufWriter()
        for v in values { inner.appendVarint(v) }
        bytes(field, inner.bytes)
    }

    /// A packed `repeated int64` field (nothing when empty).
    public mutating func packedInt64(_ field: Int, _ values: [Int64]) {
        packedUInt64(field, values.map { UInt64(bitPattern: $0) })
    }

    /// An embedded message, built by `body` (written even when empty: a repeated message counts).
    public mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        var inner = ProtobufWriter()
        body(&inner)
        bytes(field, inner.bytes, always: true)
    }
}
