// Shared support for the integration test targets: where the repository, the
// build products (`heapgen`, `libHeapGenShim.so`, `heapgen-demo`) and the
// per-process scratch directory are.
//
// Nothing here skips: a missing binary, compiler or tool throws a
// `TestSupportError` whose message says what to build or install, and the test
// that needed it fails.

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The one error type of the test support: its description says what went wrong
/// and, when it can, what to build or install.
public struct TestSupportError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Locations shared by every test target.
public enum TestPaths {
    /// The repository root (three path components above this file:
    /// file, HeapGenTestSupport, Tests).
    public static let repoRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The `Fixtures` directory nearest to `filePath` (pass `#filePath`): the first one found
    /// going up from the file's directory, at most to `Tests/`. A unit test target keeps one
    /// at its top (`Tests/HeapGenGateTests/Fixtures`); the integration target keeps one per
    /// area (`Tests/HeapGenIntegrationTests/Recording/Fixtures`), beside the area's tests.
    public static func fixtures(for filePath: String) -> String {
        var dir = URL(fileURLWithPath: filePath).deletingLastPathComponent()
        while dir.lastPathComponent != "Tests" && dir.path != "/" {
            var isDirectory: ObjCBool = false
            let candidate = dir.appendingPathComponent("Fixtures").path
            if FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory), isDirectory.boolValue {
                return candidate
            }
            dir.deleteLastPathComponent()
        }
        return URL(fileURLWithPath: filePath).deletingLastPathComponent().path + "/Fixtures"
    }

    /// The build directory: `$HEAPGEN_BUILD_DIR`, else the directory of the
    /// running test bundle when it holds `heapgen`, else `.build/debug`.
    public static let buildDir: String = {
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

    /// The built `heapgen`; throws unless it and `libHeapGenShim.so` are in `buildDir`.
    public static func heapgen() throws -> String {
        let path = buildDir + "/heapgen"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestSupportError("heapgen not found at \(path): run `swift build` first (or set HEAPGEN_BUILD_DIR)")
        }
        _ = try shim()
        return path
    }

    /// The built preload library, `libHeapGenShim.so`.
    public static func shim() throws -> String {
        let path = buildDir + "/libHeapGenShim.so"
        guard FileManager.default.fileExists(atPath: path) else {
            throw TestSupportError("libHeapGenShim.so not found at \(path): run `swift build` first (or set HEAPGEN_BUILD_DIR)")
        }
        return path
    }

    /// The built `heapgen-demo`.
    public static func demo() throws -> String {
        let path = buildDir + "/heapgen-demo"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestSupportError("heapgen-demo not found at \(path): run `swift build` first")
        }
        return path
    }

    /// One scratch directory per test process, removed at exit unless
    /// HEAPGEN_KEEP_TEST_FILES is set.
    public static let scratch: String = {
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

    /// A new empty directory inside the scratch directory, named `<hint>-<n>`.
    public static func freshDirectory(_ hint: String = "run") throws -> String {
        let dir = scratch + "/\(hint)-\(Counter.next())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }
}

/// Removes registered directories when the test process exits.
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

/// A process-wide counter for unique names.
enum Counter {
    nonisolated(unsafe) private static var value = 0
    private static let lock = NSLock()
    static func next() -> Int {
        lock.lock(); defer { lock.unlock() }
        value += 1
        return value
    }
}

extension Array {
    /// The element at `i`, or nil when `i` is out of range.
    public subscript(safe i: Int) -> Element? { indices.contains(i) ? self[i] : nil }
}
