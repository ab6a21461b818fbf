// Test support for the end-to-end report tests: finds the built `heapgen`,
// compiles fixtures, runs processes, reads `heapgen-report/1` JSON.
//
// Process handling is adapted from Tests/HeapGenRecordTests/Support/TestSupport.swift.
// Nothing here skips: a missing binary, compiler or tool throws a
// `ReportSupportError` whose message says what to build or install, and the
// test that needed it fails.

import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

struct ReportSupportError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Locations

enum RPaths {
    /// The repository root (four path components above this file).
    static let repoRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }   // file, Support, HeapGenReportTests, Tests
        return url.path
    }()

    static let fixtures = repoRoot + "/Tests/HeapGenReportTests/Fixtures"

    /// `$HEAPGEN_BUILD_DIR`, else the directory of the running test bundle when it
    /// holds `heapgen`, else `.build/debug`.
    static let buildDir: String = {
        if let env = ProcessInfo.processInfo.environment["HEAPGEN_BUILD_DIR"], !env.isEmpty {
            return env.hasPrefix("/") ? env : FileManager.default.currentDirectoryPath + "/" + env
        }
        var candidates: [String] = []
        let arg0 = CommandLine.arguments.first ?? ""
        if !arg0.isEmpty {
            let abs = arg0.hasPrefix("/") ? arg0 : FileManager.default.currentDirectoryPath + "/" + arg0
            var url = URL(fileURLWithPath: abs).standardized
            for _ in 0..<4 {
                url.deleteLastPathComponent()
                candidates.append(url.path)
            }
        }
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().path)
        for dir in candidates where FileManager.default.isExecutableFile(atPath: dir + "/heapgen") {
            return dir
        }
        return repoRoot + "/.build/debug"
    }()

    static func heapgen() throws -> String {
        let path = buildDir + "/heapgen"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw ReportSupportError("heapgen not found at \(path): run `swift build` first (or set HEAPGEN_BUILD_DIR)")
        }
        return path
    }

    static func demo() throws -> String {
        let path = buildDir + "/heapgen-demo"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw ReportSupportError("heapgen-demo not found at \(path): run `swift build` first")
        }
        return path
    }

    /// One scratch directory per test process, removed at exit unless HEAPGEN_KEEP_TEST_FILES is set.
    static let scratch: String = {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/heapgen-report-tests.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let dir = made.map { String(cString: $0) } ?? "\(base)/heapgen-report-tests-\(getpid())"
        if made == nil { try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        if ProcessInfo.processInfo.environment["HEAPGEN_KEEP_TEST_FILES"] == nil {
            RScratchCleanup.register(dir)
        }
        return dir
    }()

    /// A new empty directory inside the scratch directory.
    static func freshDirectory(_ hint: String = "run") throws -> String {
        let dir = scratch + "/\(hint)-\(RCounter.next())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }
}

enum RScratchCleanup {
    nonisolated(unsafe) static var dirs: [String] = []
    static let lock = NSLock()
    static func register(_ dir: String) {
        lock.lock()
        let first = dirs.isEmpty
        dirs.append(dir)
        lock.unlock()
        if first {
            atexit {
                for d in RScratchCleanup.dirs { try? FileManager.default.removeItem(atPath: d) }
            }
        }
    }
}

enum RCounter {
    nonisolated(unsafe) private static var value = 0
    private static let lock = NSLock()
    static func next() -> Int {
        lock.lock(); defer { lock.unlock() }
        value += 1
        return value
    }
}

// MARK: - Running processes

struct ProcResult {
    /// Exit code, or 128 + signal when `signaled`.
    var status: Int32
    var signaled: Bool
    var stdout: Data
    var stderr: Data
    var seconds: Double
    var command: String

    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    var stderrLines: [String] { stderrText.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }

    /// For failure messages.
    var transcript: String {
        "$ \(command)\n[status \(status)\(signaled ? " (signal)" : "") after \(String(format: "%.2f", seconds)) s]\n"
            + "--- stdout (\(stdout.count) bytes) ---\n\(String(stdoutText.prefix(3000)))\n"
            + "--- stderr (\(stderr.count) bytes) ---\n\(String(stderrText.prefix(3000)))"
    }
}

/// A started process whose output goes to files (no pipe deadlocks); posix_spawn + waitpid.
final class Spawned {
    let pid: pid_t
    let outPath: String
    let errPath: String
    let started: Date
    let command: String
    private var finished: (status: Int32, signaled: Bool)?

    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
         stdin: Data? = nil) throws {
        let dir = try RPaths.freshDirectory("io")
        outPath = dir + "/stdout"
        errPath = dir + "/stderr"
        var inPath = "/dev/null"
        if let stdin {
            inPath = dir + "/stdin"
            _ = FileManager.default.createFile(atPath: inPath, contents: stdin)
        }
        command = (environment.map { env in
            env.filter { ProcessInfo.processInfo.environment[$0.key] != $0.value }
                .map { "\($0.key)=\(quoteForShell($0.value))" }.sorted()
        } ?? []).map { $0 + " " }.joined() + ([executable] + arguments).map(quoteForShell).joined(separator: " ")

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var all = sigset_t(), none = sigset_t()
        sigfillset(&all)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attr, &all)
        posix_spawnattr_setsigmask(&attr, &none)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let args = [executable] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        started = Date()
        let rc = posix_spawn(&child, executable, &actions, &attr, &argv, &envp)
        guard rc == 0 else { throw ReportSupportError("cannot start \(command): \(String(cString: strerror(rc)))") }
        pid = child
    }

    /// Reaps the process if it has exited; true when it has.
    func poll() -> Bool {
        if finished != nil { return true }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        guard r == pid else { return false }
        let termsig = status & 0x7f
        finished = termsig == 0 ? ((status >> 8) & 0xff, false) : (128 + termsig, true)
        return true
    }

    /// Waits (killing the process after `timeout` seconds) and collects the result.
    func wait(timeout: Double) -> ProcResult {
        let deadline = Date().addingTimeInterval(timeout)
        var timedOut = false
        while !poll() {
            if !timedOut && Date() > deadline {
                timedOut = true
                kill(pid, SIGKILL)
            }
            usleep(2_000)
        }
        let seconds = Date().timeIntervalSince(started)
        var err = (try? Data(contentsOf: URL(fileURLWithPath: errPath))) ?? Data()
        if timedOut { err.append(Data("\n[test support: killed after the \(timeout) s timeout]\n".utf8)) }
        return ProcResult(status: finished!.status, signaled: finished!.signaled,
                          stdout: (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data(),
                          stderr: err, seconds: seconds, command: command)
    }

    /// Kills the process if it is still running (for cleanup after a failed assertion).
    func killIfRunning() {
        if !poll() { kill(pid, SIGKILL); _ = wait(timeout: 10) }
    }
}

