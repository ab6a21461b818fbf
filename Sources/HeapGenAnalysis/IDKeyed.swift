// Encodes id-keyed dictionaries as JSON objects.

/// A dictionary keyed by a trace id, encoded as an object whose keys are the ids in
/// decimal (`{"7": …}`) rather than the `[key, value, key, value…]` array Swift uses
/// for non-String keys.
@propertyWrapper
public struct IDKeyed<Value: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    /// The dictionary.
    public var wrappedValue: [UInt32: Value]

    /// Wraps `wrappedValue`.
    public init(wrappedValue: [UInt32: Value]) {
        self.wrappedValue = wrappedValue
    }

    /// Decodes an object keyed by decimal ids.
    public init(from decoder: any Decoder) throws {
        let strings = try [String: Value](from: decoder)
        var values: [UInt32: Value] = [:]
        for (key, value) in strings {
            guard let id = UInt32(key) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                        debugDescription: "\(key) is not a 32-bit id"))
            }
            values[id] = value
        }
        wrappedValue = values
    }

    /// Encodes an object keyed by decimal ids.
    public func encode(to encoder: any Encoder) throws {
        var strings: [String: Value] = [:]
        for (key, value) in wrappedValue { strings[String(key)] = value }
        try strings.encode(to: encoder)
    }
}
