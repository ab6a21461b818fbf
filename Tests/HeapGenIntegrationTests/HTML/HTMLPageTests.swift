// The HTML report rendered in headless Chromium, one test per kind of fixture: a
// staircase (abandoned), a plateau (cache), a clean run, a leak (--leaks), and a diff.
// Each records a real fixture under the shim, writes the page with heapgen, and checks
// the DOM after the page's script ran against the JSON report of the same trace, that
// nothing is loaded from the network, and that a screenshot is not blank.

import Foundation
import HeapGenTestSupport
import XCTest

final class HTMLPageTests: XCTestCase {
    /// Fixtures of the other test targets, reused.
    static let reportFixtures = TestPaths.repoRoot + "/Tests/HeapGenIntegrationTests/Reports/Fixtures"
    static let gateFixtures = TestPaths.repoRoot + "/Tests/HeapGenGateTests/Fixtures"
    static let recordFixtures = TestPaths.repoRoot + "/Tests/HeapGenIntegrationTests/Recording/Fixtures"

    /// A recorded trace, its JSON report, and its page (`heapgen report --format html`).
    struct Page {
        var trace: String
        var json: [String: Any]
        var html: String
        var file: String
        var dom: String

        var findings: [[String: Any]] { json["findings"] as? [[String: Any]] ?? [] }
        var labels: [String] { (json["generations"] as? [[String: Any]] ?? []).compactMap { $0["label"] as? String } }

        /// The function a finding is shown under: its user frame's short name.
        static func function(_ f: [String: Any]) -> String {
            let frames = f["frames"] as? [[String: Any]] ?? []
            let user = (f["userFrame"] as? Int) ?? 0
            let frame = user < frames.count ? frames[user] : [:]
            return frame["shortFunction"] as? String ?? frame["function"] as? String ?? "?"
        }
    }

    /// Records `program ARGS` (with `flags`), then writes its JSON report and its HTML page.
    func page(_ program: String, _ arguments: [String], flags: [String] = []) throws -> Page {
        let trace = try HeapGenCLI.record(program, arguments, flags: flags)
        let json = try HeapGenCLI.json(["report", trace, "--format", "json"])
        let file = (trace as NSString).deletingLastPathComponent + "/report.html"
        let r = try HeapGenCLI.run(["report", trace, "--format", "html", "--output", file])
        XCTAssertEqual(r.status, 0, r.transcript)
        XCTAssertEqual(r.stdout.count, 0, "--output: nothing on stdout:\n\(r.transcript)")
        let html = try String(contentsOfFile: file, encoding: .utf8)
        return Page(trace: trace, json: json, html: html, file: file, dom: try Browser.dom(file))
    }

