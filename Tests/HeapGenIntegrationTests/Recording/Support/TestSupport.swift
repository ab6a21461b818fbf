// Test support specific to the recording tests: this target's fixtures,
// `heapgen record` runs kept whole (`Recording`), `heapgen info` summaries,
// valgrind and llvm-symbolizer cross-checks, and assertions. The common pieces
// (paths, scratch directories, processes, fixture compilation) are in
// HeapGenTestSupport.
//
// Nothing here skips: a missing binary, compiler or tool throws a
// `TestSupportError` whose message says what to build or install, and the test
// that needed it fails.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

// MARK: - Fixtures

enum Fixture {
    /// Tests/HeapGenIntegrationTests/Recording/Fixtures.
    static let directory = TestPaths.fixtures(for: #filePath)

    /// Compiles (once per test process) a fixture in Fixtures/ and returns the
    /// binary's path; see `FixtureCompiler.build`.
    static func build(_ source: String, flags: [String] = [], output: String? = nil, shared: Bool = false) throws -> String {
        try FixtureCompiler.build(source, in: directory, flags: flags, output: output, shared: shared)
    }

    /// `build` with some of the collector's own C files (Sources/CHeapGenCollector)
    /// compiled in: for tests of its readers on memory a fixture makes by hand.
    static func buildWithCollector(_ source: String, _ collectorFiles: [String], flags: [String] = []) throws -> String {
        let support = TestPaths.repoRoot + "/Sources/CHeapGenCollector"
        return try build(source, flags: flags + ["-I", support + "/include"] + collectorFiles.map { support + "/" + $0 })
    }
}

// MARK: - heapgen

struct Recording {
    var result: ProcessResult
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

extension HeapGenCLI {
    /// `heapgen record --output DIR/x.trace FLAGS -- PROGRAM ARGS`.
    static func recording(_ program: String, _ arguments: [String] = [], flags: [String] = [],
                       stdin: Data? = nil, environment: [String: String]? = nil,
                       timeout: Double = 300) throws -> Recording {
        let dir = try TestPaths.freshDirectory("trace")
        let trace = dir + "/x.trace"
        let args = ["record", "--output", trace] + flags + ["--", program] + arguments
        let result = try runProcess(try TestPaths.heapgen(), args, environment: environment, stdin: stdin, timeout: timeout)
        return Recording(result: result, trace: trace, directory: dir)
    }

    /// Starts `heapgen record` without waiting.
    static func start(_ program: String, _ arguments: [String] = [], flags: [String] = []) throws -> (RunningProcess, String) {
        let dir = try TestPaths.freshDirectory("trace")
        let trace = dir + "/x.trace"
        let args = ["record", "--output", trace] + flags + ["--", program] + arguments
        return (try RunningProcess(try TestPaths.heapgen(), args), trace)
    }

    /// `heapgen info TRACE --format json`, required to succeed.
    static func summary(_ trace: String, file: StaticString = #filePath, line: UInt = #line) throws -> Summary {
        let r = try runProcess(try TestPaths.heapgen(), ["info", trace, "--format", "json"], timeout: 300)
        guard r.status == 0 else { throw TestSupportError("heapgen info failed:\n\(r.transcript)") }
        do {
            return try Summary(json: r.stdout)
        } catch {
            throw TestSupportError("heapgen info --format json printed something that is not a JSON object (\(error)):\n\(r.transcript)")
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
        guard let dict = obj as? [String: Any] else { throw TestSupportError("not a JSON object") }
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
    var processParent: Int32? { uint("process.ppid").map { Int32($0) } }
    var processOrigin: String? {
        switch value("process.origin") {
        case let s as String: return s
        case let n as NSNumber: return ["root", "fork", "exec"][safe: n.intValue]
        default: return nil
        }
    }
}

// MARK: - valgrind

enum Valgrind {
    /// (allocs, frees) from `valgrind --run-libc-freeres=no --run-cxx-freeres=no`'s "total heap usage".
    static func heapUsage(_ program: String, _ arguments: [String] = []) throws -> (allocs: UInt64, frees: UInt64) {
        let valgrind = try tool("valgrind", hint: "apt-get install -y valgrind (.ci/run does)")
        let r = try runProcess(valgrind, ["--run-libc-freeres=no", "--run-cxx-freeres=no", "--leak-check=no", program] + arguments,
                        timeout: 600)
        guard r.status == 0 else { throw TestSupportError("valgrind run failed:\n\(r.transcript)") }
        // ==123== total heap usage: 1,234 allocs, 1,200 frees, 56,789 bytes allocated
        for line in r.stderrLines where line.contains("total heap usage:") {
            let tail = line.components(separatedBy: "total heap usage:")[1]
            let cleaned = tail.replacingOccurrences(of: ",", with: "")
            let words = cleaned.split(separator: " ")
            guard words.count >= 4, let a = UInt64(words[0]), let f = UInt64(words[2]) else { break }
            return (a, f)
        }
        throw TestSupportError("no 'total heap usage' line in valgrind's output:\n\(r.transcript)")
    }
}

// MARK: - Symbolication

enum LLVMSymbolizer {
    /// Function names (innermost first, inlined frames expanded) for the
    /// return addresses `frames`, using the moduleLoad records to find each
    /// frame's object and link-time address. Frames in no module give "??".
    static func functionNames(frames: [UInt64], modules: [ModuleRecord]) throws -> [String] {
        let symbolizer = (try? tool("llvm-symbolizer")) ?? "/opt/swift/usr/bin/llvm-symbolizer"
        guard FileManager.default.isExecutableFile(atPath: symbolizer) else {
            throw TestSupportError("llvm-symbolizer not found (expected /opt/swift/usr/bin/llvm-symbolizer)")
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
        guard r.status == 0 else { throw TestSupportError("llvm-symbolizer failed:\n\(r.transcript)") }
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
func XCTAssertStatus(_ result: ProcessResult, _ status: Int32, _ message: String = "",
                     file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(result.status, status, "\(message)\n\(result.transcript)", file: file, line: line)
}

/// No sign of a Swift runtime crash in `text`.
func XCTAssertNoCrashText(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
    for bad in ["Fatal error", "Stack dump", "Current stack trace", "💣", "Illegal instruction", "Backtrace", "Thread 0 crashed"] {
        XCTAssertFalse(text.contains(bad), "output contains \"\(bad)\":\n\(text)", file: file, line: line)
    }
}
