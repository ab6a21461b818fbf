import XCTest
#if canImport(Testing)
import Testing
#endif

/// Where the assertion was written, for both test frameworks.
struct CallSite {
    var fileID: String
    var file: StaticString
    var line: UInt
    var column: UInt
}

/// Failing and skipping in whichever framework runs the current test.
enum TestOutcome {
    /// True inside a Swift Testing test.
    static var inSwiftTesting: Bool {
        #if canImport(Testing)
        return Test.current != nil
        #else
        return false
        #endif
    }

    /// Records a failure at `site` and lets the test go on: `Issue.record` under
    /// Swift Testing, `XCTFail` otherwise.
    static func fail(_ message: String, at site: CallSite) {
        #if canImport(Testing)
        if Test.current != nil {
            Issue.record(Comment(rawValue: message),
                         sourceLocation: SourceLocation(fileID: site.fileID, filePath: "\(site.file)",
                                                        line: Int(site.line), column: Int(site.column)))
            return
        }
        #endif
        XCTFail(message, file: site.file, line: site.line)
    }

    /// Ends the test as skipped: `Test.cancel` under Swift Testing, `XCTSkip` otherwise.
    static func skip(_ message: String, at site: CallSite) throws -> Never {
        #if canImport(Testing)
        if Test.current != nil {
            try Test.cancel(Comment(rawValue: message),
                            sourceLocation: SourceLocation(fileID: site.fileID, filePath: "\(site.file)",
                                                           line: Int(site.line), column: Int(site.column)))
        }
        #endif
        throw XCTSkip(message, file: site.file, line: site.line)
    }

    /// The command that would run this test binary under heapgen.
    static var heapgenCommand: String {
        var program = CommandLine.arguments.first ?? ""
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            program = exe
        }
        if program.isEmpty || program.hasSuffix("/swiftpm-testing-helper") {
            program = ".build/debug/<Package>PackageTests.xctest"
        } else if let cwd = FileManager.default.currentDirectoryPath as String?, program.hasPrefix(cwd + "/") {
            program = String(program.dropFirst(cwd.count + 1))
        }
        return "heapgen run -- \(program)"
    }

    /// Skips the test with the "needs heapgen" message unless the process is traced.
    static func requireHeapgen(_ api: String, at site: CallSite) throws {
        guard !ControlClient.isAvailable else { return }
        try skip("heapgen: \(api) needs the program to run under heapgen: \(heapgenCommand)", at: site)
    }
}
