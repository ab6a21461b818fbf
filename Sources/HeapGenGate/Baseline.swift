// Known findings that do not fail the gate: the heapgen-baseline/1 file.

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HeapGenReport

/// A list of findings accepted as known, so that only *new* abandoned memory fails a gate.
///
/// Written by `--write-baseline FILE`, read by `--baseline FILE`. JSON, keys sorted, one
/// entry per distinct ``BaselineSignature`` (sorted, so the file diffs well):
///
/// ```json
/// {
///   "entries" : [
///     {
///       "averageBytesPerCycle" : 192,
///       "frames" : [ { "file" : "sites.c", "function" : "leak_session", "line" : 32 }, … ],
///       "kind" : "abandoned",
///       "site" : "blocks at leak_session (sites.c:32)",
///       "typeName" : null
///     }
///   ],
///   "schema" : "heapgen-baseline/1"
/// }
/// ```
///
/// `site` and `averageBytesPerCycle` are for people and are not compared. A finding is known
/// when an entry has its exact signature, or — for code that moved — when an entry not matched
/// by any other finding has its signature except for line numbers.
public struct Baseline: Sendable, Equatable {
    /// The value of the `schema` key.
    public static let schemaVersion = "heapgen-baseline/1"
    /// Largest baseline file read.
    public static let maxFileSize = 16 << 20

    /// One known finding.
    public struct Entry: Codable, Sendable, Equatable {
        /// What identifies it.
        public var signature: BaselineSignature
        /// `Type at function (file:line)`, for people.
        public var site: String
        /// Growth when it was written, for people.
        public var averageBytesPerCycle: Int

        /// Creates an entry.
        public init(signature: BaselineSignature, site: String, averageBytesPerCycle: Int) {
            self.signature = signature
            self.site = site
            self.averageBytesPerCycle = averageBytesPerCycle
        }

        /// The entry for `finding`.
        public init(_ finding: Report.Finding) {
            self.init(signature: BaselineSignature(finding), site: SiteText.site(finding),
                      averageBytesPerCycle: finding.averageBytesPerCycle)
        }

        private enum CodingKeys: String, CodingKey { case kind, typeName, frames, site, averageBytesPerCycle }

        /// Reads an entry; `site` and `averageBytesPerCycle` may be missing.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            signature = BaselineSignature(kind: try c.decode(String.self, forKey: .kind),
                                          typeName: try c.decodeIfPresent(String.self, forKey: .typeName),
                                          frames: try c.decode([BaselineSignature.Frame].self, forKey: .frames))
            site = try c.decodeIfPresent(String.self, forKey: .site) ?? ""
            averageBytesPerCycle = try c.decodeIfPresent(Int.self, forKey: .averageBytesPerCycle) ?? 0
        }

        /// Writes the signature's parts, `site` and `averageBytesPerCycle`.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(signature.kind, forKey: .kind)
            try c.encode(signature.typeName, forKey: .typeName)
            try c.encode(signature.frames, forKey: .frames)
            try c.encode(site, forKey: .site)
            try c.encode(averageBytesPerCycle, forKey: .averageBytesPerCycle)
        }
    }

    /// Which findings an entry accounts for.
    public struct Match: Sendable, Equatable {
        /// For each finding given to ``Baseline/match(_:)``, the index of its entry, or `nil`.
        public var entryForFinding: [Int?]
        /// Entries that no finding matched: fixed, to be removed from the file.
        public var unmatchedEntries: [Int]
    }

    /// The known findings.
    public var entries: [Entry]

    /// A baseline of `entries`.
    public init(entries: [Entry] = []) {
        self.entries = entries
    }

    /// A baseline of `findings` (one entry per distinct signature, sorted).
    public init(findings: [Report.Finding]) {
        var seen = Set<BaselineSignature>()
        var entries: [Entry] = []
        for f in findings {
            let entry = Entry(f)
            if seen.insert(entry.signature).inserted { entries.append(entry) }
        }
        self.entries = entries.sorted { $0.signature.canonicalText < $1.signature.canonicalText }
    }

    /// Reads a baseline file.
    ///
    /// - Throws: ``BaselineError`` when it cannot be read or is not `heapgen-baseline/1` JSON.
    public static func load(path: String) throws -> Baseline {
        let data: Data
        do {
            data = try GateFile.read(path, limit: maxFileSize)
        } catch {
            throw BaselineError(path: path, message: "\(error)")
        }
        return try decode(data, source: path)
    }

    /// Parses baseline JSON; `source` names it in errors.
    public static func decode(_ data: Data, source: String) throws -> Baseline {
        struct Header: Decodable { var schema: String? }
        struct File: Decodable { var entries: [Entry] }
        guard let header = try? JSONDecoder().decode(Header.self, from: data) else {
            throw BaselineError(path: source, message: "not a JSON object")
        }
        guard header.schema == schemaVersion else {
            throw BaselineError(path: source, message: "schema is \(header.schema.map { "'\($0)'" } ?? "missing"), expected '\(schemaVersion)'")
        }
        do {
            return Baseline(entries: try JSONDecoder().decode(File.self, from: data).entries)
        } catch {
            throw BaselineError(path: source, message: "bad entries: \(error)")
        }
    }

    /// The file's JSON text, with a final newline.
    public func encoded() throws -> String {
        struct File: Encodable { var schema: String; var entries: [Entry] }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(File(schema: Self.schemaVersion, entries: entries))
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// Matches `findings` against the entries: exact signatures first (an entry may account for
    /// several findings with the same signature), then, for the findings left, signatures
    /// without lines against entries nothing matched yet (each such entry once).
    public func match(_ findings: [Report.Finding]) -> Match {
        var exact: [BaselineSignature: Int] = [:]
        for (i, e) in entries.enumerated() where exact[e.signature] == nil { exact[e.signature] = i }
        var result = [Int?](repeating: nil, count: findings.count)
        var used = Set<Int>()
        let signatures = findings.map(BaselineSignature.init)
        for (i, s) in signatures.enumerated() {
            if let e = exact[s] {
                result[i] = e
                used.insert(e)
            }
        }
        for (i, s) in signatures.enumerated() where result[i] == nil {
            let loose = s.withoutLines
            if let e = entries.indices.first(where: { !used.contains($0) && entries[$0].signature.withoutLines == loose }) {
                result[i] = e
                used.insert(e)
            }
        }
        return Match(entryForFinding: result, unmatchedEntries: entries.indices.filter { !used.contains($0) })
    }
}

/// A baseline file that cannot be read or parsed.
public struct BaselineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file.
    public var path: String
    /// What is wrong.
    public var message: String
    public var description: String { "\(path): \(message)" }
}