func quoteForShell(_ s: String) -> String {
    if !s.isEmpty && s.allSatisfy({ $0.isLetter || $0.isNumber || "-_./=:,+@".contains($0) }) { return s }
    return "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

/// Runs a program to completion.
@discardableResult
func spawnAndWait(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                  stdin: Data? = nil, timeout: Double = 120) throws -> ProcResult {
    try Spawned(executable, arguments, environment: environment, stdin: stdin).wait(timeout: timeout)
}

/// Full path of a tool on PATH (or the standard directories), or a clear error.
func findExecutable(_ name: String, hint: String? = nil) throws -> String {
    let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/local/bin:/usr/bin:/bin:/opt/swift/usr/bin"
    for dir in path.split(separator: ":") where !dir.isEmpty {
        let candidate = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    throw ReportSupportError("\(name) not found on PATH" + (hint.map { ": \($0)" } ?? ""))
}

// MARK: - Fixtures

enum ReportFixture {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var cache: [String: String] = [:]

    /// Absolute path of a fixture source (a file in Fixtures/, or Fixtures/<Dir>/main.swift).
    static func sourcePath(_ source: String) -> String { RPaths.fixtures + "/" + source }

    /// Compiles a C fixture (`cc -O2 -g -I CShim/include`) once per test process.
    static func c(_ source: String, flags: [String] = []) throws -> String {
        try build(key: ([source] + flags).joined(separator: " ")) { out in
            let src = sourcePath(source)
            guard FileManager.default.fileExists(atPath: src) else { throw ReportSupportError("fixture source missing: \(src)") }
            let args = ["-O2", "-g", "-std=gnu11", "-Wall", "-D_GNU_SOURCE", "-I", RPaths.repoRoot + "/CShim/include"]
                + flags + ["-o", out, src, "-pthread", "-ldl"]
            return try spawnAndWait(try findExecutable("cc", hint: "install gcc"), args, timeout: 120)
        }
    }

    /// Compiles a C++ fixture (`g++ -O2 -g -std=c++17 -I CShim/include`) once per test process.
    static func cxx(_ source: String) throws -> String {
        try build(key: source) { out in
            let src = sourcePath(source)
            guard FileManager.default.fileExists(atPath: src) else { throw ReportSupportError("fixture source missing: \(src)") }
            let args = ["-O2", "-g", "-std=c++17", "-Wall", "-I", RPaths.repoRoot + "/CShim/include", "-o", out, src, "-pthread"]
            return try spawnAndWait(try findExecutable("g++", hint: "install g++"), args, timeout: 120)
        }
    }

    /// Compiles a Swift fixture directory (Fixtures/<dir>/*.swift) together with
    /// Sources/HeapGen/HeapGen.swift: `swiftc -g -swift-version 5 -module-name <module>`.
    static func swift(_ dir: String, module: String = "Fixture") throws -> String {
        try build(key: dir + "/" + module) { out in
            let srcDir = sourcePath(dir)
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: srcDir)) ?? [])
                .filter { $0.hasSuffix(".swift") }.sorted().map { srcDir + "/" + $0 }
            guard !files.isEmpty else { throw ReportSupportError("no Swift sources in \(srcDir)") }
            let swiftc = try findExecutable("swiftc", hint: "the Swift toolchain must be on PATH or in /opt/swift/usr/bin")
            let args = ["-g", "-swift-version", "5", "-module-name", module, "-o", out,
                        "-module-cache-path", (out as NSString).deletingLastPathComponent + "/mc"]
                + files + [RPaths.repoRoot + "/Sources/HeapGen/HeapGen.swift"]
            return try spawnAndWait(swiftc, args, timeout: 300)
        }
    }

    private static func build(key: String, _ compile: (String) throws -> ProcResult) throws -> String {
        lock.lock()
        defer { lock.unlock() }   // held while compiling: tests run serially anyway
        if let hit = cache[key] { return hit }
        let dir = try RPaths.freshDirectory("fixture")
        let name = key.split(whereSeparator: { $0 == "/" || $0 == " " }).first
            .map { (String($0) as NSString).deletingPathExtension } ?? "fixture"
        let out = dir + "/" + name
        let result = try compile(out)
        guard result.status == 0, FileManager.default.fileExists(atPath: out) else {
            throw ReportSupportError("cannot compile fixture \(key):\n\(result.transcript)")
        }
        cache[key] = out
        return out
    }

    /// Lines of `function` in a fixture source: the lines carrying `BEGIN name` and `END name` markers.
    static func markedLines(_ source: String, _ name: String) throws -> ClosedRange<Int> {
        let text = try String(contentsOfFile: sourcePath(source), encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        guard let begin = lines.firstIndex(where: { $0.contains("BEGIN \(name)") }),
              let end = lines.firstIndex(where: { $0.contains("END \(name)") }), begin < end else {
            throw ReportSupportError("markers BEGIN/END \(name) not found in \(source)")
        }
        return (begin + 1)...(end + 1)
    }

    /// Line numbers (1-based) of lines containing `needle`.
    static func lines(_ source: String, containing needle: String) throws -> [Int] {
        let text = try String(contentsOfFile: sourcePath(source), encoding: .utf8)
        return text.components(separatedBy: "\n").enumerated().filter { $0.element.contains(needle) }.map { $0.offset + 1 }
    }
}

