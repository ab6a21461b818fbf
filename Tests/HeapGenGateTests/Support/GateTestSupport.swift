// Test support for the gate tests: finds the built `heapgen`, compiles fixtures, runs
// processes. Adapted from Tests/HeapGenReportTests/Support/ReportTestSupport.swift. Nothing
// here skips: a missing binary or compiler throws a `GateSupportError` saying what to do.

import Foundation
import HeapGenReport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

struct GateSupportError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

enum GPaths {
    /// The repository root (four path components above this file).
    static let repoRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }   // file, Support, HeapGenGateTests, Tests
        return url.path
    }()

    static let fixtures = repoRoot + "/Tests/HeapGenGateTests/Fixtures"

    /// `$HEAPGEN_BUILD_DIR`, else the directory of the running test bundle when it holds
    /// `heapgen`, else `.build/debug`.
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
            throw GateSupportError("heapgen not found at \(path): run `swift build` first (or set HEAPGEN_BUILD_DIR)")
        }
        return path
    }

    /// One scratch directory per test process, removed at exit unless HEAPGEN_KEEP_TEST_FILES is set.
    static let scratch: String = {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/heapgen-gate-tests.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let dir = made.map { String(cString: $0) } ?? "\(base)/heapgen-gate-tests-\(getpid())"
        if made == nil { try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        if ProcessInfo.processInfo.environment["HEAPGEN_KEEP_TEST_FILES"] == nil {
            GateScratchCleanup.register(dir)
        }
        return dir
    }()

    /// A new empty directory inside the scratch directory.
    static func freshDirectory(_ hint: String = "run") throws -> String {
        let dir = scratch + "/\(hint)-\(GateCounter.next())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }
}

enum GateScratchCleanup {
    nonisolated(unsafe) static var dirs: [String] = []
    static let lock = NSLock()
    static func register(_ dir: String) {
        lock.lock()
        let first = dirs.isEmpty
        dirs.append(dir)
        lock.unlock()
        if first {
            atexit {
                for d in GateScratchCleanup.dirs { try? FileManager.default.removeItem(atPath: d) }
            }
        }
    }
}

enum GateCounter {
    nonisolated(unsafe) private static var value = 0
    private static let lock = NSLock()
    static func next() -> Int {
        lock.lock(); defer { lock.unlock() }
        value += 1
        return value
    }
}

// MARK: - Running processes

struct GateProcResult {
    /// Exit code, or 128 + signal.
    var status: Int32
    var stdout: Data
    var stderr: Data
    var command: String

    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    var stderrLines: [String] { stderrText.split(separator: "\n").map(String.init) }

    var transcript: String {
        "$ \(command)\n[status \(status)]\n--- stdout (\(stdout.count) bytes) ---\n\(String(stdoutText.prefix(3000)))\n"
            + "--- stderr (\(stderr.count) bytes) ---\n\(String(stderrText.prefix(4000)))"
    }
}

/// Runs a program to completion with stdout and stderr going to files (no pipe deadlocks),
/// posix_spawn + waitpid; killed after `timeout` seconds.
func gateSpawn(_ executable: String, _ arguments: [String], directory: String? = nil,
               timeout: Double = 120) throws -> GateProcResult {
    // In another directory: through coreutils' `env --chdir` (posix_spawn's chdir action is
    // not visible to Swift).
    if let directory {
        return try gateSpawn("/usr/bin/env", ["--chdir=" + directory, executable] + arguments, timeout: timeout)
    }
    let io = try GPaths.freshDirectory("io")
    let outPath = io + "/stdout", errPath = io + "/stderr"
    let command = ([executable] + arguments).map(gateQuote).joined(separator: " ")
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
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
    let env = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
    var argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
    var envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, executable, &actions, &attr, &argv, &envp)
    guard rc == 0 else { throw GateSupportError("cannot start \(command): \(String(cString: strerror(rc)))") }
    let deadline = Date().addingTimeInterval(timeout)
    var status: Int32 = 0
    var killed = false
    while waitpid(pid, &status, WNOHANG) != pid {
        if !killed && Date() > deadline {
            killed = true
            kill(pid, SIGKILL)
        }
        usleep(2_000)
    }
    let termsig = status & 0x7f
    var err = (try? Data(contentsOf: URL(fileURLWithPath: errPath))) ?? Data()
    if killed { err.append(Data("\n[test support: killed after \(timeout) s]\n".utf8)) }
    return GateProcResult(status: termsig == 0 ? (status >> 8) & 0xff : 128 + termsig,
                          stdout: (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data(),
                          stderr: err, command: command)
}

func gateQuote(_ s: String) -> String {
    if !s.isEmpty && s.allSatisfy({ $0.isLetter || $0.isNumber || "-_./=:,+@".contains($0) }) { return s }
    return "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

func gateFindExecutable(_ name: String, hint: String) throws -> String {
    let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/local/bin:/usr/bin:/bin:/opt/swift/usr/bin"
    for dir in path.split(separator: ":") where !dir.isEmpty {
        let candidate = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    throw GateSupportError("\(name) not found on PATH: \(hint)")
}

// MARK: - Fixtures

enum GateFixture {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var cache: [String: String] = [:]

    static func sourcePath(_ source: String) -> String { GPaths.fixtures + "/" + source }

    /// Compiles a C fixture (`cc -O2 -g -I CShim/include`) once per test process.
    static func c(_ source: String) throws -> String {
        try build(key: source) { out in
            let args = ["-O2", "-g", "-std=gnu11", "-Wall", "-D_GNU_SOURCE", "-I", GPaths.repoRoot + "/CShim/include",
                        "-o", out, sourcePath(source)]
            return try gateSpawn(try gateFindExecutable("cc", hint: "install gcc"), args)
        }
    }

    /// Compiles a Swift fixture directory with Sources/HeapGen/HeapGen.swift.
    static func swift(_ dir: String, module: String) throws -> String {
        try build(key: dir) { out in
            let srcDir = sourcePath(dir)
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: srcDir)) ?? [])
                .filter { $0.hasSuffix(".swift") }.sorted().map { srcDir + "/" + $0 }
            let swiftc = try gateFindExecutable("swiftc", hint: "the Swift toolchain must be on PATH")
            let args = ["-g", "-swift-version", "5", "-module-name", module, "-o", out,
                        "-module-cache-path", (out as NSString).deletingLastPathComponent + "/mc"]
                + files + [GPaths.repoRoot + "/Sources/HeapGen/HeapGen.swift"]
            return try gateSpawn(swiftc, args, timeout: 300)
        }
    }

    private static func build(key: String, _ compile: (String) throws -> GateProcResult) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let hit = cache[key] { return hit }
        let dir = try GPaths.freshDirectory("fixture")
        let out = dir + "/" + ((key as NSString).lastPathComponent as NSString).deletingPathExtension
        let result = try compile(out)
        guard result.status == 0, FileManager.default.fileExists(atPath: out) else {
            throw GateSupportError("cannot compile fixture \(key):\n\(result.transcript)")
        }
        cache[key] = out
        return out
    }

    /// 1-based numbers of the lines of `source` containing `needle`.
    static func lines(_ source: String, containing needle: String) throws -> [Int] {
        let text = try String(contentsOfFile: sourcePath(source), encoding: .utf8)
        return text.components(separatedBy: "\n").enumerated().filter { $0.element.contains(needle) }.map { $0.offset + 1 }
    }
}

