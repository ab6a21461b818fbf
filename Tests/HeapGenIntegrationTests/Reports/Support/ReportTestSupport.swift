// Test support specific to the end-to-end report tests: this target's
// fixtures, `heapgen run/report` returning the `heapgen-report/1` JSON read
// leniently (`Report`), and FIFOs for fixtures that wait on the test. The
// common pieces (paths, scratch directories, processes, fixture compilation,
// running heapgen) are in HeapGenTestSupport.
//
// Nothing here skips: a missing binary, compiler or tool throws a
// `TestSupportError` whose message says what to build or install, and the
// test that needed it fails.

import Foundation
import HeapGenTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Fixtures

enum ReportFixture {
    /// Tests/HeapGenIntegrationTests/Reports/Fixtures.
    static let directory = TestPaths.fixtures(for: #filePath)

    /// Absolute path of a fixture source (a file in Fixtures/, or Fixtures/<Dir>/main.swift).
    static func sourcePath(_ source: String) -> String { directory + "/" + source }

    /// Compiles a C fixture once per test process (see `FixtureCompiler.build`).
    static func c(_ source: String, flags: [String] = []) throws -> String {
        try FixtureCompiler.build(source, in: directory, flags: flags)
    }

    /// Compiles a C++ fixture once per test process (see `FixtureCompiler.build`).
    static func cxx(_ source: String) throws -> String {
        try FixtureCompiler.build(source, in: directory)
    }

    /// Compiles a Swift fixture directory (Fixtures/<dir>/*.swift) together with
    /// Sources/HeapGen/HeapGen.swift.
    static func swift(_ dir: String, module: String = "Fixture") throws -> String {
        try FixtureCompiler.swiftWithHeapGen(dir, in: directory, module: module)
    }

    /// Lines of `function` in a fixture source: the lines carrying `BEGIN name` and `END name` markers.
    static func markedLines(_ source: String, _ name: String) throws -> ClosedRange<Int> {
        let text = try String(contentsOfFile: sourcePath(source), encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        guard let begin = lines.firstIndex(where: { $0.contains("BEGIN \(name)") }),
              let end = lines.firstIndex(where: { $0.contains("END \(name)") }), begin < end else {
            throw TestSupportError("markers BEGIN/END \(name) not found in \(source)")
        }
        return (begin + 1)...(end + 1)
    }

    /// Line numbers (1-based) of lines containing `needle`.
    static func lines(_ source: String, containing needle: String) throws -> [Int] {
        try FixtureCompiler.lines(source, in: directory, containing: needle)
    }
}

// MARK: - heapgen

extension HeapGenCLI {
    /// `heapgen run --format json --output DIR/report.json --trace DIR/x.trace FLAGS -- PROGRAM ARGS`:
    /// the report read from the output file.
    static func runJSON(_ program: String, _ arguments: [String] = [], flags: [String] = [],
                        expectStatus: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws -> RunReport {
        let dir = try TestPaths.freshDirectory("run")
        let trace = dir + "/x.trace", out = dir + "/report.json"
        let result = try run(["run", "--format", "json", "--output", out, "--trace", trace] + flags + ["--", program] + arguments)
        guard result.status == expectStatus else {
            throw TestSupportError("expected status \(expectStatus):\n\(result.transcript)")
        }
        guard let data = FileManager.default.contents(atPath: out) else {
            throw TestSupportError("heapgen run wrote no report to \(out):\n\(result.transcript)")
        }
        return RunReport(report: try Report(data: data, origin: result.command), result: result, trace: trace)
    }

    /// `heapgen report TRACE --format json FLAGS`, required to exit 0 and print one JSON object.
    static func report(_ trace: String, flags: [String] = []) throws -> Report {
        let result = try run(["report", trace, "--format", "json"] + flags)
        guard result.status == 0 else { throw TestSupportError("heapgen report failed:\n\(result.transcript)") }
        return try Report(data: result.stdout, origin: result.command)
    }
}

struct RunReport {
    var report: Report
    var result: ProcessResult
    var trace: String
}

// MARK: - The report (heapgen-report/1), read leniently

struct Frame {
    let json: [String: Any]
    var function: String? { json["function"] as? String }
    var shortFunction: String? { json["shortFunction"] as? String }
    var file: String? { json["file"] as? String }
    var line: Int? { jsonInt(json["line"]) }
    var module: String? { json["module"] as? String }
    var inlined: Bool? { json["inlined"] as? Bool }
    var text: String { "\(function ?? "?") at \(file ?? "?"):\(line.map(String.init) ?? "?") in \(module ?? "?")" }
}

struct ReportFinding {
    let json: [String: Any]
    var kind: String { json["kind"] as? String ?? "?" }
    var typeName: String? { json["typeName"] as? String }
    var frames: [Frame] { (json["frames"] as? [[String: Any]] ?? []).map(Frame.init) }
    var userFrameIndex: Int? { jsonInt(json["userFrame"]) }
    var userFrame: Frame? { userFrameIndex.flatMap { frames[safe: $0] } }
    var cycles: Int? { jsonInt(json["cycles"]) }
    var cyclesWithGrowth: Int? { jsonInt(json["cyclesWithGrowth"]) }
    var objectsPerCycle: [Int] { (json["objectsPerCycle"] as? [Any] ?? []).compactMap(jsonInt) }
    var bytesPerCycle: [Int] { (json["bytesPerCycle"] as? [Any] ?? []).compactMap(jsonInt) }
    var survivingObjects: Int? { jsonInt(json["survivingObjects"]) }
    var survivingBytes: Int? { jsonInt(json["survivingBytes"]) }
    var averageBytesPerCycle: Double? { (json["averageBytesPerCycle"] as? NSNumber)?.doubleValue }

    /// True if any frame's function (full or short) contains `name`.
    func hasFunction(_ name: String) -> Bool {
        frames.contains { ($0.function ?? "").contains(name) || ($0.shortFunction ?? "").contains(name) }
    }

    var summary: String {
        "\(kind) \(typeName ?? "-") objects/cycle \(objectsPerCycle) bytes/cycle \(bytesPerCycle) "
            + "growth \(cyclesWithGrowth.map(String.init) ?? "?")/\(cycles.map(String.init) ?? "?") "
            + "user frame \(userFrameIndex.map(String.init) ?? "nil"): \(userFrame?.text ?? "-") "
            + "| frames: " + frames.prefix(6).map { $0.shortFunction ?? $0.function ?? "?" }.joined(separator: " < ")
    }
}

struct Generation {
    let json: [String: Any]
    var index: Int? { jsonInt(json["index"]) }
    var label: String? { json["label"] as? String }
    var allocations: Int? { jsonInt(json["allocations"]) }
    var frees: Int? { jsonInt(json["frees"]) }
    var allocatedBytes: Int? { jsonInt(json["allocatedBytes"]) }
    var liveObjects: Int? { jsonInt(json["liveObjects"]) }
    var liveBytes: Int? { jsonInt(json["liveBytes"]) }
    var persistentObjects: Int? { jsonInt(json["persistentObjects"]) }
    var persistentBytes: Int? { jsonInt(json["persistentBytes"]) }
}

struct Report: CustomStringConvertible {
    let json: [String: Any]
    let raw: String
    let origin: String

    init(data: Data, origin: String) throws {
        raw = String(decoding: data, as: UTF8.self)
        self.origin = origin
        guard let obj = try? JSONSerialization.jsonObject(with: data), let dict = obj as? [String: Any] else {
            throw TestSupportError("not one JSON object (from \(origin)):\n\(String(raw.prefix(3000)))")
        }
        json = dict
    }

    var description: String { "report from `\(origin)`:\n" + findingsSummary + "\n" + String(raw.prefix(1500)) }

    var schema: String? { json["schema"] as? String }
    var cycles: Int? { jsonInt(json["cycles"]) }
    var judgedCycles: Int? { jsonInt(json["judgedCycles"]) }
    var findings: [ReportFinding] { (json["findings"] as? [[String: Any]] ?? []).map(ReportFinding.init) }
    var generations: [Generation] { (json["generations"] as? [[String: Any]] ?? []).map(Generation.init) }
    var totals: [String: Any] { json["totals"] as? [String: Any] ?? [:] }
    func total(_ key: String) -> Int? { jsonInt(totals[key]) }
    var program: [String: Any] { json["program"] as? [String: Any] ?? [:] }
    var options: [String: Any] { json["options"] as? [String: Any] ?? [:] }
    var notes: [String] { json["notes"] as? [String] ?? [] }

    var findingsSummary: String {
        findings.isEmpty ? "(no findings)" : findings.map { "  " + $0.summary }.joined(separator: "\n")
    }

    func findings(kind: String) -> [ReportFinding] { findings.filter { $0.kind == kind } }
    /// Findings with this exact Swift type name.
    func findings(type: String) -> [ReportFinding] { findings.filter { $0.typeName == type } }
    /// Findings whose user frame (or, without one, any frame) is in function `name`.
    func findings(function name: String) -> [ReportFinding] {
        findings.filter { f in
            if let u = f.userFrame { return (u.function ?? "").contains(name) || (u.shortFunction ?? "").contains(name) }
            return f.hasFunction(name)
        }
    }
}

// MARK: - FIFOs

enum FIFO {
    static func make(_ path: String) throws {
        guard mkfifo(path, 0o600) == 0 else {
            throw TestSupportError("mkfifo \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Opens `path` with `flags`, giving up after `timeout` seconds (O_NONBLOCK retries for writers).
    static func open(_ path: String, write: Bool, timeout: Double = 30) throws -> Int32 {
        let deadline = Date().addingTimeInterval(timeout)
        if write {
            while true {
                let fd = Glibc.open(path, O_WRONLY | O_NONBLOCK)
                if fd >= 0 {
                    let fl = fcntl(fd, F_GETFL)
                    _ = fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)
                    return fd
                }
                if errno != ENXIO || Date() > deadline {
                    throw TestSupportError("open \(path) for writing: \(String(cString: strerror(errno)))")
                }
                usleep(2_000)
            }
        }
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK)
        guard fd >= 0 else { throw TestSupportError("open \(path): \(String(cString: strerror(errno)))") }
        return fd
    }

    /// Reads one byte, waiting at most `timeout` seconds.
    static func readByte(_ fd: Int32, timeout: Double = 30) throws {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ms = Int32(timeout * 1000)
        let r = poll(&pfd, 1, ms)
        guard r == 1 else { throw TestSupportError("no byte from the fixture within \(timeout) s") }
        var c: UInt8 = 0
        guard Glibc.read(fd, &c, 1) == 1 else { throw TestSupportError("the fixture closed its pipe") }
    }

    static func writeByte(_ fd: Int32) throws {
        var c: UInt8 = 0x2a
        guard Glibc.write(fd, &c, 1) == 1 else { throw TestSupportError("write to fixture pipe: \(String(cString: strerror(errno)))") }
    }
}