// MARK: - heapgen

enum Heapgen {
    /// `heapgen ARGS`.
    @discardableResult
    static func run(_ arguments: [String], environment: [String: String]? = nil, timeout: Double = 180) throws -> ProcResult {
        try spawnAndWait(try RPaths.heapgen(), arguments, environment: environment, timeout: timeout)
    }

    /// `heapgen run --format json --output DIR/report.json --trace DIR/x.trace FLAGS -- PROGRAM ARGS`:
    /// the report read from the output file.
    static func runJSON(_ program: String, _ arguments: [String] = [], flags: [String] = [],
                        expectStatus: Int32 = 0, file: StaticString = #filePath, line: UInt = #line) throws -> RunReport {
        let dir = try RPaths.freshDirectory("run")
        let trace = dir + "/x.trace", out = dir + "/report.json"
        let result = try run(["run", "--format", "json", "--output", out, "--trace", trace] + flags + ["--", program] + arguments)
        guard result.status == expectStatus else {
            throw ReportSupportError("expected status \(expectStatus):\n\(result.transcript)")
        }
        guard let data = FileManager.default.contents(atPath: out) else {
            throw ReportSupportError("heapgen run wrote no report to \(out):\n\(result.transcript)")
        }
        return RunReport(report: try Report(data: data, origin: result.command), result: result, trace: trace)
    }

