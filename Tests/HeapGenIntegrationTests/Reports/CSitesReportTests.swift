// End to end on a C program: abandoned, cache and clean sites, with
// symbolicated user frames; and a clean program with nothing left behind.

import Foundation
import HeapGenTestSupport
import XCTest

final class CSitesReportTests: XCTestCase {
    static let cycles = 8

    func testAbandonedCacheAndScratchSitesAreToldApart() throws {
        let fixture = try ReportFixture.c("sites.c")
        let source = ReportFixture.sourcePath("sites.c")
        let run = try HeapGenCLI.runJSON(fixture, ["leaky", "\(Self.cycles)"])
        let r = run.report
        let n = Self.cycles

        XCTAssertEqual(r.schema, "heapgen-report/1", "\(r)")
        XCTAssertEqual(r.cycles, n, "\(r)")
        XCTAssertEqual(r.judgedCycles, n - 1, "\(r)")
        XCTAssertEqual(jsonInt(r.options["warmUp"]), 1, "\(r)")
        XCTAssertEqual(jsonInt(r.options["toleratedMisses"]), 1, "\(r)")
        XCTAssertEqual(r.program["path"] as? String, fixture, "\(r)")
        XCTAssertEqual(r.program["args"] as? [String], [fixture, "leaky", "\(n)"], "\(r)")
        XCTAssertEqual(jsonInt(r.program["exitStatus"]), 0, "\(r)")
        XCTAssertTrue(r.program["signal"] is NSNull, "signal should be null: \(r)")
        XCTAssertTrue(run.result.stdoutText.contains("sites: done"), run.result.transcript)

        // Exactly the program's calls: per cycle 3 (leak) + 4 (scratch) + 1 realloc, plus 16 (cache) once.
        XCTAssertEqual(r.total("allocations"), 8 * n + 16, "\(r)")
        // 4 scratch frees per cycle + the old block of every realloc but the first.
        XCTAssertEqual(r.total("frees"), 4 * n + (n - 1), "\(r)")
        XCTAssertEqual(r.total("lostEvents"), 0, "\(r)")
        XCTAssertEqual(r.total("allocatedBytes"), n * (192 + 806) + 16 * 48 + 100 * n * (n + 1) / 2, "\(r)")
        // Peak: in the last cycle, at scratch()'s 203-byte block, before grow_log's realloc.
        XCTAssertEqual(r.total("peakBytes"), 192 * n + 16 * 48 + 100 * (n - 1) + 203, "\(r)")
        XCTAssertEqual(r.total("peakGeneration"), n, "\(r)")
        XCTAssertEqual(r.total("liveAtExitObjects"), 3 * n + 16 + 1, "\(r)")
        XCTAssertEqual(r.total("liveAtExitBytes"), 192 * n + 16 * 48 + 100 * n, "\(r)")

        // Exactly three findings, in report order: abandoned by bytes per cycle, then the cache.
        XCTAssertEqual(r.findings.count, 3, "expected leak_session, grow_log, cache_lookup:\n\(r.findingsSummary)")
        XCTAssertEqual(r.findings.map(\.kind), ["abandoned", "abandoned", "cache"], r.findingsSummary)

        // leak_session: 3 x 64 bytes every cycle.
        let leaks = r.findings(function: "leak_session")
        XCTAssertEqual(leaks.count, 1, r.findingsSummary)
        if let f = leaks.first {
            XCTAssertEqual(f.kind, "abandoned", f.summary)
            XCTAssertNil(f.typeName, f.summary)
            XCTAssertEqual(f.objectsPerCycle, Array(repeating: 3, count: n), f.summary)
            XCTAssertEqual(f.bytesPerCycle, Array(repeating: 192, count: n), f.summary)
            XCTAssertEqual(f.cycles, n - 1, f.summary)
            XCTAssertEqual(f.cyclesWithGrowth, n - 1, f.summary)
            XCTAssertEqual(f.averageBytesPerCycle, 192, f.summary)
            XCTAssertEqual(f.survivingObjects, 3 * (n - 1), f.summary)
            XCTAssertEqual(f.survivingBytes, 192 * (n - 1), f.summary)
            try assertUserFrame(f, function: "leak_session", source: source, fixture: fixture)
        }
        XCTAssertTrue(r.findings.first?.hasFunction("leak_session") ?? false, "largest abandoned first:\n\(r.findingsSummary)")

        // grow_log: one block, 100 bytes bigger every cycle: abandoned by bytes, objects flat.
        let logs = r.findings(function: "grow_log")
        XCTAssertEqual(logs.count, 1, r.findingsSummary)
        if let f = logs.first {
            XCTAssertEqual(f.kind, "abandoned", f.summary)
            XCTAssertEqual(f.objectsPerCycle, [1] + Array(repeating: 0, count: n - 1), f.summary)
            XCTAssertEqual(f.bytesPerCycle, Array(repeating: 100, count: n), f.summary)
            XCTAssertEqual(f.cyclesWithGrowth, n - 1, f.summary)
            XCTAssertEqual(f.survivingObjects, 1, f.summary)
            XCTAssertEqual(f.survivingBytes, 100 * n, f.summary)
            XCTAssertEqual(f.averageBytesPerCycle, 100, f.summary)
            try assertUserFrame(f, function: "grow_log", source: source, fixture: fixture)
        }

        // cache_lookup: 16 blocks in the first cycle, then nothing: a cache, never abandoned.
        let caches = r.findings(function: "cache_lookup")
        XCTAssertEqual(caches.count, 1, r.findingsSummary)
        if let f = caches.first {
            XCTAssertEqual(f.kind, "cache", f.summary)
            XCTAssertEqual(f.objectsPerCycle, [16] + Array(repeating: 0, count: n - 1), f.summary)
            XCTAssertEqual(f.bytesPerCycle, [16 * 48] + Array(repeating: 0, count: n - 1), f.summary)
            XCTAssertEqual(f.cyclesWithGrowth, 0, f.summary)
            try assertUserFrame(f, function: "cache_lookup", source: source, fixture: fixture)
        }

        // scratch allocates and frees: no finding.
        XCTAssertTrue(r.findings.allSatisfy { !$0.hasFunction("scratch") }, r.findingsSummary)
    }

