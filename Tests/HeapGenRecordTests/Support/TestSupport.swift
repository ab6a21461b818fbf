// Test support for the integration tests: finds the built `heapgen` and
// `libHeapGenShim.so`, compiles fixtures, runs processes, reads summaries.
//
// Nothing here skips: a missing binary, compiler or tool throws a
// `SupportError` whose message says what to build or install, and the test
// that needed it fails.

import Foundation
import HeapGenTrace
import XCTest
#if canImport(Glibc)
import Glibc
#endif

struct SupportError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Locations

enum TestPaths {
    /// The repository root (three levels above this file).
    static let repoRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }   // Support, HeapGenRecordTests, Tests, file
        return url.path
    }()

    static let fixtures = repoRoot + "/Tests/HeapGenRecordTests/Fixtures"

    /// The build directory: `$HEAPGEN_BUILD_DIR`, else the directory of the
    /// running test bundle when it holds `heapgen`, else `.build/debug`.
    static let buildDir: String = {
        if let env = ProcessInfo.processInfo.environment["HEAPGEN_BUILD_DIR"], !env.isEmpty {
            return env.hasPrefix("/") ? env : FileManager.default.currentDirectoryPath + "/" + env
        }
        var candidates: [String] = []
        let arg0 = CommandLine.arguments.first ?? ""
        if !arg0.isEmpty {
            let abs = arg0.hasPrefix("/") ? arg0 : FileManager.default.currentDirectoryPath + "/" + arg0
            var url = URL(fileURLWithPath: abs).standardized
            // `.build/debug/heapgenPackageTests.xctest` (a file on Linux, a bundle elsewhere)
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
        return path
    }

    static func shim() throws -> String {
        let path = buildDir + "/libHeapGenShim.so"
        guard FileManager.default.fileExists(atPath: path) else {
            throw SupportError("libHeapGenShim.so not found at \(path): run `swift build` first (or set HEAPGEN_BUILD_DIR)")
        }
        return path
    }

    /// One scratch directory per test process, removed at exit unless
    /// HEAPGEN_KEEP_TEST_FILES is set.
    static let scratch: String = {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/heapgen-tests.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let dir = made.map { String(cString: $0) } ?? "\(base)/heapgen-tests-\(getpid())"
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

struct RunResult {
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
            + "--- stdout (\(stdout.count) bytes) ---\n\(String(stdoutText.prefix(2000)))\n"
            + "--- stderr (\(stderr.count) bytes) ---\n\(String(stderrText.prefix(4000)))"
    }
}

/// A started process whose output goes to files (no pipe deadlocks).
///
/// Started with posix_spawn and reaped with waitpid, not Foundation's
/// `Process`: its SIGCHLD monitoring missed a child we SIGKILLed ourselves,
/// and every child gets default signal dispositions and an empty mask.
final class Running {
    let pid: pid_t
    let outPath: String
    let errPath: String
    let started: Date
    let command: String
    private var finished: (status: Int32, signaled: Bool)?

    init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
         stdin: Data? = nil, directory: String? = nil) throws {
        let dir = try TestPaths.freshDirectory("io")
        outPath = dir + "/stdout"
        errPath = dir + "/stderr"
        var inPath = "/dev/null"
        if let stdin {
            inPath = dir + "/stdin"
            _ = FileManager.default.createFile(atPath: inPath, contents: stdin)
        }
        command = ([executable] + arguments).map(shellQuote).joined(separator: " ")

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
        // A working directory through the shell (glibc's addchdir_np is not in the Glibc module).
        let program = directory == nil ? executable : "/bin/sh"
        let args = directory.map { ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", $0, executable] + arguments }
            ?? [executable] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        started = Date()
        let rc = posix_spawn(&child, program, &actions, &attr, &argv, &envp)
        guard rc == 0 else { throw SupportError("cannot start \(command): \(String(cString: strerror(rc)))") }
        pid = child
    }

    /// Reaps the process if it has exited; true when it has.
    func poll() -> Bool {
        if finished != nil { return true }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        guard r == pid else { return false }
        let termsig = status & 0x7f
        if termsig == 0 {
            finished = ((status >> 8) & 0xff, false)
        } else {
            finished = (128 + termsig, true)
        }
        return true
    }

    /// Waits (killing the process after `timeout` seconds) and collects the result.
    func wait(timeout: Double) -> RunResult {
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
        return RunResult(status: finished!.status, signaled: finished!.signaled,
                         stdout: (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data(),
                         stderr: err, seconds: seconds, command: command)
    }
}

func shellQuote(_ s: String) -> String {
    if !s.isEmpty && s.allSatisfy({ $0.isLetter || $0.isNumber || "-_./=:,+@".contains($0) }) { return s }
    return "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

/// Runs a program to completion.
@discardableResult
func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
         stdin: Data? = nil, directory: String? = nil, timeout: Double = 300) throws -> RunResult {
    try Running(executable, arguments, environment: environment, stdin: stdin, directory: directory)
        .wait(timeout: timeout)
}

/// Full path of a tool on PATH (or the standard directories), or a clear error.
func tool(_ name: String, hint: String? = nil) throws -> String {
    let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/local/bin:/usr/bin:/bin:/opt/swift/usr/bin"
    for dir in path.split(separator: ":") where !dir.isEmpty {
        let candidate = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    throw SupportError("\(name) not found on PATH" + (hint.map { ": \($0)" } ?? ""))
}

// MARK: - Fixtures

enum Fixture {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var cache: [String: String] = [:]

    /// Compiles (once per test process) and returns the binary's path.
    /// `source` is a file in Fixtures/; the compiler follows the extension:
    /// .c → cc, .cpp → g++, .swift → swiftc.
    static func build(_ source: String, flags: [String] = [], output: String? = nil, shared: Bool = false) throws -> String {
        let key = ([source, output ?? "", shared ? "so" : "exe"] + flags).joined(separator: "\u{1}")
        lock.lock()
        if let hit = cache[key] { lock.unlock(); return hit }
        lock.unlock()

        let src = TestPaths.fixtures + "/" + source
        guard FileManager.default.fileExists(atPath: src) else { throw SupportError("fixture source missing: \(src)") }
        let dir = try TestPaths.freshDirectory("fixture")
        let base = (source as NSString).deletingPathExtension
        let out = dir + "/" + (output ?? (shared ? "lib\(base).so" : base))
        let result: RunResult
        switch (source as NSString).pathExtension {
        case "c":
            var args = ["-O2", "-g", "-std=gnu11", "-Wall", "-D_GNU_SOURCE", "-I", TestPaths.repoRoot + "/CShim/include"]
            if shared { args += ["-shared", "-fPIC"] }
            args += flags + ["-o", out, src, "-pthread", "-ldl"]
            result = try runProcess(try tool("cc", hint: "install gcc"), args, timeout: 120)
        case "cpp":
            var args = ["-O2", "-g", "-std=c++17"]
            if shared { args += ["-shared", "-fPIC"] }
            args += flags + ["-o", out, src, "-pthread"]
            result = try runProcess(try tool("g++", hint: "install g++"), args, timeout: 120)
        case "swift":
            let swiftc = try tool("swiftc", hint: "the Swift toolchain must be on PATH or in /opt/swift/usr/bin")
            let args = ["-g", "-swift-version", "5", "-module-name", "Fixture"] + flags + ["-o", out, src]
            result = try runProcess(swiftc, args, directory: dir, timeout: 300)
        default:
            throw SupportError("unknown fixture kind: \(source)")
        }
        guard result.status == 0, FileManager.default.fileExists(atPath: out) else {
            throw SupportError("cannot compile fixture \(source):\n\(result.transcript)")
        }
        lock.lock()
        cache[key] = out
        lock.unlock()
        return out
    }
}

// MARK: - heapgen

struct Recording {
    var result: RunResult
    /// The root trace path (may not exist if heapgen failed).
    var trace: String
    var directory: String

    /// Every trace file of this recording (the root and its `.<pid>[.<n>]` siblings), sorted.
    var allTraces: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let base = (trace as NSString).lastPathComponent
        return names.filter { $0 == base || $0.hasPrefix(base + ".") }.sorted().map { directory + "/" + $0 }
    }
}

enum HeapGen {
    /// `heapgen record --output DIR/x.trace FLAGS -- PROGRAM ARGS`.
    static func record(_ program: String, _ arguments: [String] = [], flags: [String] = [],
                       stdin: Data? = nil, environment: [String: String]? = nil,
                       timeout: Double = 300) throws -> Recording {
        let dir = try TestPaths.freshDirectory("trace")
        let trace = dir + "/x.trace"
        let args = ["record", "--output", trace] + flags + ["--", program] + arguments
        let result = try runProcess(try TestPaths.heapgen(), args, environment: environment, stdin: stdin, timeout: timeout)
        return Recording(result: result, trace: trace, directory: dir)
    }

    /// Starts `heapgen record` without waiting.
    static func start(_ program: String, _ arguments: [String] = [], flags: [String] = []) throws -> (Running, String) {
        let dir = try TestPaths.freshDirectory("trace")
        let trace = dir + "/x.trace"
        let args = ["record", "--output", trace] + flags + ["--", program] + arguments
        return (try Running(try TestPaths.heapgen(), args), trace)
    }

    /// `heapgen info TRACE --format json`, required to succeed.
    static func info(_ trace: String, file: StaticString = #filePath, line: UInt = #line) throws -> Summary {
        let r = try runProcess(try TestPaths.heapgen(), ["info", trace, "--format", "json"], timeout: 300)
        guard r.status == 0 else { throw SupportError("heapgen info failed:\n\(r.transcript)") }
        do {
            return try Summary(json: r.stdout)
        } catch {
            throw SupportError("heapgen info --format json printed something that is not a JSON object (\(error)):\n\(r.transcript)")
        }
    }

    /// All records of a (small) trace, read with HeapGenTrace's reader.
    static func records(_ trace: String) throws -> [TraceRecord] {
        var reader = try TraceReader(path: trace)
        var out: [TraceRecord] = []
        try reader.forEach { out.append($0) }
        return out
    }
}

/// `heapgen info --format json`, read leniently: keys are looked up by the
/// names of `TraceSummary`'s properties, and dotted paths reach into objects.
struct Summary: CustomStringConvertible {
    let json: [String: Any]
    let raw: String

    init(json data: Data) throws {
        let obj = try JSONSerialization.jsonObject(with: data)
        guard let dict = obj as? [String: Any] else { throw SupportError("not a JSON object") }
        json = dict
        raw = String(decoding: data, as: UTF8.self)
    }

    var description: String { String(raw.prefix(6000)) }

    func value(_ path: String) -> Any? {
        var cur: Any? = json
        for part in path.split(separator: ".") {
            guard let d = cur as? [String: Any] else { return nil }
            cur = d[String(part)]
        }
        return cur
    }

    func uint(_ path: String) -> UInt64? {
        switch value(path) {
        case let n as NSNumber: return n.uint64Value
        case let s as String: return UInt64(s)
        default: return nil
        }
    }

    func string(_ path: String) -> String? {
        switch value(path) {
        case let s as String: return s
        case let n as NSNumber: return n.stringValue
        default: return nil
        }
    }

    /// Calls to allocation function `name` ("malloc", ...); 0 when absent.
    func calls(_ name: String) -> UInt64 { uint("allocations.\(name).calls") ?? 0 }
    /// Requested bytes of allocation function `name`; 0 when absent.
    func bytes(_ name: String) -> UInt64 { uint("allocations.\(name).bytes") ?? 0 }
    /// Frees by `name` ("free", "realloc"); 0 when absent.
    func frees(_ name: String) -> UInt64 { uint("frees.\(name)") ?? 0 }

    var allocationCount: UInt64 { uint("allocationCount") ?? 0 }
    var freeCount: UInt64 { uint("freeCount") ?? 0 }
    var freeNullCalls: UInt64 { uint("freeNullCalls") ?? 0 }
    var liveObjects: UInt64 { uint("liveObjects") ?? UInt64.max }
    var liveBytes: UInt64 { uint("liveBytes") ?? UInt64.max }
    var unknownFrees: UInt64 { uint("unknownFrees") ?? UInt64.max }
    var doubleAllocations: UInt64 { uint("doubleAllocations") ?? UInt64.max }
    var problems: [Any] { value("problems") as? [Any] ?? [] }
    var lostEvents: UInt64 { uint("lostEvents") ?? 0 }
    var modules: [String] { value("modules") as? [String] ?? [] }
    var moduleUnloads: UInt64 { uint("moduleUnloads") ?? 0 }
    var marks: [[String: Any]] { value("marks") as? [[String: Any]] ?? [] }
    var markLabels: [String] { marks.compactMap { $0["label"] as? String } }

    /// Allocation function names that have any calls.
    var functionsUsed: Set<String> { Set((value("allocations") as? [String: Any])?.keys.map { $0 } ?? []) }

    /// The end record's reason as text ("exited", "signaled", ...), whatever the encoding.
    var endReason: String? {
        switch value("end.reason") {
        case let s as String: return s
        case let n as NSNumber:
            return ["exited", "signaled", "execed", "collectorStopped", "unknown"][safe: n.intValue]
        case let d as [String: Any]: return d.keys.first   // Codable enum with associated values
        default: return nil
        }
    }
    var endStatus: Int? { uint("end.status").map { Int($0) } }
    var producerWaits: UInt64? { uint("end.producerWaits") ?? uint("producerWaits") }
    var processPid: Int32? { uint("process.pid").map { Int32($0) } }
    var processOrigin: String? {
        switch value("process.origin") {
        case let s as String: return s
        case let n as NSNumber: return ["root", "fork", "exec"][safe: n.intValue]
        default: return nil
        }
    }
}

extension Array {
    subscript(safe i: Int) -> Element? { indices.contains(i) ? self[i] : nil }
}

// MARK: - valgrind

enum Valgrind {
    /// (allocs, frees) from `valgrind --run-libc-freeres=no --run-cxx-freeres=no`'s "total heap usage".
    static func heapUsage(_ program: String, _ arguments: [String] = []) throws -> (allocs: UInt64, frees: UInt64) {
        let valgrind = try tool("valgrind", hint: "apt-get install -y valgrind (.ci/run does)")
        let r = try runProcess(valgrind, ["--run-libc-freeres=no", "--run-cxx-freeres=no", "--leak-check=no", program] + arguments,
                        timeout: 600)
        guard r.status == 0 else { throw SupportError("valgrind run failed:\n\(r.transcript)") }
        // ==123== total heap usage: 1,234 allocs, 1,200 frees, 56,789 bytes allocated
        for line in r.stderrLines where line.contains("total heap usage:") {
            let tail = line.components(separatedBy: "total heap usage:")[1]
            let cleaned = tail.replacingOccurrences(of: ",", with: "")
            let words = cleaned.split(separator: " ")
            guard words.count >= 4, let a = UInt64(words[0]), let f = UInt64(words[2]) else { break }
            return (a, f)
        }
        throw SupportError("no 'total heap usage' line in valgrind's output:\n\(r.transcript)")
    }
}

// MARK: - Symbolication

enum Symbolizer {
    /// Function names (innermost first, inlined frames expanded) for the
    /// return addresses `frames`, using the moduleLoad records to find each
    /// frame's object and link-time address. Frames in no module give "??".
    static func functionNames(frames: [UInt64], modules: [ModuleRecord]) throws -> [String] {
        let symbolizer = (try? tool("llvm-symbolizer")) ?? "/opt/swift/usr/bin/llvm-symbolizer"
        guard FileManager.default.isExecutableFile(atPath: symbolizer) else {
            throw SupportError("llvm-symbolizer not found (expected /opt/swift/usr/bin/llvm-symbolizer)")
        }
        var input = ""
        var mapped: [Bool] = []
        for pc in frames {
            if let m = module(containing: pc, in: modules) {
                // a return address: the call is one byte before it
                input += "\"\(m.path)\" 0x\(String(pc - m.loadBias - 1, radix: 16))\n"
                mapped.append(true)
            } else {
                mapped.append(false)
            }
        }
        let r = try runProcess(symbolizer, ["--functions=linkage", "--demangle", "--no-inlines", "--output-style=LLVM"],
                        stdin: Data(input.utf8), timeout: 120)
        guard r.status == 0 else { throw SupportError("llvm-symbolizer failed:\n\(r.transcript)") }
        // LLVM style: per address, "function\nfile:line:col\n\n"
        let blocks = r.stdoutText.components(separatedBy: "\n\n").filter { !$0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }
        var names: [String] = []
        var next = 0
        for isMapped in mapped {
            if isMapped, next < blocks.count {
                names.append(blocks[next].split(separator: "\n").first.map(String.init) ?? "??")
                next += 1
            } else {
                names.append("??")
            }
        }
        return names
    }

    static func module(containing pc: UInt64, in modules: [ModuleRecord]) -> ModuleRecord? {
        // later loads win (an address range may be reused after dlclose)
        for m in modules.reversed() {
            for s in m.segments where pc >= m.loadBias &+ s.vaddr && pc < m.loadBias &+ s.vaddr &+ s.memsz {
                return m
            }
        }
        return nil
    }
}

// MARK: - Assertions

/// Fails with the transcript unless the run ended with `status`.
func XCTAssertStatus(_ result: RunResult, _ status: Int32, _ message: String = "",
                     file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(result.status, status, "\(message)\n\(result.transcript)", file: file, line: line)
}

/// No sign of a Swift runtime crash in `text`.
func XCTAssertNoCrashText(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
    for bad in ["Fatal error", "Stack dump", "Current stack trace", "💣", "Illegal instruction", "Backtrace", "Thread 0 crashed"] {
        XCTAssertFalse(text.contains(bad), "output contains \"\(bad)\":\n\(text)", file: file, line: line)
    }
}