// MARK: - heapgen

enum GateHeapgen {
    /// `heapgen ARGS`, in `directory` if given.
    @discardableResult
    static func run(_ arguments: [String], directory: String? = nil) throws -> GateProcResult {
        try gateSpawn(try GPaths.heapgen(), arguments, directory: directory, timeout: 180)
    }

    /// `heapgen record -q --output DIR/x.trace -- PROGRAM ARGS`: the trace.
    static func record(_ program: String, _ arguments: [String] = []) throws -> String {
        let trace = try GPaths.freshDirectory("rec") + "/x.trace"
        let r = try run(["record", "-q", "--output", trace, "--", program] + arguments)
        guard r.status == 0 else { throw GateSupportError("heapgen record failed:\n\(r.transcript)") }
        return trace
    }

    /// `heapgen run --format json --output DIR/report.json FLAGS -- PROGRAM ARGS`: the result
    /// and the report.
    static func runJSON(_ program: String, _ arguments: [String] = [], flags: [String] = []) throws -> (GateProcResult, Report) {
        let out = try GPaths.freshDirectory("json") + "/report.json"
        let r = try run(["run", "--format", "json", "--output", out] + flags + ["--", program] + arguments)
        guard let data = FileManager.default.contents(atPath: out) else {
            throw GateSupportError("no report written:\n\(r.transcript)")
        }
        return (r, try JSONReport.decode(data))
    }
}