    func testCleanProgramHasNoFindings() throws {
        let fixture = try ReportFixture.c("sites.c")
        let n = Self.cycles
        let run = try HeapGenCLI.runJSON(fixture, ["clean", "\(n)"])
        let r = run.report
        XCTAssertEqual(r.cycles, n, "\(r)")
        XCTAssertEqual(r.findings.count, 0, "a clean program has no findings:\n\(r.findingsSummary)")
        // leak 3 + scratch 4 + grow_log 1 allocations per cycle, all freed.
        XCTAssertEqual(r.total("allocations"), 8 * n, "\(r)")
        XCTAssertEqual(r.total("frees"), 8 * n, "\(r)")
        for g in r.generations.dropFirst() {
            XCTAssertEqual(g.persistentObjects, 0, "generation \(g.index ?? -1) left something: \(g.json)")
        }

        // Text report and exit status of `heapgen run` (text is the default format).
        let text = try HeapGenCLI.run(["run", "--", fixture, "clean", "\(n)"])
        XCTAssertEqual(text.status, 0, text.transcript)
        XCTAssertTrue(text.stdoutText.contains("sites: done"), text.transcript)
        let all = (text.stdoutText + text.stderrText).lowercased()
        XCTAssertTrue(all.range(of: #"no (abandoned|growth|memory growth|findings|leaks)"#, options: .regularExpression) != nil
                        || all.contains("nothing abandoned") || all.contains("no site grew"),
                      "the text report should say there is no growth:\n\(text.transcript)")
        XCTAssertFalse(all.contains("leak_session"), "no site should be listed:\n\(text.transcript)")
    }

    /// gcc -O2 peels the first iteration of a loop whose body tests `k == 1` (here the
    /// inline mark label), so cycle 1 calls every function from a second call site on the
    /// same source line. The report must read exactly as for the build without peeling:
    /// one abandoned leak_session growing 3 objects every cycle (no leak_session "cache"),
    /// grow_log growing 100 bytes every cycle (its cycle-1 block came from the peeled
    /// copy and was realloc'ed by the other), one cache_lookup cache.
    func testCallSiteDuplicatedByTheCompilerReadsLikeTheSourceSays() throws {
        let n = Self.cycles
        let peeled = try HeapGenCLI.runJSON(try ReportFixture.c("sites.c", flags: ["-DPEELED"]), ["leaky", "\(n)"]).report
        let plain = try HeapGenCLI.runJSON(try ReportFixture.c("sites.c"), ["leaky", "\(n)"]).report
        for function in ["leak_session", "grow_log", "cache_lookup"] {
            let p = peeled.findings(function: function), q = plain.findings(function: function)
            XCTAssertEqual(p.map(\.kind), q.map(\.kind), "\(function): peeled\n\(peeled.findingsSummary)\nplain\n\(plain.findingsSummary)")
            XCTAssertEqual(p.map(\.objectsPerCycle), q.map(\.objectsPerCycle), "\(function) objects per cycle, peeled vs plain")
            XCTAssertEqual(p.map(\.bytesPerCycle), q.map(\.bytesPerCycle), "\(function) bytes per cycle, peeled vs plain")
            XCTAssertEqual(p.map(\.cyclesWithGrowth), q.map(\.cyclesWithGrowth), "\(function) cycles with growth, peeled vs plain")
            XCTAssertEqual(p.map(\.averageBytesPerCycle), q.map(\.averageBytesPerCycle), "\(function) average bytes, peeled vs plain")
            XCTAssertEqual(p.map(\.survivingObjects), q.map(\.survivingObjects), "\(function) survivors, peeled vs plain")
        }
        XCTAssertEqual(peeled.findings(function: "leak_session").first?.objectsPerCycle, Array(repeating: 3, count: n),
                       peeled.findingsSummary)
        XCTAssertEqual(peeled.findings(function: "grow_log").first?.bytesPerCycle, Array(repeating: 100, count: n),
                       peeled.findingsSummary)
        XCTAssertEqual(peeled.findings.count, 3, peeled.findingsSummary)
    }

    /// The finding's user frame is `function`, in the fixture binary, at a line of the
    /// fixture source inside that function's BEGIN/END markers.
    private func assertUserFrame(_ f: ReportFinding, function: String, source: String, fixture: String,
                                 file: StaticString = #filePath, line: UInt = #line) throws {
        guard let u = f.userFrame else {
            XCTFail("no user frame: \(f.summary)", file: file, line: line)
            return
        }
        XCTAssertEqual(u.function, function, "user frame: \(u.text)", file: file, line: line)
        XCTAssertEqual(u.file, source, "user frame: \(u.text)", file: file, line: line)
        XCTAssertEqual(u.module, fixture, "user frame: \(u.text)", file: file, line: line)
        let body = try ReportFixture.markedLines("sites.c", function)
        if let l = u.line {
            XCTAssertTrue(body.contains(l), "line \(l) is outside \(function) (lines \(body)): \(u.text)", file: file, line: line)
        } else {
            XCTFail("user frame has no line: \(u.text)", file: file, line: line)
        }
        // No frame before the user frame is in the fixture itself.
        for fr in f.frames.prefix(f.userFrameIndex ?? 0) {
            XCTAssertNotEqual(fr.module, fixture, "a frame before the user frame is in the program: \(fr.text)", file: file, line: line)
        }
    }
}
