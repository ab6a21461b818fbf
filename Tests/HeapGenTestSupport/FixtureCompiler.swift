// Compiling test fixtures (C, C++, Swift) once per test process. Each test
// target passes its own fixtures directory, e.g. `TestPaths.fixtures(for: #filePath)`.

import Foundation

/// Compiles fixture sources into the scratch directory, caching the binaries
/// for the life of the test process (keyed by the absolute source and the options).
public enum FixtureCompiler {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var cache: [String: String] = [:]

    /// The binary built under `key`, compiling it first with `compile(outputPath)`
    /// when this process has not yet; `name` is the binary's file name. The
    /// lock is held while compiling (tests run serially anyway).
    public static func cached(key: String, name: String, _ compile: (String) throws -> ProcessResult) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let hit = cache[key] { return hit }
        let out = try TestPaths.freshDirectory("fixture") + "/" + name
        let result = try compile(out)
        guard result.status == 0, FileManager.default.fileExists(atPath: out) else {
            throw TestSupportError("cannot compile fixture \(key):\n\(result.transcript)")
        }
        cache[key] = out
        return out
    }

    /// Compiles the single-file fixture `source` (a file in `fixtures`); the
    /// compiler follows the extension:
    /// - .c: `cc -O2 -g -std=gnu11 -Wall -D_GNU_SOURCE -I CShim/include FLAGS -o OUT SRC -pthread -ldl`
    /// - .cpp: `g++ -O2 -g -std=c++17 -Wall -I CShim/include FLAGS -o OUT SRC -pthread`
    /// - .swift: `swiftc -g -swift-version 5 -module-name Fixture FLAGS -o OUT SRC`
    ///
    /// `shared` builds `lib<name>.so` with `-shared -fPIC` (C and C++);
    /// `output` overrides the binary's file name.
    public static func build(_ source: String, in fixtures: String, flags: [String] = [],
                             output: String? = nil, shared: Bool = false) throws -> String {
        let src = fixtures + "/" + source
        let base = (source as NSString).deletingPathExtension
        let name = output ?? (shared ? "lib\(base).so" : base)
        let key = ([src, name, shared ? "so" : "exe"] + flags).joined(separator: " ")
        return try cached(key: key, name: name) { out in
            guard FileManager.default.fileExists(atPath: src) else { throw TestSupportError("fixture source missing: \(src)") }
            let include = ["-I", TestPaths.repoRoot + "/CShim/include"]
            let sharedFlags = shared ? ["-shared", "-fPIC"] : []
            switch (source as NSString).pathExtension {
            case "c":
                let args = ["-O2", "-g", "-std=gnu11", "-Wall", "-D_GNU_SOURCE"] + include + sharedFlags
                    + flags + ["-o", out, src, "-pthread", "-ldl"]
                return try runProcess(try tool("cc", hint: "install gcc"), args, timeout: 120)
            case "cpp":
                let args = ["-O2", "-g", "-std=c++17", "-Wall"] + include + sharedFlags + flags + ["-o", out, src, "-pthread"]
                return try runProcess(try tool("g++", hint: "install g++"), args, timeout: 120)
            case "swift":
                let args = ["-g", "-swift-version", "5", "-module-name", "Fixture"] + flags + ["-o", out, src]
                return try runProcess(try swiftc(), args, directory: (out as NSString).deletingLastPathComponent, timeout: 300)
            default:
                throw TestSupportError("unknown fixture kind: \(source)")
            }
        }
    }

    /// Compiles the Swift fixture directory `dir` (every `*.swift` in it) together
    /// with Sources/HeapGen/HeapGen.swift:
    /// `swiftc -g -swift-version 5 -module-name MODULE -o OUT -module-cache-path ... FILES HeapGen.swift`.
    public static func swiftWithHeapGen(_ dir: String, in fixtures: String, module: String = "Fixture") throws -> String {
        let srcDir = fixtures + "/" + dir
        return try cached(key: srcDir + " " + module, name: (dir as NSString).lastPathComponent) { out in
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: srcDir)) ?? [])
                .filter { $0.hasSuffix(".swift") }.sorted().map { srcDir + "/" + $0 }
            guard !files.isEmpty else { throw TestSupportError("no Swift sources in \(srcDir)") }
            let args = ["-g", "-swift-version", "5", "-module-name", module, "-o", out,
                        "-module-cache-path", (out as NSString).deletingLastPathComponent + "/mc"]
                + files + [TestPaths.repoRoot + "/Sources/HeapGen/HeapGen.swift"]
            return try runProcess(try swiftc(), args, timeout: 300)
        }
    }

    /// 1-based numbers of the lines of `source` (a file in `fixtures`) containing `needle`.
    public static func lines(_ source: String, in fixtures: String, containing needle: String) throws -> [Int] {
        let text = try String(contentsOfFile: fixtures + "/" + source, encoding: .utf8)
        return text.components(separatedBy: "\n").enumerated().filter { $0.element.contains(needle) }.map { $0.offset + 1 }
    }

    private static func swiftc() throws -> String {
        try tool("swiftc", hint: "the Swift toolchain must be on PATH or in /opt/swift/usr/bin")
    }
}
