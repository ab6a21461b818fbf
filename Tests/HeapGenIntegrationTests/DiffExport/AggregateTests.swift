// `heapgen record --aggregate`: the same deterministic fixture (Fixtures/aggregate.c) recorded
// in full and aggregated gives the same report findings, diff, gate verdict and export; the
// aggregated trace is a fraction of the size; what needs individual blocks is refused.

import Foundation
import HeapGenTestSupport
import XCTest

final class AggregateTests: XCTestCase {
    static let source = "aggregate.c"

    /// Both recordings of the fixture (each run once per test process).
    nonisolated(unsafe) private static var traces: (full: String, aggregated: String)?

    private func traces() throws -> (full: String, aggregated: String) {
        if let t = Self.traces { return t }
        let program = try DiffExportFixture.c(Self.source)
        let t = (try HeapGenCLI.record(program), try HeapGenCLI.record(program, flags: ["--aggregate"]))
        Self.traces = t
        return t
    }

    /// A JSON document without what differs between two runs of one program: addresses
    /// (ASLR), pids, the paths of the traces, times; and the note an aggregated trace's
    /// report adds on its peak (checked in testReportFindingsAreTheFullTracesAndTheTraceIsSmall).
    private func normalized(_ any: Any) -> Any {
        if let object = any as? [String: Any] {
            var out: [String: Any] = [:]
            for (key, value) in object where !["address", "pid", "ppid", "trace", "otherTraces"].contains(key)
                && !key.lowercased().contains("time") && !key.contains("Nanoseconds") {
                out[key] = key == "notes" ? (value as? [String] ?? []).filter { !$0.contains("record --aggregate") }
                                          : normalized(value)
            }
            return out
        }
        if let array = any as? [Any] { return array.map(normalized) }
        return any
    }

