// Test support for the diff and export tests: finds the built `heapgen` and
// `libHeapGenShim.so`, compiles fixtures, runs processes.
//
// Adapted from Tests/HeapGenRecordTests/Support/TestSupport.swift. Nothing here
// skips: a missing binary, compiler or tool throws a `SupportError` whose
// message says what to build or install, and the test that needed it fails.

import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

struct SupportError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Locations

enum Paths {
    /// The repository root (four path components above this file).
    static let repoRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }   // file, Support, HeapGenDiffExportTests, Tests
        return url.path
    }()

    static let fixtures = repoRoot + "/Tests/HeapGenDiffExportTests/Fixtures"

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
            throw SupportError("heapgen not found at \(path): run `swift build` first (or set HEAPGEN_BUILD_DIR)")
        }
        guard FileManager.default.fileExists(atPath: buildDir + "/libHeapGenShim.so") else {
            throw SupportError("libHeapGenShim.so not found in \(buildDir): run `swift build` first (or set HEAPGEN_BUILD_DIR)")
        }
        return path
    }

    /// One scratch directory per test process, removed at exit unless HEAPGEN_KEEP_TEST_FILES is set.
    static let scratch: String = {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/heapgen-diff-tests.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let dir = made.map { String(cString: $0) } ?? "\(base)/heapgen-diff-tests-\(getpid())"
        if made == nil { try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }
        if ProcessInfo.processInfo.environment["HEAPGEN_KEEP_TEST_FILES"] == nil {
            ScratchCleanup.register(dir)
        }
        return dir
    }()

    /// A new empty directory inside the scratch directory.
    static func freshDirectory(_ hint: String = "run") throws -> String {
        let dir = scratch + "/\(hint)-\(Counter.next())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }
}

enum ScratchCleanup {
    nonisolated(unsafe) static var dirs: [String] = []
    static let lock = NSLock()
    static func register(_ dir: String) {
        lock.lock()
        let first = dirs.isEmpty
        dirs.append(dir)
        lock.unlock()
        if first {
            atexit {
                for d in ScratchCleanup.dirs { try? FileManager.default.removeItem(atPath: d) }
            }
        }
    }
}

enum Counter {
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
    var command: String

    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }

    /// For failure messages.
    var transcript: String {
        "$ \(command)\n[status \(status)\(signaled ? " (signal)" : "")]\n"
            + "--- stdout (\(stdout.count) bytes) ---\n\(String(stdoutText.prefix(3000)))\n"
            + "--- stderr (\(stderr.count) bytes) ---\n\(String(stderrText.prefix(3000)))"
    }
}

/// Runs a program to completion (posix_spawn + waitpid; output to files, so no pipe
/// deadlocks), killing it after `timeout` seconds.
@discardableResult
func spawnAndWait(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                  stdin: [UInt8]? = nil, timeout: Double = 180) throws -> ProcResult {
    let dir = try Paths.freshDirectory("io")
    let outPath = dir + "/stdout", errPath = dir + "/stderr"
    var inPath = "/dev/null"
    if let stdin {
        inPath = dir + "/stdin"
        _ = FileManager.default.createFile(atPath: inPath, contents: Data(stdin))
    }
    let command = ([executable] + arguments).map(quoteForShell).joined(separator: " ")

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
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, executable, &actions, &attr, &argv, &envp)
    guard rc == 0 else { throw SupportError("cannot start \(command): \(String(cString: strerror(rc)))") }

    let deadline = Date().addingTimeInterval(timeout)
    var timedOut = false
    var status: Int32 = 0
    while true {
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid { break }
        if !timedOut && Date() > deadline {
            timedOut = true
            kill(pid, SIGKILL)
        }
        usleep(2_000)
    }
    let termsig = status & 0x7f
    var err = (try? Data(contentsOf: URL(fileURLWithPath: errPath))) ?? Data()
    if timedOut { err.append(Data("\n[test support: killed after the \(timeout) s timeout]\n".utf8)) }
    return ProcResult(status: termsig == 0 ? (status >> 8) & 0xff : 128 + termsig, signaled: termsig != 0,
                      stdout: (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data(),
                      stderr: err, command: command)
}

func quoteForShell(_ s: String) -> String {
    if !s.isEmpty && s.allSatisfy({ $0.isLetter || $0.isNumber || "-_./=:,+@".contains($0) }) { return s }
    return "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

/// Full path of a tool on PATH (or the standard directories), or nil.
func lookupExecutable(_ name: String) -> String? {
    let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/local/bin:/usr/bin:/bin:/opt/swift/usr/bin"
    for dir in path.split(separator: ":") where !dir.isEmpty {
        let candidate = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// Full path of a tool, or a clear error.
func findExecutable(_ name: String, hint: String) throws -> String {
    guard let path = lookupExecutable(name) else { throw SupportError("\(name) not found on PATH: \(hint)") }
    return path
}

// MARK: - Fixtures

enum Fixture {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var cache: [String: String] = [:]

    static func sourcePath(_ source: String) -> String { Paths.fixtures + "/" + source }

    /// Compiles a C fixture (`cc -O2 -g -I CShim/include`) once per test process.
    static func c(_ source: String) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let hit = cache[source] { return hit }
        let src = sourcePath(source)
        guard FileManager.default.fileExists(atPath: src) else { throw SupportError("fixture source missing: \(src)") }
        let out = try Paths.freshDirectory("fixture") + "/" + (source as NSString).deletingPathExtension
        let args = ["-O2", "-g", "-std=gnu11", "-Wall", "-I", Paths.repoRoot + "/CShim/include", "-o", out, src]
        let result = try spawnAndWait(try findExecutable("cc", hint: "install gcc"), args, timeout: 120)
        guard result.status == 0, FileManager.default.fileExists(atPath: out) else {
            throw SupportError("cannot compile fixture \(source):\n\(result.transcript)")
        }
        cache[source] = out
        return out
    }

    /// 1-based numbers of the lines of `source` containing `needle`.
    static func lines(_ source: String, containing needle: String) throws -> [Int] {
        let text = try String(contentsOfFile: sourcePath(source), encoding: .utf8)
        return text.components(separatedBy: "\n").enumerated().filter { $0.element.contains(needle) }.map { $0.offset + 1 }
    }
}

// MARK: - heapgen

enum Heapgen {
    /// `heapgen ARGS`.
    @discardableResult
    static func run(_ arguments: [String], timeout: Double = 180) throws -> ProcResult {
        try spawnAndWait(try Paths.heapgen(), arguments, timeout: timeout)
    }

    /// `heapgen ARGS`, required to exit 0.
    static func succeed(_ arguments: [String]) throws -> ProcResult {
        let result = try run(arguments)
        guard result.status == 0 else { throw SupportError("heapgen failed:\n\(result.transcript)") }
        return result
    }

    /// `heapgen record -q --output DIR/x.trace -- PROGRAM ARGS`, required to exit 0.
    static func record(_ program: String, _ arguments: [String] = []) throws -> String {
        let trace = try Paths.freshDirectory("rec") + "/x.trace"
        _ = try succeed(["record", "-q", "--output", trace, "--", program] + arguments)
        return trace
    }

    /// `heapgen ARGS` printing one JSON object.
    static func json(_ arguments: [String]) throws -> [String: Any] {
        let result = try succeed(arguments)
        guard let obj = try? JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] else {
            throw SupportError("not one JSON object:\n\(result.transcript)")
        }
        return obj
    }
}

func jsonInt(_ any: Any?) -> Int? {
    if let i = any as? Int { return i }
    return (any as? NSNumber)?.intValue
}

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
