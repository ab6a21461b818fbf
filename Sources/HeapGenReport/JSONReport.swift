// The heapgen-report/1 JSON text.

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Encodes and decodes a ``Report`` as `heapgen-report/1` JSON: pretty-printed, keys sorted,
/// slashes unescaped, addresses as `"0x…"` strings, unknown values as `null`.
public enum JSONReport {
    /// The JSON text of `report`, with a final newline.
    public static func render(_ report: Report) throws -> String {
        String(decoding: try data(report), as: UTF8.self) + "\n"
    }

    /// The JSON bytes of `report` (no final newline).
    public static func data(_ report: Report) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(report)
    }

    /// Reads a report back (unknown keys are ignored, as the schema asks of consumers).
    public static func decode(_ data: Data) throws -> Report {
        try JSONDecoder().decode(Report.self, from: data)
    }
}