    /// What every page must have: self-contained, the script ran, the chart with every
    /// mark's label, each finding's function and kind, and a screenshot that is not blank.
    func checkCommon(_ p: Page, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(DOM.externalReferences(p.html), [], "the file loads something from the network", file: file, line: line)
        XCTAssertEqual(DOM.externalReferences(p.dom), [], "the DOM loads something from the network", file: file, line: line)
        XCTAssertFalse(p.html.contains("<link"), "no stylesheet links", file: file, line: line)
        XCTAssertTrue(p.html.hasPrefix("<!DOCTYPE html>"), file: file, line: line)
        XCTAssertTrue(p.dom.contains("<body class=\"js\""), "the page's script ran", file: file, line: line)
        let ready = DOM.captures(#"data-ready-ms="(\d+)""#, in: p.dom).first.flatMap(Int.init)
        XCTAssertNotNil(ready, "the script reached its end", file: file, line: line)
        XCTAssertLessThan(ready ?? .max, 1000, "ready in under a second", file: file, line: line)

        // The chart: one labelled mark per generation that has a label, in order.
        guard let chart = DOM.element(id: "staircase", tag: "svg", in: p.dom) else {
            return XCTFail("no staircase chart in the DOM", file: file, line: line)
        }
        let drawn = DOM.captures(#"<text class="mark-label" data-label="([^"]*)""#, in: chart).map(DOM.unescape)
        XCTAssertEqual(drawn, p.labels, "every mark drawn and labelled", file: file, line: line)
        XCTAssertTrue(chart.contains("class=\"series series-bytes\"") && chart.contains("class=\"series series-objects\""),
                      "bytes and objects series", file: file, line: line)

        // Findings: the same kinds and functions as the JSON, in the same order.
        let articles = DOM.captures(#"<article class="finding kind-\w+" id="finding-\d+" data-kind="(\w+)" data-module="[^"]*" data-type="[^"]*" data-function="([^"]*)""#,
                                    in: p.dom, group: 0)
        let shown = articles.map { a -> String in
            let kind = DOM.captures(#"data-kind="(\w+)""#, in: a).first ?? "?"
            let fn = DOM.unescape(DOM.captures(#"data-function="([^"]*)""#, in: a).first ?? "?")
            return "\(kind) \(fn)"
        }
        let expected = p.findings.map { "\($0["kind"] as? String ?? "?") \(Page.function($0))" }
        XCTAssertEqual(shown, expected, "each finding's kind and function", file: file, line: line)

        // Rendered: a screenshot with a chart is anything but one colour.
        let shot = try Browser.pixels(try Browser.screenshot(p.file))
        XCTAssertEqual(shot.width, 1200, file: file, line: line)
        XCTAssertGreaterThan(shot.colors, 50, "a screenshot of a report has many colours", file: file, line: line)
        XCTAssertLessThan(shot.dominantShare, 0.9, "the screenshot is mostly one colour", file: file, line: line)
    }

    /// gate.c leaky: leak_session keeps 3 × 64 B every cycle — a staircase.
    func testStaircase() throws {
        let exe = try FixtureCompiler.build("gate.c", in: Self.gateFixtures)
        let p = try page(exe, ["leaky"])
        try checkCommon(p)
        XCTAssertEqual(p.labels, ["heapgen.start", "warm-up 1"] + Array(repeating: "cycle", count: 7))
        XCTAssertEqual(p.findings.map { $0["kind"] as? String }, ["abandoned"])
        XCTAssertEqual(p.findings.map(Page.function), ["leak_session"])
        // The finding's numbers, its sparkline and its stack with file:line.
        XCTAssertTrue(p.dom.contains("<b>+192 B</b> per cycle"), "bytes per cycle")
        XCTAssertTrue(p.dom.contains("grew in <b>7 of 7</b> judged cycles"))
        XCTAssertTrue(p.dom.contains("<b>21 objects</b>"), "7 judged cycles × 3 blocks left behind")
        XCTAssertTrue(p.dom.contains("class=\"spark spark-abandoned\""))
        let line = try FixtureCompiler.lines("gate.c", in: Self.gateFixtures, containing: "malloc(sizeof *n)")
        XCTAssertEqual(line.count, 1)
        XCTAssertTrue(p.dom.contains("Fixtures/gate.c:\(line[0])"), "the stack has file:line of the malloc call")
        // The finding links to its user frame, which exists.
        let target = DOM.captures(##"<a class="fn mono" href="#([^"]+)">leak_session</a>"##, in: p.dom).first
        XCTAssertNotNil(target)
        XCTAssertTrue(p.dom.contains("<li id=\"\(target ?? "-")\""), "the link's frame exists")
        // Warm-up shaded, judged window marked, peak drawn.
        XCTAssertTrue(p.dom.contains("class=\"warmup\"") && p.dom.contains("judged cycles (7)") && p.dom.contains("class=\"peak\""))
        // The icicle was rebuilt by the script (no static svg left) and names the function.
        guard let icicle = DOM.element(id: "flame", tag: "section", in: p.dom) else { return XCTFail("no icicle section") }
        XCTAssertFalse(icicle.contains("id=\"flame-svg\""), "the script replaced the static icicle")
        XCTAssertTrue(icicle.contains(">leak_session<"), "the icicle names leak_session")
        XCTAssertTrue(icicle.contains("leak_session (gate.c:\(line[0])): 1.3 kB, 100.0%"), "the icicle's numbers")
        // The generation table: a row per generation.
        let rows = DOM.captures(#"<tr[^>]*><td data-v="(\d+)">\d+</td><td class="l mono">"#, in: p.dom)
        XCTAssertEqual(rows, (0..<10).map(String.init))
        // A click on "main" zooms: main and leak_session fill the width, the ancestors are ghosts.
        let zoomed = (p.file as NSString).deletingLastPathComponent + "/zoomed.html"
        let click = "<script>var g=[].find.call(document.querySelectorAll('#flame svg.icicle g.node'),function(g){var t=g.querySelector('text');return t&&t.textContent==='main'});g.dispatchEvent(new MouseEvent('click'));</script></body>"
        try p.html.replacingOccurrences(of: "</body>", with: click).write(toFile: zoomed, atomically: true, encoding: .utf8)
        let zoomDOM = DOM.element(id: "flame", tag: "section", in: try Browser.dom(zoomed)) ?? ""
        XCTAssertTrue(zoomDOM.contains(#"<rect x="0" y="80" width="979.5" height="19" class="h"#), "main fills the width:\n\(zoomDOM)")
        XCTAssertTrue(zoomDOM.contains(#"<rect x="0" y="0" width="979.5" height="19" class="root ghost">"#), "the root is a ghost")
        XCTAssertTrue(zoomDOM.contains("(click the top bar to zoom out)"))
        // Without JavaScript the static icicle is in the file.
        XCTAssertTrue(p.html.contains("id=\"flame-svg\"") && p.html.contains(">leak_session<"))
    }

    /// sites.c: cache_lookup fills 16 × 48 B in the first cycle, then stays flat — a plateau.
    func testPlateau() throws {
        let exe = try FixtureCompiler.build("sites.c", in: Self.reportFixtures)
        let p = try page(exe, ["leaky", "8"])
        try checkCommon(p)
        XCTAssertEqual(p.findings.map { "\($0["kind"] as? String ?? "?") \(Page.function($0))" },
                       ["abandoned leak_session", "abandoned grow_log", "cache cache_lookup"])
        guard let cache = DOM.captures(#"(<article class="finding kind-cache".*?</article>)"#, in: p.dom).first else {
            return XCTFail("no cache finding")
        }
        XCTAssertTrue(cache.contains("Filled <b>768 B</b> (16 objects) early, then flat"), cache)
        XCTAssertTrue(cache.contains("class=\"spark spark-cache\""))
        // The sparkline's running total is a plateau: after the first cycle every step is level.
        guard let d = DOM.captures(#"<path class="run" d="([^"]+)""#, in: cache).first else { return XCTFail("no running line") }
        XCTAssertEqual(DOM.captures(#"(V)"#, in: d).count, 1, "one rise (cycle 1), then flat: \(d)")
        XCTAssertTrue(p.dom.contains("<p class=\"verdict bad\">2 abandoned sites (+292 B per cycle) · 1 cache</p>"))
    }

    /// gate.c clean: everything allocated is freed again.
    func testClean() throws {
        let exe = try FixtureCompiler.build("gate.c", in: Self.gateFixtures)
        let p = try page(exe, ["clean"])
        try checkCommon(p)
        XCTAssertEqual(p.findings.count, 0)
        XCTAssertTrue(p.dom.contains("<p class=\"verdict ok\">No abandoned memory in 7 judged cycles (leaks not judged: record with --leaks)"), p.dom)
        XCTAssertTrue(p.dom.contains("No site grew in every judged cycle, leaked, or filled a cache."))
        XCTAssertTrue(p.dom.contains("Nothing to show: no bytes left behind."))
    }

    /// leaks.c with --leaks: lose_block's blocks are unreachable (leaked), keep_node's list abandoned.
    func testLeaked() throws {
        let exe = try FixtureCompiler.build("leaks.c", in: Self.recordFixtures)
        let p = try page(exe, [], flags: ["--leaks"])
        try checkCommon(p)
        XCTAssertEqual(Set(p.findings.map { "\($0["kind"] as? String ?? "?") \(Page.function($0))" }),
                       ["abandoned keep_node", "leaked lose_block"])
        guard let leaked = DOM.captures(#"(<article class="finding kind-leaked".*?</article>)"#, in: p.dom).first else {
            return XCTFail("no leaked finding")
        }
        XCTAssertTrue(leaked.contains("<b>+64 B</b> per cycle"), leaked)
        XCTAssertTrue(leaked.contains("unreachable at exit."), leaked)
        XCTAssertTrue(leaked.contains("<span class=\"badge leaked\">leaked</span>"))
        XCTAssertTrue(p.dom.contains("leak scan: 6 unreachable blocks (384 B) of 12 live at exit."), "notes are shown")
    }

    /// A Swift program: the findings carry Swift types, filterable by type, shown with their stacks.
    func testSwiftTypes() throws {
        let exe = try FixtureCompiler.swiftWithHeapGen("SwiftTypes", in: Self.gateFixtures, module: "GateFixture")
        let p = try page(exe, [])
        try checkCommon(p)
        let types = DOM.captures(#"<article class="finding kind-abandoned" id="finding-\d+" data-kind="abandoned" data-module="[^"]*" data-type="([^"]*)""#, in: p.dom)
        XCTAssertEqual(Set(types), ["GateFixture.Session", "GateFixture.Token"], p.findings.map(Page.function).description)
        XCTAssertTrue(p.dom.contains("<span class=\"type mono\">GateFixture.Session</span>"))
        XCTAssertTrue(p.dom.contains("Fixtures/SwiftTypes/main.swift:"), "Swift file:line in the stacks")
        // The type filter (the script's): typing "Token" hides the Session finding.
        let filtered = (p.file as NSString).deletingLastPathComponent + "/filtered.html"
        let typing = "<script>var t=document.getElementById('text-filter');t.value='Token';t.dispatchEvent(new Event('input'));</script></body>"
        try p.html.replacingOccurrences(of: "</body>", with: typing).write(toFile: filtered, atomically: true, encoding: .utf8)
        let dom = try Browser.dom(filtered)
        let shown = DOM.captures(#"<article class="finding[^"]*" id="finding-\d+" [^>]*data-type="([^"]*)"[^>]*>"#, in: dom)
        let visible = DOM.captures(#"<article class="finding[^"]*" id="finding-\d+" [^>]*data-type="([^"]*)"[^>]*"\d+">"#, in: dom)
        XCTAssertEqual(shown.count, p.findings.count)
        // The filter matches type or function: Token's objects, and blocks allocated in issueToken.
        let expected = p.findings.filter { f in
            ((f["typeName"] as? String ?? "") + " " + Page.function(f)).lowercased().contains("token")
        }.map { $0["typeName"] as? String ?? "" }
        XCTAssertTrue(expected.contains("GateFixture.Token"))
        XCTAssertFalse(expected.contains("GateFixture.Session"))
        XCTAssertEqual(visible, expected, "only Token's findings are still shown: \(shown)")
        XCTAssertTrue(dom.contains("\(expected.count) of \(p.findings.count) shown"))
    }

    /// `heapgen run --html` writes the page next to the JSON report; `diff --format html` draws the diff.
    func testRunHTMLAndDiff() throws {
        let exe = try FixtureCompiler.build("gate.c", in: Self.gateFixtures)
        let dir = try TestPaths.freshDirectory("html-run")
        let trace = dir + "/x.trace", json = dir + "/r.json", html = dir + "/r.html"
        let r = try HeapGenCLI.run(["run", "--format", "json", "--output", json, "--html", html, "--trace", trace, "--", exe, "leaky"])
        XCTAssertEqual(r.status, 0, r.transcript)
        XCTAssertTrue(r.stdoutText.contains("gate-fixture: mode leaky"), "the program's output is untouched")
        XCTAssertNotNil(FileManager.default.contents(atPath: json), "the JSON report is still written")
        let page = try String(contentsOfFile: html, encoding: .utf8)
        XCTAssertTrue(page.contains("data-kind=\"abandoned\"") && page.contains("data-function=\"leak_session\""))
        var st = stat()
        XCTAssertEqual(stat(html, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600, "written owner-only")

        let diffFile = dir + "/diff.html"
        let d = try HeapGenCLI.run(["diff", trace, "--from", "0", "--to", "end", "--format", "html", "--output", diffFile])
        XCTAssertEqual(d.status, 0, d.transcript)
        let dom = try Browser.dom(diffFile)
        XCTAssertEqual(DOM.externalReferences(try String(contentsOfFile: diffFile, encoding: .utf8)), [])
        XCTAssertTrue(dom.contains("<body class=\"js\""))
        // 8 cycles × 3 × 64 B kept after the first mark.
        XCTAssertTrue(dom.contains("<h2>What grew: 1.5 kB</h2>"), dom)
        XCTAssertTrue(DOM.element(id: "flame", tag: "section", in: dom)?.contains(">leak_session<") == true, "the diff's icicle")
        let row = DOM.captures(#"(<tr id="site-1">.*?</tr>)"#, in: dom).first ?? ""
        XCTAssertTrue(row.contains("<td data-v=\"1536\" class=\"pos\">+1.5 kB</td>") && row.contains("leak_session"), row)
        let shot = try Browser.pixels(try Browser.screenshot(diffFile, height: 900))
        XCTAssertLessThan(shot.dominantShare, 0.95)
        XCTAssertGreaterThan(shot.colors, 20)
    }
}
