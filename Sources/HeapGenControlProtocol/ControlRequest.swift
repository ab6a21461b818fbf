// Control-channel requests: their caps, how the collector reads them and how a
// client writes them. The protocol itself is described in docs/control-protocol.md.
// No Foundation: this module is linked into users' test binaries (HeapGenTesting).

import HeapGenJSON

/// Caps on one request (the shim's request region is larger; see docs/control-protocol.md).
public enum ControlLimits {
    /// Longest request the collector reads.
    public static let maxRequestBytes = 16 * 1024
    /// Most members in a request.
    public static let maxKeys = 32
    /// Longest string value or key.
    public static let maxStringBytes = 4096
    /// Requests are one flat object.
    public static let request = JSONLimits(maxBytes: maxRequestBytes, maxDepth: 1, maxKeys: maxKeys,
                                           maxStringBytes: maxStringBytes)
    /// Longest growth-session label kept (longer ones are cut).
    public static let maxLabelCharacters = 256
}

/// A request the collector refuses; `description` is the answer's `"error"` text.
public struct ControlProtocolError: Error, CustomStringConvertible, Sendable {
    /// The error text sent to the client.
    public var description: String
    /// An error answered with `description`.
    public init(_ description: String) { self.description = description }
}

/// The operations of the control channel.
public enum ControlOp: String, Sendable, CaseIterable {
    case ping, track, untrack, status, object, begin, growth, end, scan, retention
}

/// The analysis options of a growth session (`begin`, repeated in `growth`). Defaults are
/// those of a report (`AnalysisOptions()`).
public struct GrowthOptions: Sendable, Equatable {
    /// Cycles left out of the judgement at the start.
    public var warmUp: Int
    /// Judged cycles that may show no growth while a site is still called abandoned.
    public var toleratedMisses: Int
    /// A cycle counts as growth only if its live bytes rose by at least this much (0: any rise).
    public var minBytesPerCycle: Int
    /// A cycle counts as growth only if its live objects rose by at least this many (0: any rise).
    public var minObjectsPerCycle: Int

    /// Options; the defaults are a report's.
    public init(warmUp: Int = 1, toleratedMisses: Int = 1, minBytesPerCycle: Int = 0, minObjectsPerCycle: Int = 0) {
        self.warmUp = warmUp
        self.toleratedMisses = toleratedMisses
        self.minBytesPerCycle = minBytesPerCycle
        self.minObjectsPerCycle = minObjectsPerCycle
    }
}

/// One parsed request: its `op` and its members (extra members are ignored by the ops).
public struct ControlRequest: Sendable {
    /// The `op` string, as sent (not necessarily a known ``ControlOp``).
    public var opName: String
    /// Every member, the last of duplicates.
    public var fields: [String: JSONValue]

    /// The known op named, or nil.
    public var op: ControlOp? { ControlOp(rawValue: opName) }

    /// Reads a request. The error texts are part of the protocol's answers.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(ControlProtocolError) -> ControlRequest {
        let value: JSONValue
        do {
            value = try JSONReader.parse(bytes, limits: ControlLimits.request)
        } catch {
            throw ControlProtocolError("malformed request: \(error)")
        }
        guard let fields = value.members else { throw ControlProtocolError("malformed request: expected '{' at byte 0") }
        guard let op = fields["op"]?.string else { throw ControlProtocolError("the request has no \"op\" string") }
        return ControlRequest(opName: op, fields: fields)
    }

    /// An address member: a `"0x…"` hex string, a decimal string, or a number below 2^53.
    public func address(_ key: String) -> UInt64? {
        switch fields[key] {
        case .string(let s)?:
            if s.hasPrefix("0x") || s.hasPrefix("0X") { return UInt64(s.dropFirst(2), radix: 16) }
            return UInt64(s)
        case let value? where value.number != nil:
            return value.integer(in: 0...(1 << 53)).map { UInt64($0) }
        default:
            return nil
        }
    }

    /// `begin`'s label, cut to ``ControlLimits/maxLabelCharacters``.
    public var label: String? { fields["label"]?.string.map { String($0.prefix(ControlLimits.maxLabelCharacters)) } }

    /// `growth`'s `keep`: true only for a JSON `true`.
    public var keep: Bool { fields["keep"] == .bool(true) }

    /// The growth options given, absent or null ones taken from `base`.
    public func growthOptions(base: GrowthOptions) throws(ControlProtocolError) -> GrowthOptions {
        var o = base
        let limit = 0...1_000_000
        for (key, path) in [("warmUp", \GrowthOptions.warmUp), ("toleratedMisses", \.toleratedMisses),
                            ("minBytesPerCycle", \.minBytesPerCycle), ("minObjectsPerCycle", \.minObjectsPerCycle)] {
            guard let value = fields[key], value != .null else { continue }
            guard let n = value.integer(in: key.hasPrefix("min") ? 0...Int(Int32.max) : limit) else {
                throw ControlProtocolError("\"\(key)\" must be a non-negative integer")
            }
            o[keyPath: path] = n
        }
        return o
    }
}

/// Request texts, as a client sends them.
public enum ControlRequestText {
    /// `{"op":"<op>"}`, for the ops without arguments.
    public static func simple(_ op: ControlOp) -> String { "{\"op\":\"\(op.rawValue)\"}" }

    /// `{"op":"object","address":"0x…"}`.
    public static func object(address: UInt) -> String {
        "{\"op\":\"object\",\"address\":\"0x" + String(address, radix: 16) + "\"}"
    }

    /// `{"op":"retention","address":"0x…"}`.
    public static func retention(address: UInt) -> String {
        "{\"op\":\"retention\",\"address\":\"0x" + String(address, radix: 16) + "\"}"
    }

    /// `{"op":"begin",…}` with every option.
    public static func begin(label: String, options: GrowthOptions) -> String {
        var w = JSONObjectWriter()
        w.string("op", "begin")
        w.string("label", label)
        w.int("warmUp", options.warmUp)
        w.int("toleratedMisses", options.toleratedMisses)
        w.int("minBytesPerCycle", options.minBytesPerCycle)
        w.int("minObjectsPerCycle", options.minObjectsPerCycle)
        return w.json
    }
}

extension ControlProtocolError {
    /// An `op` the collector does not know (its name cut to 64 characters).
    public static func unknownOp(_ name: String) -> ControlProtocolError {
        ControlProtocolError("unknown op \(JSONWriter.quote(String(name.prefix(64))))")
    }

    /// An op this collector was built without the means to answer.
    public static func unanswerable(_ op: String) -> ControlProtocolError {
        ControlProtocolError("this collector cannot answer \"\(op)\"")
    }
}