    private func text(_ any: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: normalized(any), options: [.sortedKeys, .prettyPrinted]),
               as: UTF8.self)
    }

    func testReportFindingsAreTheFullTracesAndTheTraceIsSmall() throws {
        let (full, aggregated) = try traces()
        var a = try HeapGenCLI.json(["report", full, "--format", "json"])
        var b = try HeapGenCLI.json(["report", aggregated, "--format", "json"])
        // The peak is judged from the expanded events, whose order within a generation is
        // made up (transient blocks freed at once): it is at most the recorded one.
        let peakA = try XCTUnwrap(jsonInt((a["totals"] as? [String: Any])?["peakBytes"]), "\(a.keys)")
        let peakB = try XCTUnwrap(jsonInt((b["totals"] as? [String: Any])?["peakBytes"]))
        XCTAssertLessThanOrEqual(peakB, peakA)
        for key in ["totals"] {
            var ta = a[key] as? [String: Any] ?? [:], tb = b[key] as? [String: Any] ?? [:]
            ta["peakBytes"] = nil; tb["peakBytes"] = nil
            ta["peakGeneration"] = nil; tb["peakGeneration"] = nil
            a[key] = ta; b[key] = tb
        }
        // It says so (the peak was shown as if exact: a probe of heaptrack's peak test read
        // 100 B of 125), in the report and in info.
        let notes = b["notes"] as? [String] ?? []
        XCTAssertEqual(notes.filter { $0.contains("record --aggregate") && $0.contains("at most the real one") }.count, 1,
                       "\(notes)")
        XCTAssertEqual(try text(a), try text(b))
        let infoText = try HeapGenCLI.succeed(["info", aggregated]).stdoutText
        XCTAssertTrue(infoText.contains("at least ") && infoText.contains("(aggregated: the order within a generation is not kept)"),
                      infoText)
        // The fixture's staircase is found in both.
        let findings = try XCTUnwrap(b["findings"] as? [[String: Any]], "\(b.keys)")
        XCTAssertTrue("\(findings)".contains("leak_pair"), "\(findings)")

        // Disk use follows sites, not events: ten times the transient blocks per cycle
        // (a churn of 20,000 instead of 2,000) grows the full trace, not the aggregated one.
        let program = try DiffExportFixture.c(Self.source)
        let fullMore = try HeapGenCLI.record(program, ["6", "20000"])
        let aggregatedMore = try HeapGenCLI.record(program, ["6", "20000"], flags: ["--aggregate"])
        func size(_ path: String) throws -> Int {
            try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        }
        let (a1, a10, f1, f10) = (try size(aggregated), try size(aggregatedMore), try size(full), try size(fullMore))
        XCTAssertLessThan(a1, f1)
        XCTAssertGreaterThan(f10, f1 + 10_000, "the full trace grows with events")
        XCTAssertLessThan(abs(a10 - a1), 512, "aggregated: \(a1) B with 2,000 blocks a cycle, \(a10) B with 20,000")

        let info = try HeapGenCLI.info(aggregated)
        XCTAssertEqual(info["aggregated"] as? Bool, true)
        XCTAssertNil(try HeapGenCLI.info(full)["aggregated"])
        XCTAssertEqual(jsonInt(info["eventCount"]), jsonInt(try HeapGenCLI.info(full)["eventCount"]))
    }

    func testDiffBetweenMarksIsTheFullTraces() throws {
        let (full, aggregated) = try traces()
        for (from, to) in [("1", "4"), ("start", "end"), ("2", "done")] {
            let a = try HeapGenCLI.json(["diff", full, "--from", from, "--to", to, "--format", "json"])
            let b = try HeapGenCLI.json(["diff", aggregated, "--from", from, "--to", to, "--format", "json"])
            XCTAssertEqual(try text(a), try text(b), "\(from) → \(to)")
        }
        // Two traces: the full one against the aggregated one, no change.
        let both = try HeapGenCLI.json(["diff", full, aggregated, "--format", "json"])
        XCTAssertEqual(jsonInt(both.diffTotals["bytesDelta"]), 0, "\(both.diffTotals)")
    }

    func testGateVerdictIsTheFullTraces() throws {
        let (full, aggregated) = try traces()
        for flags in [["--fail-on", "abandoned"], ["--fail-on", "growth"], ["--max-live-at-exit", "100"],
                      ["--max-bytes-per-cycle", "1KB"]] {
            let a = try HeapGenCLI.run(["check", full] + flags)
            let b = try HeapGenCLI.run(["check", aggregated] + flags)
            XCTAssertEqual(a.status, b.status, "\(flags)\n\(a.transcript)\n\(b.transcript)")
            let verdict = { (r: ProcessResult) in
                r.stderrText.split(separator: "\n").filter { $0.contains("gate") || $0.contains("SUMMARY") }
                    .map { $0.replacingOccurrences(of: full, with: "T").replacingOccurrences(of: aggregated, with: "T") }
            }
            XCTAssertEqual(verdict(a), verdict(b), "\(flags)")
        }
        XCTAssertEqual(try HeapGenCLI.run(["check", aggregated, "--fail-on", "abandoned"]).status, 23)
    }

    /// An aggregated trace counts frees of addresses that were not live, but its addresses
    /// are made up: the report says none can be explained (not "no block holds 0xe0…"), and
    /// an invalid-free gate fails on the count.
    func testStrayFreesAreCountedNotExplained() throws {
        let fixture = try ReportFixture.c("strayfree.c", flags: ["-O0"])
        let dir = try TestPaths.freshDirectory("aggregate-stray")
        let trace = dir + "/a.trace"
        let r = try HeapGenCLI.run(["record", "--quiet", "--aggregate", "--output", trace, "--", fixture, "realloc-freed"])
        XCTAssertEqual(r.status, 0, r.transcript)
        let report = try HeapGenCLI.report(trace)
        XCTAssertEqual(report.total("untrackedFrees"), 1)
        XCTAssertNil(report.json["strayFrees"], "nothing to explain them by: \(report.json["strayFrees"] ?? "")")
        let text = try HeapGenCLI.run(["report", trace]).stdoutText
        XCTAssertTrue(text.contains("Frees of addresses that were not live (1)\n  none explained: a trace recorded with --aggregate keeps no addresses"), text)
        let html = try HeapGenCLI.run(["report", "--format", "html", trace]).stdoutText
        XCTAssertTrue(html.contains("<li>1 free of addresses that were not live (none explained"), "the HTML page's notes")
        let gate = try HeapGenCLI.run(["check", "--fail-on", "invalid-free", trace])
        XCTAssertEqual(gate.status, 23, gate.transcript)
        XCTAssertEqual(gate.stderrLines.last, "SUMMARY: heapgen: gate failed: 1 invalid free (1 not explained).")
    }

    func testExportIsTheFullTraces() throws {
        let (full, aggregated) = try traces()
        for extra in [[], ["--at", "3"], ["--sample", "alloc_space"], ["--sample", "alloc_objects", "--at", "done"]] {
            let a = try HeapGenCLI.succeed(["export", full, "--format", "collapsed"] + extra).stdoutText
            let b = try HeapGenCLI.succeed(["export", aggregated, "--format", "collapsed"] + extra).stdoutText
            XCTAssertEqual(a, b, "\(extra)")
            XCTAssertFalse(b.isEmpty)
        }
    }

    /// A forked child's trace starts with the blocks it inherited (written as events in an
    /// aggregated trace too, then freed or kept): its report is the full trace's, as is the
    /// parent's.
    func testForkedChildAndParentReportAsTheFullTraces() throws {
        let recording = (DiffExportFixture.directory as NSString)
            .appendingPathComponent("../../Recording/Fixtures")
        let program = try FixtureCompiler.build("daemon.c", in: (recording as NSString).standardizingPath)
        var reports: [[String]] = []
        for flags in [[], ["--aggregate"]] {
            let root = try HeapGenCLI.record(program, flags: flags)
            let directory = (root as NSString).deletingLastPathComponent
            let traces = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix("x.trace") }.sorted()
            XCTAssertEqual(traces.count, 2, "the parent's and the child's: \(traces)")
            reports.append(try traces.map { name in
                try text(try HeapGenCLI.json(["report", directory + "/" + name, "--format", "json"]))
            })
        }
        XCTAssertEqual(reports[0], reports[1])
        XCTAssertTrue(reports[1].joined().contains("make_session"), reports[1].joined())
    }

    /// `dump` needs the individual records; the scans need blocks at real addresses.
    func testWhatNeedsIndividualBlocksIsRefused() throws {
        let (_, aggregated) = try traces()
        let dump = try HeapGenCLI.run(["dump", aggregated])
        XCTAssertEqual(dump.status, 64, dump.transcript)
        XCTAssertTrue(dump.stdout.isEmpty, dump.transcript)
        XCTAssertEqual(dump.stderrText.split(separator: "\n").count, 1, dump.transcript)
        XCTAssertTrue(dump.stderrText.contains("an aggregated trace (record --aggregate)"), dump.transcript)

        let program = try DiffExportFixture.c(Self.source)
        for (command, flag) in [("record", "--leaks"), ("record", "--retention"), ("run", "--retention-at=cycle")] {
            let result = try HeapGenCLI.run([command, "--aggregate", flag, "--", program])
            XCTAssertEqual(result.status, 64, result.transcript)
            XCTAssertTrue(result.stderrText.contains("--aggregate cannot be combined with \(flag.split(separator: "=")[0])"),
                          result.transcript)
        }
    }
}
