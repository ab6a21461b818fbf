// The generation table against a program whose allocations are known exactly:
// cycle k allocates k+2 blocks of 100 bytes and frees the first of them.

import Foundation
import HeapGenTestSupport
import XCTest

final class GenerationTableReportTests: XCTestCase {
    func testGenerationNumbersAreExact() throws {
        let n = 8
        let fixture = try ReportFixture.c("gentable.c")
        let run = try HeapGenCLI.runJSON(fixture, ["\(n)"])
        let r = run.report
        let gens = r.generations

        XCTAssertEqual(r.cycles, n, "\(r)")
        XCTAssertEqual(r.judgedCycles, n - 1, "\(r)")
        // setup, n cycles, tail
        XCTAssertEqual(gens.count, n + 2, "generations: \(gens.map(\.json))")
        guard gens.count == n + 2 else { return }

        XCTAssertEqual(gens.map(\.index), Array(0...(n + 1)), "indices")
        XCTAssertEqual(gens[0].label, "heapgen.start")
        XCTAssertEqual(gens[1].label, "warm-up 1")
        for k in 2...n { XCTAssertEqual(gens[k].label, "cycle", "generation \(k)") }
        XCTAssertNil(gens[n + 1].label, "the tail has a null label: \(gens[n + 1].json)")
        XCTAssertTrue(gens[n + 1].json["label"] is NSNull, "label must be present and null for the tail: \(gens[n + 1].json)")

        // Setup: the program allocates nothing before its first mark (no stdio).
        let setup = gens[0]
        XCTAssertEqual(setup.allocations, 0, "setup: \(setup.json)")
        XCTAssertEqual(setup.frees, 0, "setup: \(setup.json)")
        XCTAssertEqual(setup.liveObjects, 0, "setup: \(setup.json)")

        var live = 0
        for k in 1...n {
            let g = gens[k]
            live += k + 1
            XCTAssertEqual(g.allocations, k + 2, "cycle \(k): \(g.json)")
            XCTAssertEqual(g.frees, 1, "cycle \(k): \(g.json)")
            XCTAssertEqual(g.allocatedBytes, 100 * (k + 2), "cycle \(k): \(g.json)")
            XCTAssertEqual(g.liveObjects, live, "cycle \(k): \(g.json)")
            XCTAssertEqual(g.liveBytes, 100 * live, "cycle \(k): \(g.json)")
            XCTAssertEqual(g.persistentObjects, k + 1, "cycle \(k): \(g.json)")
            XCTAssertEqual(g.persistentBytes, 100 * (k + 1), "cycle \(k): \(g.json)")
        }
        let tail = gens[n + 1]
        XCTAssertEqual(tail.allocations, 0, "tail: \(tail.json)")
        XCTAssertEqual(tail.frees, 0, "tail: \(tail.json)")
        XCTAssertEqual(tail.persistentObjects, 0, "tail: \(tail.json)")
        XCTAssertEqual(tail.liveObjects, live, "tail: \(tail.json)")

        // Totals.
        let calls = (1...n).map { $0 + 2 }.reduce(0, +)          // 52 for n = 8
        XCTAssertEqual(r.total("allocations"), calls, "\(r)")
        XCTAssertEqual(r.total("frees"), n, "\(r)")
        XCTAssertEqual(r.total("allocatedBytes"), 100 * calls, "\(r)")
        XCTAssertEqual(r.total("liveAtExitObjects"), live, "\(r)")
        XCTAssertEqual(r.total("liveAtExitBytes"), 100 * live, "\(r)")
        // Highest live heap: in the last cycle, before its first block is freed.
        XCTAssertEqual(r.total("peakBytes"), 100 * (live + 1), "\(r)")
        XCTAssertEqual(r.total("peakGeneration"), n, "\(r)")
        XCTAssertEqual(r.total("untrackedFrees"), 0, "\(r)")
        XCTAssertEqual(r.total("lostEvents"), 0, "\(r)")

        let liveAtExit = r.json["liveAtExit"] as? [String: Any] ?? [:]
        XCTAssertEqual(jsonInt(liveAtExit["objects"]), live, "liveAtExit: \(liveAtExit)")
        XCTAssertEqual(jsonInt(liveAtExit["bytes"]), 100 * live, "liveAtExit: \(liveAtExit)")

        // `heapgen info` on the kept trace counts the same calls.
        let info = try HeapGenCLI.info(run.trace)
        XCTAssertEqual(jsonInt(info["allocationCount"]), calls, "heapgen info: \(info)")

        // The growing site itself: k+1 more live blocks every cycle.
        let sites = r.findings(function: "run_cycle")
        XCTAssertEqual(sites.count, 1, r.findingsSummary)
        if let f = sites.first {
            XCTAssertEqual(f.kind, "abandoned", f.summary)
            XCTAssertEqual(f.objectsPerCycle, (1...n).map { $0 + 1 }, f.summary)
            XCTAssertEqual(f.bytesPerCycle, (1...n).map { 100 * ($0 + 1) }, f.summary)
            XCTAssertEqual(f.cyclesWithGrowth, n - 1, f.summary)
            XCTAssertEqual(f.survivingObjects, (2...n).map { $0 + 1 }.reduce(0, +), f.summary)
        }
    }

    func testTotalAllocationsMatchValgrind() throws {
        let n = 8
        let fixture = try ReportFixture.c("gentable.c")
        let run = try HeapGenCLI.runJSON(fixture, ["\(n)"])
        let valgrind = try tool("valgrind", hint: "apt-get install -y valgrind")
        let v = try runProcess(valgrind, ["--run-libc-freeres=no", "--leak-check=no", fixture, "\(n)"], timeout: 300)
        XCTAssertEqual(v.status, 0, v.transcript)
        // ==123==   total heap usage: 52 allocs, 8 frees, 5,200 bytes allocated
        guard let line = v.stderrLines.first(where: { $0.contains("total heap usage:") }) else {
            return XCTFail("no 'total heap usage' in valgrind's output:\n\(v.transcript)")
        }
        let words = line.components(separatedBy: "total heap usage:")[1]
            .replacingOccurrences(of: ",", with: "").split(separator: " ")
        let allocs = Int(words[0]), frees = Int(words[2]), bytes = Int(words[4])
        XCTAssertEqual(run.report.total("allocations"), allocs, "valgrind: \(line)\n\(run.report)")
        XCTAssertEqual(run.report.total("frees"), frees, "valgrind: \(line)\n\(run.report)")
        XCTAssertEqual(run.report.total("allocatedBytes"), bytes, "valgrind: \(line)\n\(run.report)")
    }
}
