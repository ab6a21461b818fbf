// The in-test control channel under `heapgen record --aggregate`: the collector's own live
// tracking answers as without it; the trace gets counts, and no scan results.

import Foundation
import HeapGenTestSupport
import XCTest

final class AggregateControlTests: XCTestCase {
    private func answers(_ result: TextProcessResult) -> [String: [String: Any]] {
        var out: [String: [String: Any]] = [:]
        for line in result.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, let object = try? JSONSerialization.jsonObject(with: Data(parts[2].utf8)) else { continue }
            out[String(parts[0])] = object as? [String: Any]
        }
        return out
    }

    func testObjectQueriesAnswerAsWithoutAggregate() throws {
        let heapgen = try TestPaths.heapgen()
        let fixture = try Run.compileC("control.c")
        let trace = TestPaths.scratch + "/aggregate-objects.trace"
        let result = try Run.run(heapgen, ["record", "--aggregate", "--output", trace, "--", fixture, "objects"])
        XCTAssertEqual(result.status, 0, result.transcript)
        let a = answers(result)
        XCTAssertEqual(a["TRACK"]?["tracking"] as? Bool, true, result.transcript)
        XCTAssertEqual(a["LIVE"]?["live"] as? Bool, true, result.transcript)
        XCTAssertEqual(a["LIVE"]?["size"] as? Int, 1234)
        XCTAssertEqual((a["LIVE"]?["frames"] as? [[String: Any]])?.first?["function"] as? String, "make_block")
        XCTAssertEqual(a["FREED"]?["live"] as? Bool, false, result.transcript)
        XCTAssertEqual(a["GEN"]?["generation"] as? Int, 1, result.transcript)
        XCTAssertEqual(a["GEN"]?["previousMark"] as? String, "first")
        XCTAssertEqual(a["STATUS"]?["rejected"] as? Int, 0)
        // The trace is aggregated and reads back.
        let info = try HeapGenCLI.info(trace)
        XCTAssertEqual(info["aggregated"] as? Bool, true, "\(info)")
        XCTAssertEqual(try HeapGenCLI.run(["report", trace]).status, 0)
    }

    /// Retention questions are answered from the collector's live tracking (not the trace):
    /// the path is the one the full recording gives; the trace gets no graph or leak list.
    func testRetentionIsAnsweredAndNothingOfTheScanGoesToTheTrace() throws {
        let heapgen = try TestPaths.heapgen()
        let fixture = try Run.compileC("control.c")
        let trace = TestPaths.scratch + "/aggregate-retention.trace"
        let result = try Run.run(heapgen, ["record", "--aggregate", "--output", trace, "--", fixture, "retention"],
                                 timeout: 120)
        XCTAssertEqual(result.status, 0, result.transcript)
        let held = try XCTUnwrap(answers(result)["HELD"], result.transcript)
        XCTAssertEqual(held["reachable"] as? Bool, true, result.transcript)
        let path = try XCTUnwrap(held["path"] as? [[String: Any]], result.transcript)
        XCTAssertEqual(path.count, 3, result.transcript)
        XCTAssertEqual(path[1]["field"] as? String, "+0x8", result.transcript)
        let report = try HeapGenCLI.json(["report", trace, "--format", "json"])
        XCTAssertFalse("\(report)".contains("retention\" = {"), "no graph in an aggregated trace")
        XCTAssertEqual(try HeapGenCLI.info(trace)["aggregated"] as? Bool, true)
    }
}
