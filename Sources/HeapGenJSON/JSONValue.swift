// One JSON value as read by ``JSONReader``: the small model every hand-read JSON
// document in heapgen (control requests, llvm-symbolizer replies) goes through.

/// A parsed JSON value. Objects keep their members in document order.
public enum JSONValue: Equatable, Sendable {
    /// Members in document order (duplicates kept).
    case object([(key: String, value: JSONValue)])
    case array([JSONValue])
    case string(String)
    /// Every number, as JSON has one number type.
    case number(Double)
    case bool(Bool)
    case null

    /// Structural equality; objects compare member by member, in order.
    public static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.array(let x), .array(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.number(let x), .number(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.null, .null): return true
        default: return false
        }
    }

    /// The member `key` of an object; with duplicate keys the last one wins
    /// (as most readers do), nil for a missing key or a non-object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.key == key }?.value
    }

    /// An object's members by key (the last of duplicates), or nil.
    public var members: [String: JSONValue]? {
        guard case .object(let members) = self else { return nil }
        var out: [String: JSONValue] = [:]
        for m in members { out[m.key] = m.value }
        return out
    }

    /// The string, or nil for any other kind.
    public var string: String? { if case .string(let s) = self { s } else { nil } }
    /// The boolean, or nil for any other kind.
    public var bool: Bool? { if case .bool(let b) = self { b } else { nil } }
    /// The number, or nil for any other kind.
    public var number: Double? { if case .number(let d) = self { d } else { nil } }
    /// The items, or nil for any other kind.
    public var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    /// True for `null`.
    public var isNull: Bool { self == .null }

    /// An integral number that `Int` holds exactly (|n| < 2^53), or nil.
    public var int: Int? {
        guard case .number(let d) = self, d.rounded() == d, abs(d) < 9_007_199_254_740_992 else { return nil }
        return Int(d)
    }

    /// An integral number within `range`, or nil (also for non-integral numbers).
    public func integer(in range: ClosedRange<Int>) -> Int? {
        guard case .number(let d) = self, d.isFinite, d.rounded() == d,
              d >= Double(range.lowerBound), d <= Double(range.upperBound) else { return nil }
        return Int(d)
    }

    /// A non-negative integral number that `UInt64` holds exactly (< 2^53), or nil.
    public var uint64: UInt64? {
        guard case .number(let d) = self, d >= 0, d.rounded() == d, d < 9_007_199_254_740_992 else { return nil }
        return UInt64(d)
    }
}
