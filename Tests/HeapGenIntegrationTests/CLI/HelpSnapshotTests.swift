// The help of `heapgen` and of every subcommand, compared with the snapshots in
// Fixtures/help: a change to a flag, a default or a sentence of help shows up as a diff
// to review. Black-box: runs the built binary, 80 columns, no terminal.
//
// After an intended change: HEAPGEN_UPDATE_SNAPSHOTS=1 swift test --filter HelpSnapshotTests,
// then review and commit the files under Tests/HeapGenIntegrationTests/CLI/Fixtures/help.

import Foundation
import HeapGenTestSupport
import XCTest

final class HelpSnapshotTests: XCTestCase {
    /// Where the snapshots are: `<name>.txt`, `heapgen.txt` for the top level.
    static let snapshots = TestPaths.fixtures(for: #filePath) + "/help"

    /// True when the snapshots are to be rewritten from the binary instead of compared.
    static let updating = ProcessInfo.processInfo.environment["HEAPGEN_UPDATE_SNAPSHOTS"] == "1"

    func testTopLevelHelp() throws {
        try assertSnapshot(try help([]), named: "heapgen")
    }

    func testEverySubcommandHelp() throws {
        let subcommands = try Self.subcommands(ofTopLevelHelp: try help([]))
        XCTAssertFalse(subcommands.isEmpty, "no SUBCOMMANDS section in `heapgen --help`")
        for name in subcommands {
            let text = try help([name])
            try assertSnapshot(text, named: name)
            // `heapgen help NAME` is the other way to ask: it must say the same.
            XCTAssertEqual(try help(["help", name], flag: false), text, "`heapgen help \(name)` differs from `heapgen \(name) --help`")
        }
    }

    /// A snapshot whose command is gone would otherwise linger unnoticed.
    func testNoSnapshotWithoutACommand() throws {
        let expected = Set(["heapgen"] + (try Self.subcommands(ofTopLevelHelp: try help([])))).map { $0 + ".txt" }
        let present = (try? FileManager.default.contentsOfDirectory(atPath: Self.snapshots)) ?? []
        let stale = Set(present).subtracting(expected).sorted()
        XCTAssertEqual(stale, [], "snapshots in \(Self.snapshots) for no command: remove them")
    }

    // MARK: - Support

    /// `heapgen ARGS --help` (or `heapgen ARGS` when `flag` is false) in 80 columns, with
    /// no terminal; it must exit 0 and print nothing on standard error.
    func help(_ arguments: [String], flag: Bool = true) throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment["COLUMNS"] = "80"
        let result = try HeapGenCLI.run(arguments + (flag ? ["--help"] : []), environment: environment, stdin: Data())
        XCTAssertEqual(result.status, 0, result.transcript)
        XCTAssertEqual(result.stderrText, "", result.transcript)
        return result.stdoutText
    }

    /// The subcommand names listed under `SUBCOMMANDS:` in the top-level help: the lines
    /// indented by exactly two spaces, up to the "See 'heapgen help …'" line.
    static func subcommands(ofTopLevelHelp text: String) throws -> [String] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(of: "SUBCOMMANDS:") else { return [] }
        var names: [String] = []
        for line in lines[(start + 1)...] {
            if line.hasPrefix("  See ") { break }
            guard line.hasPrefix("  "), !line.hasPrefix("   ") else { continue }
            if let name = line.split(separator: " ").first { names.append(String(name)) }
        }
        return names
    }

    /// Compares `actual` with the snapshot `name`.txt, or writes it when updating.
    func assertSnapshot(_ actual: String, named name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let path = Self.snapshots + "/" + name + ".txt"
        if Self.updating {
            try FileManager.default.createDirectory(atPath: Self.snapshots, withIntermediateDirectories: true)
            try actual.write(toFile: path, atomically: true, encoding: .utf8)
            return
        }
        guard let expected = try? String(contentsOfFile: path, encoding: .utf8) else {
            XCTFail("""
                no help snapshot \(path) for `heapgen \(name == "heapgen" ? "" : name + " ")--help`. \
                Create it with: HEAPGEN_UPDATE_SNAPSHOTS=1 swift test --filter HelpSnapshotTests
                """, file: file, line: line)
            return
        }
        guard actual != expected else { return }
        XCTFail("""
            the help of `heapgen \(name == "heapgen" ? "" : name + " ")--help` differs from \(path) \
            (- snapshot, + now):
            \(Self.lineDiff(expected, actual))
            If the change is intended, update the snapshots with \
            HEAPGEN_UPDATE_SNAPSHOTS=1 swift test --filter HelpSnapshotTests, and review and commit them.
            """, file: file, line: line)
    }

    /// A line diff of `old` and `new` (longest common subsequence): changed lines marked
    /// `-` and `+`, with up to two unchanged lines of context around each change.
    static func lineDiff(_ old: String, _ new: String) -> String {
        let a = old.split(separator: "\n", omittingEmptySubsequences: false)
        let b = new.split(separator: "\n", omittingEmptySubsequences: false)
        // common[i][j]: length of the LCS of a[i...] and b[j...]. Help texts are short.
        var common = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in stride(from: a.count - 1, through: 0, by: -1) {
            for j in stride(from: b.count - 1, through: 0, by: -1) {
                common[i][j] = a[i] == b[j] ? common[i + 1][j + 1] + 1 : max(common[i + 1][j], common[i][j + 1])
            }
        }
        var rows: [(mark: Character, text: Substring)] = []
        var i = 0, j = 0
        while i < a.count || j < b.count {
            if i < a.count && j < b.count && a[i] == b[j] {
                rows.append((" ", a[i])); i += 1; j += 1
            } else if i < a.count && (j == b.count || common[i + 1][j] >= common[i][j + 1]) {
                rows.append(("-", a[i])); i += 1
            } else {
                rows.append(("+", b[j])); j += 1
            }
        }
        let changed = rows.indices.filter { rows[$0].mark != " " }
        var out: [String] = []
        var last = -1
        for k in rows.indices where changed.contains(where: { abs($0 - k) <= 2 }) {
            if last >= 0 && k > last + 1 { out.append("  …") }
            out.append("\(rows[k].mark) \(rows[k].text)")
            last = k
        }
        return out.joined(separator: "\n")
    }
}
