// Large reports stay small: a synthetic report with the shape of a big trace (thousands
// of marks, tens of thousands of findings with deep stacks) renders to a page under
// 2 MB that Chromium has ready in under a second.

import Foundation
import HeapGenAnalysis
import HeapGenHTML
import HeapGenReport
import HeapGenTestSupport
import XCTest

final class HTMLScaleTests: XCTestCase {
    /// 10,000 generations, 2,000 findings (abandoned, leaked, caches) of 30 frames over
    /// 9,998 cycles (sparse per-cycle series), 100 live-at-exit sites.
    static func bigReport(findings count: Int = 2_000) -> Report {
        let cycles = 9_998
        func frames(_ site: Int) -> [Report.Frame] {
            (0..<30).map { k in
                Report.Frame(function: "Big.Module\(site % 50).function\(k)(site: Swift.Int) -> ()", shortFunction: "function\(k)_\(site % 97)(site:)",
                             file: "/src/Big/Sources/File\(k).swift", line: 10 + k, column: 5,
                             module: "/src/.build/debug/Big", address: UInt64(0x5555_0000 + site * 64 + k), inlined: k % 7 == 3)
            }
        }
        var findings: [Report.Finding] = []
        for i in 0..<count {
            let kind: Report.Finding.Kind = i % 10 == 0 ? .leaked : (i % 3 == 0 ? .cache : .abandoned)
            var per = [Int](repeating: 0, count: cycles)
            if kind == .cache { per[0] = 4096 } else { for c in stride(from: i % 5, to: cycles, by: 5) { per[c] = 32 } }
            let series = CycleSeries(per)
            findings.append(Report.Finding(kind: kind, typeName: i % 2 == 0 ? "Big.Type\(i)" : nil, frames: frames(i), userFrame: 0,
                                           cycles: cycles - 1, cyclesWithGrowth: cycles / 5,
                                           objectsSeries: CycleSeries(per.map { $0 == 0 ? 0 : 1 }), bytesSeries: series,
                                           averageBytesPerCycle: kind == .cache ? 0 : 6,
                                           survivingObjects: 2_000, survivingBytes: 64_000))
        }
        let generations = (0..<(cycles + 2)).map { g in
            Report.Generation(index: g, label: g == cycles + 1 ? nil : (g == 0 ? "heapgen.start" : "cycle \(g)"),
                              allocations: 1_000, frees: 990, allocatedBytes: 64_000, liveObjects: UInt64(10 * g),
                              liveBytes: UInt64(640 * g + (g % 100 == 0 ? 100_000 : 0)), persistentObjects: 10, persistentBytes: 640)
        }
        let live = (0..<100).map { Report.Site(typeName: nil, objects: 10, bytes: 6_400, frames: frames($0)) }
        return Report(trace: "/tmp/big.trace", program: .init(path: "/src/.build/debug/Big", args: ["Big"], pid: 42, exitStatus: 0, signal: nil),
                      options: .init(warmUp: 1, toleratedMisses: 1),
                      totals: .init(allocations: 10_000_000, frees: 9_900_000, allocatedBytes: 640_000_000, peakBytes: 6_500_000,
                                    peakGeneration: 9_900, liveAtExitObjects: 100_000, liveAtExitBytes: 6_400_000),
                      cycles: cycles, judgedCycles: cycles - 1, generations: generations, findings: findings,
                      liveAtExit: .init(objects: 100_000, bytes: 6_400_000, sites: live))
    }

    func testBigReportStaysSmallAndOpensFast() throws {
        let report = Self.bigReport()
        let start = Date()
        let html = HTMLReport.render(report)
        let seconds = Date().timeIntervalSince(start)
        let bytes = html.utf8.count
        XCTAssertLessThan(bytes, 2_000_000, "page size \(bytes)")
        XCTAssertLessThan(seconds, 20, "render time (debug build)")
        XCTAssertEqual(html.components(separatedBy: "<article class=\"finding").count - 1, HTMLReport.maxFindings)
        XCTAssertTrue(html.contains("\(2_000 - HTMLReport.maxFindings) more findings are not drawn here"))
        XCTAssertTrue(html.contains("… \(10_000 - HTMLReport.maxTableRows) generations not shown …"))

        let file = try TestPaths.freshDirectory("html-big") + "/big.html"
        try html.write(toFile: file, atomically: true, encoding: .utf8)
        if let keep = ProcessInfo.processInfo.environment["HEAPGEN_HTML_KEEP"] {   // to look at it
            try html.write(toFile: keep, atomically: true, encoding: .utf8)
        }
        let dom = try Browser.dom(file)
        let ready = DOM.captures(#"data-ready-ms="(\d+)""#, in: dom).first.flatMap(Int.init)
        XCTAssertNotNil(ready, "the script ran to its end")
        // Measured 0.8–1.4 s on 2 cores shared with a load average of 10–17 (the fixture pages
        // take 0.08 s there); the bound leaves room for such load, not for a slower page.
        XCTAssertLessThan(ready ?? .max, 3000, "ready in a few seconds even under load (page \(bytes) bytes)")
        // The chart still labels marks (thinned) and draws the peak.
        let chart = DOM.element(id: "staircase", tag: "svg", in: dom) ?? ""
        XCTAssertTrue(chart.contains(">heapgen.start</text>") && chart.contains("class=\"peak\""))
        print("big report: \(bytes) bytes, rendered in \(String(format: "%.2f", seconds)) s, ready in \(ready ?? -1) ms")
    }

    func testEscapingAndNoExternalReferences() throws {
        var report = Self.bigReport(findings: 3)
        report.findings[0].typeName = "Evil<\"x\">&'</script><img src=https://example.com/x.png>"
        report.generations[1].label = "</text><script src=\"http://example.com/a.js\"></script>"
        report.notes = ["<a href=\"https://example.com\">x</a>"]
        let html = HTMLReport.render(report)
        XCTAssertEqual(DOM.externalReferences(html), [], "hostile names are escaped, never markup")
        XCTAssertFalse(html.contains("</script><img"))
        XCTAssertTrue(html.contains("Evil&lt;&quot;x&quot;&gt;&amp;&#39;&lt;/script&gt;"))
    }
}
