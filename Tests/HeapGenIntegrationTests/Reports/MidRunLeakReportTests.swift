// A server-like fixture whose leak starts mid-run (midrun.c): 16 batches, 4 request
// buffers freed per batch, and from batch 9 on 3 session records of 200 bytes kept.

import Foundation
import HeapGenTestSupport
import XCTest

final class MidRunLeakReportTests: XCTestCase {
    func testLeakFromBatchNineIsAbandonedWithItsOnset() throws {
        let fixture = try ReportFixture.c("midrun.c")
        let run = try HeapGenCLI.runJSON(fixture, ["16", "9"])
        let r = run.report
        XCTAssertEqual(r.cycles, 16, "\(r)")
        XCTAssertEqual(r.judgedCycles, 15, "\(r)")
        XCTAssertEqual(r.findings.count, 1, r.findingsSummary)
        let f = try XCTUnwrap(r.findings(function: "keep_session").first, r.findingsSummary)
        XCTAssertEqual(f.kind, "abandoned", f.summary)
        XCTAssertEqual(jsonInt(f.json["onsetCycle"]), 9, f.summary)
        XCTAssertEqual(jsonInt(f.json["cyclesWithGrowthSinceOnset"]), 8, f.summary)
        XCTAssertEqual(f.objectsPerCycle, Array(repeating: 0, count: 8) + Array(repeating: 3, count: 8), f.summary)
        XCTAssertEqual(f.bytesPerCycle, Array(repeating: 0, count: 8) + Array(repeating: 600, count: 8), f.summary)
        XCTAssertEqual(f.cycles, 15, f.summary)
        XCTAssertEqual(f.cyclesWithGrowth, 8, f.summary)
        XCTAssertEqual(f.averageBytesPerCycle, 600, f.summary)
        XCTAssertEqual(f.survivingObjects, 24, f.summary)
        XCTAssertEqual(f.survivingBytes, 4_800, f.summary)
        XCTAssertTrue(f.json["scope"] is NSNull, f.summary)
        // The generation table: batches 9…16 each keep 600 bytes.
        for k in 9...16 {
            XCTAssertEqual(r.generations[safe: k]?.persistentBytes, 600, "batch \(k)")
            XCTAssertEqual(r.generations[safe: k]?.allocations, 7, "batch \(k): 4 requests + 3 sessions")
        }
        for k in 1...8 { XCTAssertEqual(r.generations[safe: k]?.persistentBytes, 0, "batch \(k)") }

        // The text says from which cycle, in words that match the numbers.
        let text = try HeapGenCLI.succeed(["report", run.trace]).stdout
        let out = String(decoding: text, as: UTF8.self)
        XCTAssertTrue(out.contains("Abandoned memory: 1 site grew in every cycle from some cycle on"), out)
        XCTAssertTrue(out.contains("since cycle 9: grew in 8 of 8 cycles (15 judged)"), out)
        XCTAssertTrue(out.contains("+3 objects / +600 B per cycle"), out)
        XCTAssertFalse(out.contains("No growth"), out)

        // The same program leaking from the start reads "every judged cycle", 15 of 15.
        let whole = try HeapGenCLI.runJSON(fixture, ["16", "1"])
        let g = try XCTUnwrap(whole.report.findings(function: "keep_session").first, whole.report.findingsSummary)
        XCTAssertTrue(g.json["onsetCycle"] is NSNull, g.summary)
        XCTAssertEqual(g.cyclesWithGrowth, 15, g.summary)
        let wholeText = String(decoding: try HeapGenCLI.succeed(["report", whole.trace]).stdout, as: UTF8.self)
        XCTAssertTrue(wholeText.contains("Abandoned memory: 1 site grew in every judged cycle"), wholeText)
        XCTAssertTrue(wholeText.contains("grew in 15 of 15 judged cycles"), wholeText)
    }

    /// `heapgen report --from/--to`: only the cycles between two marks are judged.
    func testReportWindowJudgesOnlyTheCyclesBetweenTwoMarks() throws {
        let fixture = try ReportFixture.c("midrun.c")
        let run = try HeapGenCLI.runJSON(fixture, ["16", "9"])

        // Marks 8…16: batches 9…16, all leaking: abandoned across the window, no onset.
        let late = try HeapGenCLI.report(run.trace, flags: ["--from", "8"])
        XCTAssertEqual(late.cycles, 8, "\(late)")
        XCTAssertEqual(late.judgedCycles, 7, "\(late)")
        let f = try XCTUnwrap(late.findings(function: "keep_session").first, late.findingsSummary)
        XCTAssertEqual(f.kind, "abandoned", f.summary)
        XCTAssertTrue(f.json["onsetCycle"] is NSNull, f.summary)
        XCTAssertEqual(f.objectsPerCycle, Array(repeating: 3, count: 8), f.summary)
        XCTAssertEqual(f.cycles, 7, f.summary)
        XCTAssertEqual(f.cyclesWithGrowth, 7, f.summary)

        // Marks 0…8 (by label, then position): the clean batches: nothing grew.
        let early = try HeapGenCLI.report(run.trace, flags: ["--from", "heapgen.start", "--to", "8"])
        XCTAssertEqual(early.cycles, 8, "\(early)")
        XCTAssertEqual(early.findings.count, 0, early.findingsSummary)
        let text = String(decoding: try HeapGenCLI.succeed(["report", run.trace, "--to", "8"]).stdout, as: UTF8.self)
        XCTAssertTrue(text.contains("No growth across 7 cycles."), text)
        XCTAssertTrue(text.contains("Judged only the cycles between ordinary marks 0 and 8 (8 cycles)"), text)

        // A label that matches no mark: one note, nothing judged, no failure.
        let none = try HeapGenCLI.report(run.trace, flags: ["--from", "no such mark"])
        XCTAssertEqual(none.findings.count, 0, none.findingsSummary)
        XCTAssertTrue(none.notes.contains { $0.contains("matches no ordinary marks") }, "\(none.notes)")
    }
}
