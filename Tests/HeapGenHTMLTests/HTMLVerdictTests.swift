// The page's one-line verdict claims only what was judged: a clean bill needs two judged
// cycles for abandoned memory and a leak scan for leaks.

import HeapGenHTML
import HeapGenReport
import XCTest

final class HTMLVerdictTests: XCTestCase {
    private func verdict(cycles: Int, judged: Int, leakScanned: Bool) -> String? {
        let generations = (0...cycles).map {
            Report.Generation(index: $0, label: $0 == 0 ? "heapgen.start" : "cycle", allocations: 1, frees: 1, allocatedBytes: 8,
                              liveObjects: 0, liveBytes: 0, persistentObjects: 0, persistentBytes: 0)
        }
        let report = Report(trace: "/tmp/x.trace", program: .init(path: "/bin/app", args: ["app"], pid: 1, exitStatus: 0, signal: nil),
                            options: .init(warmUp: cycles - judged, toleratedMisses: 1),
                            totals: .init(allocations: 10, frees: 10, leakScanned: leakScanned),
                            cycles: cycles, judgedCycles: judged, generations: generations, findings: [],
                            liveAtExit: .init(objects: 0, bytes: 0, sites: []))
        let html = HTMLReport.render(report)
        guard let start = html.range(of: "<p class=\"verdict"), let end = html[start.lowerBound...].range(of: "</p>") else { return nil }
        return String(html[start.lowerBound..<end.upperBound])
    }

    func testACleanBillOnlyForWhatWasJudged() {
        XCTAssertEqual(verdict(cycles: 8, judged: 7, leakScanned: true),
                       "<p class=\"verdict ok\">No abandoned or leaked memory in 7 judged cycles.</p>")
        XCTAssertEqual(verdict(cycles: 8, judged: 7, leakScanned: false),
                       "<p class=\"verdict ok\">No abandoned memory in 7 judged cycles (leaks not judged: record with --leaks).</p>")
        // No marks (nginx recorded as it is, before): the page said "No abandoned or leaked
        // memory in 0 judged cycles", in green.
        XCTAssertEqual(verdict(cycles: 0, judged: 0, leakScanned: false),
                       "<p class=\"verdict none\">Nothing judged: abandoned memory needs 2 judged cycles, this run has 0 "
                       + "(mark a generation per cycle), and leaks need --leaks.</p>")
        XCTAssertEqual(verdict(cycles: 2, judged: 1, leakScanned: true),
                       "<p class=\"verdict none\">No leaked memory at exit: abandoned memory needs 2 judged cycles, this run has 1 "
                       + "(mark a generation per cycle).</p>")
    }
}
