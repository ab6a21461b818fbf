// The heapgen-report/1 JSON text.

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HeapGenUnits

/// Encodes and decodes a ``Report`` as `heapgen-report/1` JSON: pretty-printed, keys sorted,
/// slashes unescaped, addresses as `"0x…"` strings, unknown values as `null`.
public enum JSONReport {
    /// The JSON text of `report`, with a final newline.
    public static func render(_ report: Report) throws -> String {
        String(decoding: try data(report), as: UTF8.self) + "\n"
    }

    /// Most per-cycle values (``Report/Finding/objectsPerCycle`` and ``Report/Finding/bytesPerCycle``
    /// of every finding) a JSON report holds. The schema lists every cycle of every finding,
    /// so a trace with tens of thousands of findings over thousands of marks would make a
    /// report of gigabytes; such a report is refused (``TooLarge``) rather than built.
    public static let maxPerCycleValues = 8_000_000

    /// A JSON report that would hold more than ``maxPerCycleValues`` per-cycle values.
    public struct TooLarge: Error, CustomStringConvertible {
        /// Per-cycle values the report would hold.
        public var values: Int
        /// Findings of the report.
        public var findings: Int

        public var description: String {
            "the JSON report would list \(HumanUnits.count(values)) per-cycle values (\(HumanUnits.count(findings)) findings), more than \(HumanUnits.count(JSONReport.maxPerCycleValues)); use the text report, heapgen diff or heapgen export"
        }
    }

    /// The JSON bytes of `report` (no final newline).
    ///
    /// - Throws: ``TooLarge`` if the findings hold more than ``maxPerCycleValues`` per-cycle values.
    public static func data(_ report: Report) throws -> Data {
        var values = 0
        for f in report.findings { values &+= f.objectsSeries.count &+ f.bytesSeries.count }
        if values > maxPerCycleValues { throw TooLarge(values: values, findings: report.findings.count) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(report)
    }

    /// Reads a report back (unknown keys are ignored, as the schema asks of consumers).
    public static func decode(_ data: Data) throws -> Report {
        try JSONDecoder().decode(Report.self, from: data)
    }
}
