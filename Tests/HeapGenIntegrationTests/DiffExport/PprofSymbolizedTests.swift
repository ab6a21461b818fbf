// The pprof export as `go tool pprof` reads it by default (symbolization on): every
// mapping says heapgen symbolicated it, so pprof keeps heapgen's names and does not
// symbolize again; the file is real deflate, several times smaller than the profile.

import Foundation
import HeapGenTestSupport
import XCTest

final class PprofSymbolizedTests: XCTestCase {
    func testGoPprofTopIsFastAndKeepsTheNames() throws {
        // The demo: Swift, Foundation and libstdc++ frames.
        let trace = try HeapGenCLI.record(try TestPaths.demo())
        let dir = try TestPaths.freshDirectory("pprof")
        let profile = dir + "/heap.pb.gz"
        _ = try HeapGenCLI.succeed(["export", trace, "--format", "pprof", "--output", profile])
        let go = try GoTool.path()

        // Every mapping: has_functions, has_filenames, has_line_numbers, has_inline_frames.
        let raw = try GoTool.pprof(go, ["-raw", profile])
        let mappings = raw.components(separatedBy: "\n").drop { $0 != "Mappings" }.dropFirst().filter { !$0.isEmpty }
        XCTAssertGreaterThan(mappings.count, 3, raw)
        for m in mappings { XCTAssertTrue(m.hasSuffix(" [FN][FL][LN][IN]"), m) }

        // pprof's default (local symbolization) keeps the names and takes well under 2 s.
        let (top, seconds) = try Self.pprofTop(go, profile)
        XCTAssertLessThan(seconds, 2, top)
        XCTAssertTrue(top.contains(" ImageCache.image(named:)\n"), top)
        XCTAssertTrue(top.contains(" swift_slowAlloc\n"), top)

        // Real deflate: the profile unzipped is several times larger than the file.
        let gunzip = try runProcess(try tool("gzip", hint: "install gzip"), ["-dc", profile])
        XCTAssertEqual(gunzip.status, 0, gunzip.transcript)
        let size = try XCTUnwrap((try FileManager.default.attributesOfItem(atPath: profile)[.size] as? NSNumber)?.intValue)
        XCTAssertLessThan(size * 2, gunzip.stdout.count, "\(size) bytes gzipped, \(gunzip.stdout.count) unzipped")
    }

    /// `go tool pprof -top PROFILE` with pprof's default symbolization: output and seconds.
    static func pprofTop(_ go: String, _ profile: String) throws -> (String, Double) {
        var env = ProcessInfo.processInfo.environment
        let home = try TestPaths.freshDirectory("gohome")
        if env["HOME"] == nil { env["HOME"] = home }
        env["PPROF_TMPDIR"] = home
        env["GOCACHE"] = env["GOCACHE"] ?? home + "/cache"
        env["GOTOOLCHAIN"] = "local"
        // Compile pprof once (go tool may build it on first use) so that the timed run is pprof's own.
        _ = try runProcess(go, ["tool", "pprof", "-symbolize=none", "-top", profile], environment: env, timeout: 300)
        let result = try runProcess(go, ["tool", "pprof", "-top", profile], environment: env, timeout: 300)
        guard result.status == 0 else { throw TestSupportError("go tool pprof failed:\n\(result.transcript)") }
        return (result.stdoutText, result.seconds)
    }
}
