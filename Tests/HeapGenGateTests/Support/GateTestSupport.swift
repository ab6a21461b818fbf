// Test support specific to the gate tests: this target's fixtures and
// `heapgen run --format json` decoded with HeapGenReport. The common pieces
// (paths, scratch directories, processes, fixture compilation, running heapgen)
// are in HeapGenTestSupport. Nothing here skips: a missing binary or compiler
// throws a `TestSupportError` saying what to do.

import Foundation
import HeapGenReport
import HeapGenTestSupport

// MARK: - Fixtures

enum GateFixture {
    /// Tests/HeapGenGateTests/Fixtures.
    static let directory = TestPaths.fixtures(for: #filePath)

    static func sourcePath(_ source: String) -> String { directory + "/" + source }

    /// Compiles a C fixture once per test process (see `FixtureCompiler.build`).
    static func c(_ source: String) throws -> String {
        try FixtureCompiler.build(source, in: directory)
    }

    /// Compiles a Swift fixture directory with Sources/HeapGen/HeapGen.swift.
    static func swift(_ dir: String, module: String) throws -> String {
        try FixtureCompiler.swiftWithHeapGen(dir, in: directory, module: module)
    }

    /// 1-based numbers of the lines of `source` containing `needle`.
    static func lines(_ source: String, containing needle: String) throws -> [Int] {
        try FixtureCompiler.lines(source, in: directory, containing: needle)
    }
}

// MARK: - heapgen

extension HeapGenCLI {
    /// `heapgen run --format json --output DIR/report.json FLAGS -- PROGRAM ARGS`: the result
    /// and the report.
    static func runJSON(_ program: String, _ arguments: [String] = [], flags: [String] = []) throws -> (ProcessResult, Report) {
        let out = try TestPaths.freshDirectory("json") + "/report.json"
        let r = try run(["run", "--format", "json", "--output", out] + flags + ["--", program] + arguments)
        guard let data = FileManager.default.contents(atPath: out) else {
            throw TestSupportError("no report written:\n\(r.transcript)")
        }
        return (r, try JSONReport.decode(data))
    }
}
