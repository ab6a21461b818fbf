/// JSON (for `heapgen info --format json` and reports) spells these enums
/// by case name — `"signaled"`, not `1` — so scripts don't need the wire
/// format's codes. The binary trace keeps the raw values.
public protocol CaseNameCodable: Codable, CaseIterable, RawRepresentable where RawValue == UInt8 {}

extension CaseNameCodable {
    /// The case name as written in JSON.
    public var caseName: String { String(describing: self) }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(caseName)
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        guard let value = Self.allCases.first(where: { $0.caseName == name }) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "unknown value \"\(name)\"")
        }
        self = value
    }
}

extension AllocationFunction: CaseNameCodable {}
extension FreeFunction: CaseNameCodable {}
extension MarkOrigin: CaseNameCodable {}
extension ProcessOrigin: CaseNameCodable {}
extension EndReason: CaseNameCodable {}
