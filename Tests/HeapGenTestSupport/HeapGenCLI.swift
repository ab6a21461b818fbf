// Running the built `heapgen` from the integration tests.

import Foundation

/// The `heapgen` command line (the executable in `TestPaths.buildDir`).
/// Named so as not to clash with the `HeapGen` library module.
public enum HeapGenCLI {
    /// `heapgen ARGS`, in `directory` if given.
    @discardableResult
    public static func run(_ arguments: [String], environment: [String: String]? = nil, stdin: Data? = nil,
                           directory: String? = nil, timeout: Double = 180) throws -> ProcessResult {
        try runProcess(try TestPaths.heapgen(), arguments, environment: environment, stdin: stdin,
                       directory: directory, timeout: timeout)
    }

    /// `heapgen ARGS`, required to exit 0.
    @discardableResult
    public static func succeed(_ arguments: [String]) throws -> ProcessResult {
        let result = try run(arguments)
        guard result.status == 0 else { throw TestSupportError("heapgen failed:\n\(result.transcript)") }
        return result
    }

    /// `heapgen ARGS` printing one JSON object, required to exit 0.
    public static func json(_ arguments: [String]) throws -> [String: Any] {
        let result = try succeed(arguments)
        guard let obj = try? JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] else {
            throw TestSupportError("not one JSON object:\n\(result.transcript)")
        }
        return obj
    }

    /// `heapgen record -q --output DIR/x.trace FLAGS -- PROGRAM ARGS`, required to
    /// end with `expectStatus`: the trace's path.
    public static func record(_ program: String, _ arguments: [String] = [], flags: [String] = [],
                              expectStatus: Int32 = 0) throws -> String {
        let trace = try TestPaths.freshDirectory("rec") + "/x.trace"
        let result = try run(["record", "-q", "--output", trace] + flags + ["--", program] + arguments)
        guard result.status == expectStatus else {
            throw TestSupportError("heapgen record: expected status \(expectStatus):\n\(result.transcript)")
        }
        return trace
    }

    /// `heapgen info TRACE --format json`, required to succeed.
    public static func info(_ trace: String) throws -> [String: Any] {
        let result = try run(["info", trace, "--format", "json"])
        guard result.status == 0,
              let obj = try? JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] else {
            throw TestSupportError("heapgen info failed:\n\(result.transcript)")
        }
        return obj
    }
}
