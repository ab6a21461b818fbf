// Test support specific to the diff and export tests: this target's fixtures
// and the heapgen-diff/1 JSON read leniently. The common pieces (paths, scratch
// directories, processes, fixture compilation, running heapgen) are in
// HeapGenTestSupport.
//
// Nothing here skips: a missing binary, compiler or tool throws a
// `TestSupportError` whose message says what to build or install, and the test
// that needed it fails.

import Foundation
import HeapGenTestSupport

// MARK: - Fixtures

enum DiffExportFixture {
    /// Tests/HeapGenIntegrationTests/DiffExport/Fixtures.
    static let directory = TestPaths.fixtures(for: #filePath)

    static func sourcePath(_ source: String) -> String { directory + "/" + source }

    /// Compiles a C fixture once per test process (see `FixtureCompiler.build`).
    static func c(_ source: String) throws -> String {
        try FixtureCompiler.build(source, in: directory)
    }

    /// 1-based numbers of the lines of `source` containing `needle`.
    static func lines(_ source: String, containing needle: String) throws -> [Int] {
        try FixtureCompiler.lines(source, in: directory, containing: needle)
    }
}

// MARK: - heapgen-diff/1

/// One entry of a heapgen-diff/1 document, read leniently.
struct DiffEntry: CustomStringConvertible {
    let json: [String: Any]
    var status: String? { json["status"] as? String }
    var frames: [[String: Any]] { json["frames"] as? [[String: Any]] ?? [] }
    var userFrame: [String: Any]? { jsonInt(json["userFrame"]).flatMap { frames.indices.contains($0) ? frames[$0] : nil } }
    var function: String? { userFrame?["function"] as? String }
    var file: String? { userFrame?["file"] as? String }
    var line: Int? { jsonInt(userFrame?["line"]) }
    func int(_ key: String) -> Int? { jsonInt(json[key]) }
    func amount(_ key: String) -> (objects: Int, bytes: Int)? {
        guard let a = json[key] as? [String: Any], let o = jsonInt(a["objects"]), let b = jsonInt(a["bytes"]) else { return nil }
        return (o, b)
    }
    var description: String {
        "\(status ?? "?") \(function ?? "?") \(file ?? "?"):\(line.map(String.init) ?? "?") "
            + "objects \(int("objectsBefore") ?? -1)→\(int("objectsAfter") ?? -1) bytes \(int("bytesBefore") ?? -1)→\(int("bytesAfter") ?? -1)"
            + " added \(amount("added").map { "\($0)" } ?? "-") removed \(amount("removed").map { "\($0)" } ?? "-")"
    }
}

extension Dictionary where Key == String, Value == Any {
    var diffEntries: [DiffEntry] { (self["entries"] as? [[String: Any]] ?? []).map(DiffEntry.init) }
    var diffTotals: [String: Any] { self["totals"] as? [String: Any] ?? [:] }
}