    /// `heapgen record --output DIR/x.trace FLAGS -- PROGRAM ARGS`, required to succeed with `status`.
    static func record(_ program: String, _ arguments: [String] = [], flags: [String] = [], expectStatus: Int32 = 0) throws -> String {
        let dir = try RPaths.freshDirectory("rec")
        let trace = dir + "/x.trace"
        let result = try run(["record", "-q", "--output", trace] + flags + ["--", program] + arguments)
        guard result.status == expectStatus else {
            throw ReportSupportError("heapgen record: expected status \(expectStatus):\n\(result.transcript)")
        }
        return trace
    }

    /// `heapgen report TRACE --format json FLAGS`, required to exit 0 and print one JSON object.
    static func report(_ trace: String, flags: [String] = []) throws -> Report {
        let result = try run(["report", trace, "--format", "json"] + flags)
        guard result.status == 0 else { throw ReportSupportError("heapgen report failed:\n\(result.transcript)") }
        return try Report(data: result.stdout, origin: result.command)
    }

    /// `heapgen info TRACE --format json`.
    static func info(_ trace: String) throws -> [String: Any] {
        let result = try run(["info", trace, "--format", "json"])
        guard result.status == 0,
              let obj = try? JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] else {
            throw ReportSupportError("heapgen info failed:\n\(result.transcript)")
        }
        return obj
    }
}

struct RunReport {
    var report: Report
    var result: ProcResult
    var trace: String
}

// MARK: - The report (heapgen-report/1), read leniently

func jsonInt(_ any: Any?) -> Int? {
    if let i = any as? Int { return i }
    guard let n = any as? NSNumber else { return nil }
    return n.intValue
}

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
            throw ReportSupportError("not one JSON object (from \(origin)):\n\(String(raw.prefix(3000)))")
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

extension Array {
    subscript(safe i: Int) -> Element? { indices.contains(i) ? self[i] : nil }
}

// MARK: - FIFOs

enum FIFO {
    static func make(_ path: String) throws {
        guard mkfifo(path, 0o600) == 0 else {
            throw ReportSupportError("mkfifo \(path): \(String(cString: strerror(errno)))")
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
                    throw ReportSupportError("open \(path) for writing: \(String(cString: strerror(errno)))")
                }
                usleep(2_000)
            }
        }
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK)
        guard fd >= 0 else { throw ReportSupportError("open \(path): \(String(cString: strerror(errno)))") }
        return fd
    }

    /// Reads one byte, waiting at most `timeout` seconds.
    static func readByte(_ fd: Int32, timeout: Double = 30) throws {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ms = Int32(timeout * 1000)
        let r = poll(&pfd, 1, ms)
        guard r == 1 else { throw ReportSupportError("no byte from the fixture within \(timeout) s") }
        var c: UInt8 = 0
        guard Glibc.read(fd, &c, 1) == 1 else { throw ReportSupportError("the fixture closed its pipe") }
    }

    static func writeByte(_ fd: Int32) throws {
        var c: UInt8 = 0x2a
        guard Glibc.write(fd, &c, 1) == 1 else { throw ReportSupportError("write to fixture pipe: \(String(cString: strerror(errno)))") }
    }
}
