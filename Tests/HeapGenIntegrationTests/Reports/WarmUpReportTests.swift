// --warm-up and --tolerate on one recorded trace (9 cycles):
//   early_growth  grows in cycles 1 and 2 only
//   one_miss      grows in every cycle but 5
//   two_misses    grows in every cycle but 4 and 6

import Foundation
import HeapGenTestSupport
import XCTest

final class WarmUpReportTests: XCTestCase {
    func testWarmUpAndToleratedMisses() throws {
        let n = 9
        let fixture = try ReportFixture.c("warmup.c")
        let run = try HeapGenCLI.runJSON(fixture, ["\(n)"])

        // Default: warm-up 1, 1 tolerated miss.
        let d = run.report
        XCTAssertEqual(d.cycles, n, "\(d)")
        XCTAssertEqual(d.judgedCycles, n - 1, "\(d)")
        let early = d.findings(function: "early_growth")
        XCTAssertTrue(early.allSatisfy { $0.kind != "abandoned" }, "grows in cycles 1-2 only, flat after: not abandoned\n\(d.findingsSummary)")
        for f in early {
            XCTAssertEqual(f.kind, "cache", f.summary)
            XCTAssertEqual(f.objectsPerCycle, [2, 2] + Array(repeating: 0, count: n - 2), f.summary)
            XCTAssertEqual(f.cyclesWithGrowth, 1, f.summary)
        }
        let one = d.findings(function: "one_miss")
        XCTAssertEqual(one.map(\.kind), ["abandoned"], "one miss is tolerated:\n\(d.findingsSummary)")
        if let f = one.first {
            XCTAssertEqual(f.objectsPerCycle, (1...n).map { $0 == 5 ? 0 : 1 }, f.summary)
            XCTAssertEqual(f.cycles, n - 1, f.summary)
            XCTAssertEqual(f.cyclesWithGrowth, n - 2, f.summary)
        }
        let two = d.findings(function: "two_misses")
        XCTAssertTrue(two.allSatisfy { $0.kind != "abandoned" }, "two misses are not tolerated:\n\(d.findingsSummary)")
        XCTAssertTrue(two.allSatisfy { $0.kind != "cache" }, "still growing at the end: not a cache\n\(d.findingsSummary)")

        // Warm-up 2: early_growth's growth is all in the warm-up: a cache.
        let w2 = try HeapGenCLI.report(run.trace, flags: ["--warm-up", "2"])
        XCTAssertEqual(jsonInt(w2.options["warmUp"]), 2, "\(w2)")
        XCTAssertEqual(w2.judgedCycles, n - 2, "\(w2)")
        let early2 = w2.findings(function: "early_growth")
        XCTAssertEqual(early2.map(\.kind), ["cache"], "warm-up 2:\n\(w2.findingsSummary)")
        if let f = early2.first {
            XCTAssertEqual(f.cyclesWithGrowth, 0, f.summary)
            XCTAssertEqual(f.cycles, n - 2, f.summary)
            XCTAssertEqual(f.objectsPerCycle, [2, 2] + Array(repeating: 0, count: n - 2), f.summary)
        }
        let one2 = w2.findings(function: "one_miss")
        XCTAssertEqual(one2.map(\.kind), ["abandoned"], "warm-up 2:\n\(w2.findingsSummary)")
        XCTAssertEqual(one2.first?.cyclesWithGrowth, n - 3, "warm-up 2:\n\(w2.findingsSummary)")
        XCTAssertTrue(w2.findings(function: "two_misses").allSatisfy { $0.kind != "abandoned" }, "warm-up 2:\n\(w2.findingsSummary)")

        // --tolerate 0: one miss is too many; --tolerate 2: two misses are fine.
        let t0 = try HeapGenCLI.report(run.trace, flags: ["--tolerate", "0"])
        XCTAssertEqual(jsonInt(t0.options["toleratedMisses"]), 0, "\(t0)")
        XCTAssertTrue(t0.findings(function: "one_miss").allSatisfy { $0.kind != "abandoned" }, "--tolerate 0:\n\(t0.findingsSummary)")
        let t2 = try HeapGenCLI.report(run.trace, flags: ["--tolerate", "2"])
        XCTAssertEqual(jsonInt(t2.options["toleratedMisses"]), 2, "\(t2)")
        XCTAssertEqual(t2.findings(function: "two_misses").map(\.kind), ["abandoned"], "--tolerate 2:\n\(t2.findingsSummary)")
        XCTAssertEqual(t2.findings(function: "two_misses").first?.cyclesWithGrowth, n - 3, "--tolerate 2:\n\(t2.findingsSummary)")
        XCTAssertEqual(t2.findings(function: "one_miss").map(\.kind), ["abandoned"], "--tolerate 2:\n\(t2.findingsSummary)")
    }

    func testTooFewCyclesAfterTheWarmUpGiveNoGrowthFindingsAndANote() throws {
        let fixture = try ReportFixture.c("warmup.c")
        let trace = try HeapGenCLI.record(fixture, ["9"])
        let r = try HeapGenCLI.report(trace, flags: ["--warm-up", "8"])
        XCTAssertEqual(r.cycles, 9, "\(r)")
        XCTAssertEqual(r.judgedCycles, 1, "\(r)")
        XCTAssertTrue(r.findings.isEmpty, "1 judged cycle: nothing can be judged:\n\(r.findingsSummary)")
        XCTAssertFalse(r.notes.isEmpty, "a note should say why there are no findings: \(r)")
        let text = try HeapGenCLI.run(["report", trace, "--warm-up", "8"])
        XCTAssertEqual(text.status, 0, text.transcript)
        XCTAssertFalse(text.stdoutText.lowercased().contains("no growth"),
                       "with nothing judged the text must not claim there was no growth:\n\(text.transcript)")
    }

    func testBadWarmUpIsAUsageError() throws {
        let fixture = try ReportFixture.c("warmup.c")
        let trace = try HeapGenCLI.record(fixture, ["4"])
        for flags in [["--warm-up", "-1"], ["--warm-up", "x"], ["--tolerate", "-2"]] {
            let r = try HeapGenCLI.run(["report", trace] + flags)
            XCTAssertEqual(r.status, 64, "usage error expected for \(flags):\n\(r.transcript)")
            XCTAssertFalse(r.stderrText.contains("Fatal error"), r.transcript)
        }
    }
}
