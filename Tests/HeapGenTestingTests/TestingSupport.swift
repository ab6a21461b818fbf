// Support specific to HeapGenTestingTests: this target's fixtures, the `swift`
// driver, and runs whose output is read as text. The common pieces (paths,
// scratch directory, processes, fixture compilation) are in HeapGenTestSupport.
// Nothing here skips: a missing tool throws, and the test that needed it fails
// with the reason.

import Foundation
import HeapGenTestSupport

extension TestPaths {
    /// Tests/HeapGenTestingTests/Fixtures.
    static let fixtures = TestPaths.fixtures(for: #filePath)

    /// The Swift toolchain's `swift`: on PATH, or /opt/swift.
    static func swift() throws -> String {
        var candidates: [String] = []
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            candidates.append("\(dir)/swift")
        }
        candidates.append("/opt/swift/usr/bin/swift")
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TestSupportError("swift not found on PATH or in /opt/swift/usr/bin")
        }
        return found
    }
}

/// A finished run with its output as text.
struct TextProcessResult {
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
    /// Runs `executable` to completion (see `runProcess`); throws if it runs past `timeout` seconds.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                    directory: String? = nil, timeout: Double = 600) throws -> TextProcessResult {
        let r = try runProcess(executable, arguments, environment: environment, directory: directory, timeout: timeout)
        if r.timedOut {
            throw TestSupportError("timed out after \(timeout) s: \(executable) \(arguments.joined(separator: " "))")
        }
        return TextProcessResult(status: r.status, stdout: r.stdoutText, stderr: r.stderrText,
                                 seconds: r.seconds, command: r.command)
    }

    /// Compiles C fixture `name` (in Fixtures/) once per test process (see `FixtureCompiler.build`).
    static func compileC(_ name: String) throws -> String {
        try FixtureCompiler.build(name, in: TestPaths.fixtures)
    }
}
