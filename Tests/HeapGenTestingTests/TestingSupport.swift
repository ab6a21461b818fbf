// Support for HeapGenTestingTests: finds the built heapgen, compiles fixtures,
// runs processes with their output in files. Nothing here skips: a missing
// tool throws, and the test that needed it fails with the reason.

import Foundation
import XCTest

struct TestingSupportError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

enum TestingPaths {
    /// The repository root (three levels above this file).
    static let repoRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }   // file, HeapGenTestingTests, Tests
        return url.path
    }()

    static let fixtures = repoRoot + "/Tests/HeapGenTestingTests/Fixtures"

    /// `$HEAPGEN_BUILD_DIR`, else the directory of the running test bundle when it
    /// holds `heapgen`, else `.build/debug`.
    static let buildDir: String = {
        if let env = ProcessInfo.processInfo.environment["HEAPGEN_BUILD_DIR"], !env.isEmpty {
            return env.hasPrefix("/") ? env : FileManager.default.currentDirectoryPath + "/" + env
        }
        let arg0 = CommandLine.arguments.first ?? ""
        if !arg0.isEmpty {
            let abs = arg0.hasPrefix("/") ? arg0 : FileManager.default.currentDirectoryPath + "/" + arg0
            var url = URL(fileURLWithPath: abs).standardized
            for _ in 0..<4 {
                url.deleteLastPathComponent()
                if FileManager.default.isExecutableFile(atPath: url.path + "/heapgen") { return url.path }
            }
        }
        return repoRoot + "/.build/debug"
    }()

    static func heapgen() throws -> String {
        let path = buildDir + "/heapgen"
        guard FileManager.default.isExecutableFile(atPath: path),
              FileManager.default.fileExists(atPath: buildDir + "/libHeapGenShim.so") else {
            throw TestingSupportError("heapgen or libHeapGenShim.so not found in \(buildDir): run `swift build` first (or set HEAPGEN_BUILD_DIR)")
        }
        return path
    }

    /// A scratch directory for this test process, removed at exit.
    static let scratch: String = {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/heapgen-testing-tests.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let dir = made.map { String(cString: $0) } ?? "\(base)/heapgen-testing-tests-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        if ProcessInfo.processInfo.environment["HEAPGEN_KEEP_TEST_FILES"] == nil {
            atexit { try? FileManager.default.removeItem(atPath: TestingPaths.scratch) }
        }
        return dir
    }()

    /// The Swift toolchain's `swift`: next to the running toolchain, on PATH, or /opt/swift.
    static func swift() throws -> String {
        var candidates: [String] = []
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            candidates.append("\(dir)/swift")
        }
        candidates.append("/opt/swift/usr/bin/swift")
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TestingSupportError("swift not found on PATH or in /opt/swift/usr/bin")
        }
        return found
    }
}

struct ProcessResult {
    var status: Int32
    var stdout: String
    var stderr: String
    var seconds: Double
    var command: String

    var output: String { stdout + stderr }

    var transcript: String {
        "$ \(command)\n[status \(status) after \(String(format: "%.2f", seconds)) s]\n"
            + "--- stdout ---\n\(String(stdout.suffix(6000)))\n--- stderr ---\n\(String(stderr.suffix(6000)))"
    }
}

enum Run {
    /// Runs `executable` to completion with stdout and stderr in files.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                    directory: String? = nil, timeout: Double = 600) throws -> ProcessResult {
        let io = TestingPaths.scratch + "/io-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: io, withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: io + "/out", contents: nil)
        FileManager.default.createFile(atPath: io + "/err", contents: nil)
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: io + "/out"))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: io + "/err"))
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        if let environment { p.environment = environment }
        if let directory { p.currentDirectoryURL = URL(fileURLWithPath: directory) }
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = out
        p.standardError = err
        let start = Date()
        try p.run()
        let deadline = start.addingTimeInterval(timeout)
        while p.isRunning {
            if Date() > deadline {
                p.terminate()
                throw TestingSupportError("timed out after \(timeout) s: \(executable) \(arguments.joined(separator: " "))")
            }
            usleep(20_000)
        }
        try? out.close()
        try? err.close()
        return ProcessResult(
            status: p.terminationStatus,
            stdout: (try? String(contentsOfFile: io + "/out", encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOfFile: io + "/err", encoding: .utf8)) ?? "",
            seconds: Date().timeIntervalSince(start),
            command: ([executable] + arguments).joined(separator: " "))
    }

    /// Compiles C fixture `name` (in Fixtures/) with cc against CShim/include.
    static func compileC(_ name: String) throws -> String {
        let output = TestingPaths.scratch + "/" + (name as NSString).deletingPathExtension
        let result = try run("/usr/bin/env", ["cc", "-O1", "-g", "-I", TestingPaths.repoRoot + "/CShim/include",
                                              "-o", output, TestingPaths.fixtures + "/" + name])
        guard result.status == 0 else { throw TestingSupportError("cannot compile \(name):\n\(result.transcript)") }
        return output
    }
}
