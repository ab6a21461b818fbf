// The gate's parts without processes: LSan patterns, suppression files, the verdict,
// baselines and signatures, and the writers' escaping.

import Foundation
import FoundationXML
import HeapGenTestSupport
@testable import HeapGenGate
import HeapGenAnalysis
import HeapGenReport
import XCTest

final class LeakPatternTests: XCTestCase {
    func testSubstringAnchorsAndWildcardsAsLSan() {
        func m(_ p: String, _ s: String) -> Bool { LeakPattern(p).matches(s) }
        // Plain text: a substring anywhere.
        XCTAssertTrue(m("leak_session", "leak_session"))
        XCTAssertTrue(m("leak_session", "my_leak_session_2"))
        XCTAssertFalse(m("leak_session", "leak_sessio"))
        // ^ and $ anchor.
        XCTAssertTrue(m("^leak_", "leak_session"))
        XCTAssertFalse(m("^leak_", "my_leak_session"))
        XCTAssertTrue(m(".c$", "/src/sites.c"))
        XCTAssertFalse(m(".c$", "/src/sites.cc"))
        XCTAssertTrue(m("^main$", "main"))
        XCTAssertFalse(m("^main$", "__libc_start_main"))
        XCTAssertTrue(m("main", "__libc_start_main"))   // LSan: substring, so this matches too
        // * matches any run, including none.
        XCTAssertTrue(m("Screen*init", "ProfileScreen.init(user:)"))
        XCTAssertTrue(m("a*b", "ab"))
        XCTAssertTrue(m("^lib*.so$", "libfoo.so"))
        XCTAssertFalse(m("^lib*.so$", "libfoo.so.6"))
        XCTAssertTrue(m("^lib*.so*", "libfoo.so.6"))
        XCTAssertTrue(m("*", "anything"))
        XCTAssertTrue(m("a*$", "xa"))        // LSan: a $ after * matches any end
        XCTAssertTrue(m("a*$", "xaq"))
        XCTAssertTrue(m("^*x", "yyx"))
        // Where LSan's greedy search gives up although a match exists, this one finds it.
        XCTAssertTrue(m("a*b$", "axbxb"))
        XCTAssertFalse(m("a*b$", "axbxc"))
        // An empty subject never matches (LSan); ^/$ elsewhere are ordinary characters.
        XCTAssertFalse(m("*", ""))
        XCTAssertTrue(m("a^b", "xa^by"))
        XCTAssertTrue(m("a$b", "a$b"))
        // Overlap: a prefix and a suffix may not share characters.
        XCTAssertFalse(m("^ab*ba$", "aba"))
        XCTAssertTrue(m("^ab*ba$", "abba"))
        // UTF-8 and Swift names.
        XCTAssertTrue(m("Box<Swift.String>", "Demo.Box<Swift.String>.Storage"))
        XCTAssertTrue(m("^Demo.*ViewModel$", "Demo.ProfileViewModel"))
        XCTAssertTrue(m("é*ü", "aébüc"))
    }
}

final class SuppressionFileTests: XCTestCase {
    func testParsesKindsCommentsAndBlankLines() throws {
        let text = """
            # LeakSanitizer's own syntax is accepted as is
            leak:leak_session

              function:^make_*$  \r
            file:vendor/
            module:libthird.so
            type:Demo.ProfileViewModel
            # the end
            """
        let s = try Suppressions.parse(text, source: "ci.supp")
        XCTAssertEqual(s.rules.map(\.description), ["leak:leak_session", "function:^make_*$", "file:vendor/",
                                                    "module:libthird.so", "type:Demo.ProfileViewModel"])
        XCTAssertEqual(s.rules.map(\.line), [2, 4, 5, 6, 7])
        XCTAssertEqual(s.rules.map(\.kind), [.leak, .function, .file, .module, .type])
        XCTAssertTrue(try Suppressions.parse("\n# only comments\n\n", source: "x").isEmpty)
    }

    func testBadLinesNameTheFileAndLine() {
        func error(_ text: String) -> SuppressionError? {
            do { _ = try Suppressions.parse(text, source: "ci.supp"); return nil } catch { return error as? SuppressionError }
        }
        let unknown = error("leak:a\n# ok\nlek:foo\n")
        XCTAssertEqual(unknown?.line, 3)
        XCTAssertTrue(unknown?.description.hasPrefix("ci.supp:3: unknown kind 'lek'") == true, "\(String(describing: unknown))")
        XCTAssertTrue(unknown?.description.contains("leak:") == true, "lists the kinds")
        let noColon = error("leak_session\n")
        XCTAssertEqual(noColon?.description.hasPrefix("ci.supp:1: 'leak_session' is not KIND:PATTERN"), true,
                       "\(String(describing: noColon))")
        XCTAssertEqual(error("type:   \n")?.description, "ci.supp:1: empty pattern in 'type:'")
        XCTAssertEqual(error("leak:^\n")?.line, 1)
        XCTAssertNil(error("leak:a:b\n"), "a colon in the pattern is part of it")
    }

    func testUnreadableFileIsAnError() {
        XCTAssertThrowsError(try Suppressions.load(paths: ["/nonexistent/heapgen.supp"])) { error in
            XCTAssertTrue("\(error)".hasPrefix("/nonexistent/heapgen.supp: "), "\(error)")
        }
    }

    func testKindsMatchTheirFields() {
        let f = Synthetic.finding(function: "leak_session", file: "/src/app/sites.c", module: "/opt/app/bin/server",
                                  typeName: "App.Session")
        func matches(_ rule: String) -> Bool {
            (try? Suppressions.parse(rule, source: "t").firstMatch(f)) != nil
        }
        XCTAssertTrue(matches("leak:leak_session"))
        XCTAssertTrue(matches("leak:sites.c"))
        XCTAssertTrue(matches("leak:bin/server"))
        XCTAssertTrue(matches("leak:__libc_start_main"), "any frame, as LSan")
        XCTAssertFalse(matches("leak:App.Session"), "leak: does not look at types")
        XCTAssertTrue(matches("function:^leak_session$"))
        XCTAssertFalse(matches("function:sites.c"))
        XCTAssertTrue(matches("file:/src/app/"))
        XCTAssertFalse(matches("file:leak_session"))
        XCTAssertTrue(matches("module:server$"))
        XCTAssertFalse(matches("module:sites.c"))
        XCTAssertTrue(matches("type:^App.Session$"))
        XCTAssertFalse(matches("type:leak_session"))
        // First rule in file order wins.
        let two = try! Suppressions.parse("type:Nope\nfunction:leak\nleak:leak", source: "t")
        XCTAssertEqual(two.firstMatch(f), 1)
    }
}

final class GateVerdictTests: XCTestCase {
    func testStatusesThresholdsAndKinds() {
        let big = Synthetic.finding(function: "big", perCycle: 4096)
        let small = Synthetic.finding(function: "small", perCycle: 64)
        var leaked = Synthetic.finding(kind: .leaked, function: "lost", perCycle: 0)
        leaked.leakedBlocks = 3
        leaked.leakedBytes = 96
        let cache = Synthetic.finding(kind: .cache, function: "cache", perCycle: 0)
        let report = Synthetic.report([big, small, leaked, cache])

        var policy = GatePolicy(failOn: [.abandoned], maxBytesPerCycle: 1024)
        var v = Gate.evaluate(report, policy: policy)
        XCTAssertEqual(v.findings.count, 3, "caches are never judged")
        XCTAssertEqual(v.findings.map(\.status), [.failing, .belowLimit, .notGated])
        XCTAssertTrue(v.failed)
        let lines = GateMessages.verdictLines(v)
        XCTAssertEqual(lines.first, "heapgen: gate failed: 1 abandoned site (+4,096 B per cycle): blocks at big (app.c:10)")
        XCTAssertEqual(lines.last, "SUMMARY: heapgen: gate failed: 1 abandoned site (+4,096 B per cycle).")

        policy = GatePolicy(failOn: [.leaked])
        v = Gate.evaluate(report, policy: policy)
        XCTAssertEqual(v.findings.map(\.status), [.notGated, .notGated, .failing])
        let leakLines = GateMessages.verdictLines(v)
        XCTAssertEqual(leakLines.first, "heapgen: gate failed: 1 leaked site (96 B in 3 blocks): blocks at lost (app.c:10)")
        XCTAssertEqual(Array(leakLines.suffix(2)), ["SUMMARY: heapgen: 96 byte(s) leaked in 3 allocation(s).",
                                                    "SUMMARY: heapgen: gate failed: 1 leaked site (96 B in 3 blocks)."])

        policy = GatePolicy(failOn: [.abandoned], maxBytesPerCycle: 8192)
        v = Gate.evaluate(report, policy: policy)
        XCTAssertFalse(v.failed)
        XCTAssertEqual(GateMessages.summary(v), "gate passed: no abandoned memory above 8,192 B per cycle over 7 cycles.")

        // No criteria: nothing fails.
        XCTAssertFalse(Gate.evaluate(report, policy: GatePolicy()).failed)
    }

    /// The Markdown summary of a run without findings claims only what was judged.
    func testMarkdownSaysWhatAnEmptyVerdictCovers() {
        XCTAssertEqual(MarkdownSummary.nothingFound(judgedCycles: 7, leakScanned: true),
                       "No abandoned or leaked memory over 7 judged cycles.")
        XCTAssertEqual(MarkdownSummary.nothingFound(judgedCycles: 7, leakScanned: false),
                       "No abandoned memory over 7 judged cycles; leaks not judged (record with --leaks).")
        XCTAssertEqual(MarkdownSummary.nothingFound(judgedCycles: 0, leakScanned: true),
                       "No leaked memory at exit; abandoned memory not judged (0 judged cycles, 2 needed).")
        XCTAssertEqual(MarkdownSummary.nothingFound(judgedCycles: 1, leakScanned: false),
                       "Nothing judged: 1 judged cycle (2 needed) and no leak scan.")
        let md = MarkdownSummary.render(Gate.evaluate(Synthetic.report([]), policy: GatePolicy(failOn: [.abandoned])),
                                        report: Synthetic.report([]))
        XCTAssertTrue(md.contains("No abandoned or leaked memory over 7 judged cycles."), md)
    }

    /// A trace without a leak scan has no leaked findings because nothing was judged, not
    /// because nothing leaked: a leak gate says so rather than pass in silence.
    func testALeakGateOnATraceWithoutAScanSaysLeaksWereNotJudged() {
        var report = Synthetic.report([])
        let warning = "leaked memory not judged: the trace has no leak scan (record with --leaks; "
            + "a process that exits without running its exit handlers is not scanned, and a scan that "
            + "would read more than 1 GiB or take 20 s gives up, as the recording's warning said)"
        XCTAssertFalse(Gate.evaluate(report, policy: GatePolicy(failOn: [.leaked])).warnings.contains(warning))
        report.totals.leakScanned = false
        let v = Gate.evaluate(report, policy: GatePolicy(failOn: [.leaked]))
        XCTAssertEqual(v.warnings, [warning])
        XCTAssertTrue(GateMessages.verdictLines(v).contains("heapgen: warning: " + warning))
        // Its summary does not claim what it did not judge (a JVM read "gate passed: no leaked sites").
        XCTAssertEqual(GateMessages.summary(v), "gate passed: leaked memory not judged (no leak scan).")
        report.totals.leakScanned = true
        XCTAssertEqual(GateMessages.summary(Gate.evaluate(report, policy: GatePolicy(failOn: [.leaked]))),
                       "gate passed: no leaked sites.")
        XCTAssertFalse(Gate.evaluate(report, policy: GatePolicy(failOn: [.abandoned])).warnings.contains(warning),
                       "only a leak gate needs the scan")
    }

    /// Growth with no frame in the program's code (XCTest's per-test timers on a
    /// libdispatch worker) is shown apart and fails only with --include-libraries.
    func testGrowthOnlyInLibrariesIsShownApartAndNotJudgedByDefault() {
        let xctest = "/opt/swift/usr/lib/swift/linux/libXCTest.so"
        let dispatch = "/opt/swift/usr/lib/swift/linux/libdispatch.so"
        var timers = Synthetic.finding(function: "XCTWaiter.wait(for:timeout:)", file: "/src/XCTWaiter.swift",
                                       module: xctest, typeName: "XCTest.XCTWaiter", perCycle: 4096)
        timers.frames[1] = Report.Frame(function: "_dispatch_worker_thread2", module: dispatch, address: 0x7f00_0100_0000)
        timers.frames[2] = Report.Frame(function: "start_thread", module: "/lib/x86_64-linux-gnu/libc.so.6",
                                        address: 0x7f00_0200_0000)
        timers.userFrame = nil
        let mine = Synthetic.finding(function: "leak_session", perCycle: 64)
        XCTAssertTrue(timers.inLibraries)
        XCTAssertFalse(mine.inLibraries)
        // A frame outside every module might be the program's: not library-only.
        var unknown = timers
        unknown.frames[0].module = nil
        XCTAssertFalse(unknown.inLibraries)

        let report = Synthetic.report([timers, mine])
        var policy = GatePolicy(failOn: [.abandoned], maxBytesPerCycle: 1024)
        var v = Gate.evaluate(report, policy: policy)
        XCTAssertEqual(v.findings.map(\.status), [.inLibraries, .belowLimit])
        XCTAssertFalse(v.failed)
        policy.includeLibraries = true
        v = Gate.evaluate(report, policy: policy)
        XCTAssertEqual(v.findings.map(\.status), [.failing, .belowLimit])
        XCTAssertTrue(v.failed)

        let text = TextReport.render(report)
        let own = try? XCTUnwrap(text.range(of: "Abandoned memory: 1 site"))
        let apart = try? XCTUnwrap(text.range(of: "Growth in libraries only (1 site, no frame in your code; the gate judges it with --include-libraries)"))
        XCTAssertNotNil(own, text)
        XCTAssertNotNil(apart, text)
        if let own, let apart { XCTAssertLessThan(own.lowerBound, apart.lowerBound, "the program's own growth first") }

        let json = String(decoding: (try? JSONReport.render(report)).map { Data($0.utf8) } ?? Data(), as: UTF8.self)
        XCTAssertTrue(json.contains("\"inLibraries\" : true"), json)
        XCTAssertTrue(json.contains("\"inLibraries\" : false"), json)
        XCTAssertEqual(try JSONReport.decode(Data(json.utf8)).findings.map(\.inLibraries), [true, false])
    }

    func testGrowthUsesTheGenerationTableLessExcusedSites() throws {
        // Setup 1000 B, warm-up cycle to 5000, then +300 B per cycle for 7 judged cycles.
        let leak = Synthetic.finding(function: "leak_session", perCycle: 200)
        let report = Synthetic.report([leak], liveBytes: [1000, 5000] + (1...7).map { 5000 + 300 * $0 })
        var v = Gate.evaluate(report, policy: GatePolicy(failOn: [.growth], maxBytesPerCycle: 250))
        XCTAssertEqual(v.growth?.heapBytesPerCycle, 300)
        XCTAssertEqual(v.growth?.cycles, 7)
        XCTAssertEqual(v.findings.map(\.status), [.notGated])
        XCTAssertTrue(v.failed)
        XCTAssertEqual(GateMessages.verdictLines(v).first, "heapgen: gate failed: live heap grew +300 B per cycle over 7 cycles (limit 250 B)")
        // Suppressing the leaking site takes its 200 B per cycle out of the heap's growth.
        let policy = GatePolicy(failOn: [.growth], maxBytesPerCycle: 250,
                                suppressions: try Suppressions.parse("function:leak_session", source: "s"))
        v = Gate.evaluate(report, policy: policy)
        XCTAssertEqual(v.growth?.bytesPerCycle, 100)
        XCTAssertFalse(v.failed)
        // Too few cycles: a warning, not a verdict.
        let short = Synthetic.report([], liveBytes: [1000, 2000], cycles: 1, judged: 0)
        v = Gate.evaluate(short, policy: GatePolicy(failOn: [.growth, .abandoned]))
        XCTAssertNil(v.growth)
        XCTAssertFalse(v.failed)
        XCTAssertEqual(v.warnings.count, 2, "\(v.warnings)")
    }

    /// Leaks found at exit have no cycles: a suppressed one read "0 objects / 0 B per cycle";
    /// five leaks at one function, whose stacks differ further out, were named five times
    /// (probes of heaptrack's embedded_lsan_suppressions and test_cpp tests).
    func testLeakLinesSayWhatLeakedAndNameOneSiteOnce() {
        func leak(_ function: String, bytes: UInt64, address: UInt64) -> Report.Finding {
            var f = Synthetic.finding(kind: .leaked, function: function, address: address)
            f.cycles = 0
            f.cyclesWithGrowth = 0
            f.leakedBlocks = 1
            f.leakedBytes = bytes
            return f
        }
        XCTAssertEqual(SiteText.amount(leak("foobar", bytes: 1, address: 0x1000)), "1 B in 1 block leaked")
        XCTAssertEqual(SiteText.amount(Synthetic.finding(function: "grow")), "+1 object / +100 B per cycle")
        let same = (0..<5).map { leak("asdf", bytes: 8, address: 0x1000 + UInt64($0) * 0x100) }
        XCTAssertEqual(GateMessages.siteList(same + [leak("other", bytes: 8, address: 0x9000)]),
                       "blocks at asdf (app.c:10) (5 sites); blocks at other (app.c:10)")
        let many = (0..<7).map { leak("f\($0)", bytes: 8, address: 0x1000 * UInt64($0 + 1)) }
        XCTAssertTrue(GateMessages.siteList(many + same).hasSuffix("; … and 7 more"), GateMessages.siteList(many + same))
        let details = JUnitWriter.details(same[0])
        XCTAssertTrue(details.contains("8 B in 1 block leaked"), "\(details)")
        XCTAssertFalse(details.contains { $0.contains("per cycle") }, "\(details)")
    }

    func testLiveAtExitAfterSuppressions() throws {
        var report = Synthetic.report([])
        report.liveAtExit = Report.LiveAtExit(objects: 3, bytes: 5000, sites: [
            Report.Site(typeName: nil, objects: 1, bytes: 4000, frames: Synthetic.frames(function: "load_config")),
            Report.Site(typeName: "App.Cache", objects: 2, bytes: 1000, frames: Synthetic.frames(function: "warm")),
        ])
        var v = Gate.evaluate(report, policy: GatePolicy(maxLiveAtExit: 2000))
        XCTAssertTrue(v.failed)
        XCTAssertEqual(GateMessages.verdictLines(v).first, "heapgen: gate failed: 5,000 B live at exit (limit 2,000 B)")
        v = Gate.evaluate(report, policy: GatePolicy(maxLiveAtExit: 2000,
                                                     suppressions: try Suppressions.parse("leak:load_config", source: "s")))
        XCTAssertEqual(v.liveAtExit?.bytes, 1000)
        XCTAssertFalse(v.failed)
        XCTAssertEqual(v.ruleUses.first?.liveBytes, 4000)
    }
}

/// `--fail-on invalid-free`: the report's explained stray frees, `free:` rules, and the ones
/// past the explained few.
final class InvalidFreeGateTests: XCTestCase {
    static func stray(_ cause: HeapGenAnalysis.StrayFree.Cause, function: String = "make_session",
                      event: UInt64 = 10) -> Report.StrayFree {
        cause == .notAllocated
            ? Report.StrayFree(cause: cause, function: "free", address: 0x5000, event: event)
            : Report.StrayFree(cause: cause, function: cause == .doubleFree ? "free" : "realloc",
                               address: cause == .doubleFree ? 0x4000 : 0x4010, event: event,
                               blockAddress: 0x4000, blockSize: 64, blockFreedAtEvent: cause == .doubleFree ? event - 1 : nil,
                               frames: Synthetic.frames(function: function))
    }

    static func report(_ strays: [Report.StrayFree], total: UInt64? = nil, findings: [Report.Finding] = []) -> Report {
        var r = Synthetic.report(findings)
        r.strayFrees = strays
        r.totals.untrackedFrees = total ?? UInt64(strays.count)
        return r
    }

    func testExplainedFreesFailAndAreNamedByTheBlocksAllocation() {
        let r = Self.report([Self.stray(.doubleFree), Self.stray(.interiorPointer, function: "parse"), Self.stray(.notAllocated)])
        let v = Gate.evaluate(r, policy: GatePolicy(failOn: [.invalidFree]))
        XCTAssertTrue(v.failed)
        XCTAssertEqual(v.invalidFrees?.failingCount, 3)
        let lines = GateMessages.verdictLines(v)
        XCTAssertEqual(lines.first, "heapgen: gate failed: 3 invalid frees (1 double free, 1 interior pointer, 1 never allocated): "
            + "double free of a 64 B block allocated at make_session (app.c:10); "
            + "free (realloc) of a pointer 16 bytes into a 64 B block allocated at parse (app.c:10); "
            + "free(0x5000) of memory heapgen never saw allocated")
        XCTAssertEqual(lines.last, "SUMMARY: heapgen: gate failed: 3 invalid frees (1 double free, 1 interior pointer, 1 never allocated).")
        // Not a criterion: not judged, whatever the trace holds.
        XCTAssertNil(Gate.evaluate(r, policy: GatePolicy(failOn: [.abandoned])).invalidFrees)
        XCTAssertFalse(Gate.evaluate(r, policy: GatePolicy(failOn: [.abandoned])).failed)
        // None: passes, and says what it judged.
        let clean = Gate.evaluate(Self.report([]), policy: GatePolicy(failOn: [.invalidFree]))
        XCTAssertFalse(clean.failed)
        XCTAssertEqual(GateMessages.summary(clean), "gate passed: no invalid frees.")
    }

    /// Only `free:` rules excuse an invalid free, by the block's allocation stack; they never
    /// excuse a finding, and no other kind excuses a free.
    func testOnlyFreeRulesSuppressAndOnlyFrees() throws {
        let finding = Synthetic.finding(function: "make_session")
        let r = Self.report([Self.stray(.doubleFree)], findings: [finding])
        let policy = { (text: String) in
            GatePolicy(failOn: [.invalidFree, .abandoned], suppressions: try! Suppressions.parse(text, source: "f.supp"))
        }
        var v = Gate.evaluate(r, policy: policy("leak:make_session"))
        XCTAssertEqual(v.invalidFrees?.failingCount, 1, "leak: is for findings")
        XCTAssertEqual(v.findings.first?.status, .suppressed(rule: 0))
        v = Gate.evaluate(r, policy: policy("free:app.c"))
        XCTAssertEqual(v.invalidFrees?.failingCount, 0)
        XCTAssertEqual(v.invalidFrees?.explained.first?.suppressedBy, 0)
        XCTAssertEqual(v.findings.first?.status, .failing, "free: is for frees")
        XCTAssertEqual(v.ruleUses.first?.frees, 1)
        XCTAssertEqual(v.ruleUses.first?.bytes, 64)
        XCTAssertTrue(GateMessages.verdictLines(v).contains(
            "heapgen: suppressed by free:app.c (f.supp:1): double free of a 64 B block allocated at make_session (app.c:10)"))
        XCTAssertTrue(GateMessages.suppressionTable(v).contains("      1         64 free:app.c"))
        XCTAssertTrue(GateMessages.summary(v).hasSuffix("; 1 invalid free suppressed."), GateMessages.summary(v))
        XCTAssertTrue(GateMessages.reportNotes(v).contains(
            "Gate: suppressed by free:app.c: double free of a 64 B block allocated at make_session (app.c:10)."))
        // A free of memory never allocated has no stack to match.
        v = Gate.evaluate(Self.report([Self.stray(.notAllocated)]), policy: policy("free:*"))
        XCTAssertTrue(v.failed)
    }

    /// The report explains the first few; the rest fail the gate even when a rule excuses
    /// every explained one, since nothing says what they were.
    func testFreesPastTheExplainedOnesFail() {
        let r = Self.report([Self.stray(.doubleFree)], total: 40)
        let suppressed = GatePolicy(failOn: [.invalidFree], suppressions: try! Suppressions.parse("free:make_session", source: "s"))
        let v = Gate.evaluate(r, policy: suppressed)
        XCTAssertTrue(v.failed)
        XCTAssertEqual(v.invalidFrees?.unexplained, 39)
        XCTAssertEqual(GateMessages.verdictLines(v).first,
                       "heapgen: gate failed: 39 invalid frees (39 not explained): the report explains only the first 1 (heapgen info TRACE lists every one's event)")
        // Lost events make strays of frees whose allocations were lost: a warning says so.
        var lossy = r
        lossy.totals.lostEvents = 5
        XCTAssertEqual(Gate.evaluate(lossy, policy: suppressed).warnings,
                       ["5 events were lost: a free whose allocation was lost counts as invalid too"])
    }

    func testWritersCarryEachInvalidFree() throws {
        let r = Self.report([Self.stray(.doubleFree), Self.stray(.interiorPointer, function: "parse")], total: 3)
        let policy = GatePolicy(failOn: [.invalidFree], suppressions: try Suppressions.parse("free:parse", source: "s"))
        let v = Gate.evaluate(r, policy: policy)

        let xml = JUnitWriter.render(v, report: r)
        let doc = try XMLDocument(xmlString: xml)
        let cases = try doc.nodes(forXPath: "//testcase").compactMap { $0 as? XMLElement }
        XCTAssertEqual(cases.map { $0.attribute(forName: "classname")?.stringValue ?? "" },
                       ["heapgen.invalid-free", "heapgen.invalid-free", "heapgen.gate"], xml)
        XCTAssertEqual(cases[0].attribute(forName: "file")?.stringValue, "/src/app.c")
        XCTAssertEqual(cases[0].attribute(forName: "line")?.stringValue, "10")
        XCTAssertEqual(try doc.nodes(forXPath: "//testcase/failure").count, 2, "the double free and the unexplained one")
        XCTAssertTrue(cases[1].stringValue?.contains("suppressed by free:parse") == true, xml)
        XCTAssertEqual(cases[2].attribute(forName: "name")?.stringValue, "invalid frees not explained")
        XCTAssertFalse(xml.contains("no abandoned memory"), "abandoned memory was not a criterion")

        let md = MarkdownSummary.render(v, report: r)
        XCTAssertTrue(md.contains("- ❌ 2 invalid frees (1 double free, 1 not explained)"), md)
        XCTAssertTrue(md.contains("  - 🔇 suppressed (`free:parse`): free (realloc) of a pointer 16 bytes into a 64 B block"), md)
        XCTAssertFalse(md.contains("Nothing judged"), md)

        let sarif = try XCTUnwrap(try JSONSerialization.jsonObject(
            with: Data(try SARIFWriter.render(v, report: r, sourceRoot: "/src").utf8)) as? [String: Any])
        let run = try XCTUnwrap((sarif["runs"] as? [[String: Any]])?.first)
        let results = try XCTUnwrap(run["results"] as? [[String: Any]])
        XCTAssertEqual(results.compactMap { $0["ruleId"] as? String }, ["invalid-free", "invalid-free"])
        let location = try XCTUnwrap((results[0]["locations"] as? [[String: Any]])?.first?["physicalLocation"] as? [String: Any])
        XCTAssertEqual((location["artifactLocation"] as? [String: Any])?["uri"] as? String, "app.c")
        let rules = try XCTUnwrap(((run["tool"] as? [String: Any])?["driver"] as? [String: Any])?["rules"] as? [[String: Any]])
        XCTAssertEqual(rules.compactMap { $0["id"] as? String }, SARIFWriter.ruleIDs)
        XCTAssertEqual(results[0]["ruleIndex"] as? Int, SARIFWriter.ruleIDs.firstIndex(of: "invalid-free"))
    }
}

final class BaselineTests: XCTestCase {
    func testSignatureHasNoAddressesOrDirectories() {
        let a = Synthetic.finding(function: "leak_session", file: "/home/ci/build-1/src/sites.c", address: 0x55d0_0000_1234)
        let b = Synthetic.finding(function: "leak_session", file: "/home/dev/src/sites.c", address: 0x7f00_dead_0000)
        XCTAssertEqual(BaselineSignature(a), BaselineSignature(b))
        XCTAssertEqual(BaselineSignature(a).fingerprint, BaselineSignature(b).fingerprint)
        XCTAssertEqual(BaselineSignature(a).frames.first, .init(function: "leak_session", file: "sites.c", line: 10))
        XCTAssertFalse(BaselineSignature(a).canonicalText.contains("0x"))
        // Starts at the user frame, at most 6 frames.
        var deep = Synthetic.finding(function: "f0")
        deep.frames = (0..<10).map { Report.Frame(function: "f\($0)", file: "/x/a.c", line: $0 + 1, module: "/bin/a", address: UInt64($0)) }
        deep.userFrame = 2
        XCTAssertEqual(BaselineSignature(deep).frames.map(\.function), ["f2", "f3", "f4", "f5", "f6", "f7"])
        XCTAssertNotEqual(BaselineSignature(deep), BaselineSignature(Synthetic.finding(function: "f2")))
    }

    /// A Swift task's finding: the frames outside the executor's job entry change with the
    /// thread that ran the job, so they are not part of its signature.
    func testSignatureEndsAtTheExecutorsJobEntry() {
        func task(_ outer: [String]) -> Report.Finding {
            var f = Synthetic.finding(function: "Registry.open(_:)")
            f.frames = (["Registry.open(_:)", "closure #1 in main", "swift::runJobInEstablishedExecutorContext(swift::Job*)",
                         "swift_job_run"] + outer).enumerated().map {
                Report.Frame(function: $0.element, file: $0.offset < 2 ? "/src/main.swift" : nil,
                             line: $0.offset < 2 ? 20 + $0.offset : nil, module: "/bin/app", address: UInt64($0.offset))
            }
            f.userFrame = 0
            return f
        }
        let a = task(["_dispatch_lane_serial_drain", "_dispatch_lane_invoke", "start_thread"])
        let b = task(["_dispatch_continuation_pop", "_dispatch_worker_thread2", "start_thread"])
        XCTAssertEqual(BaselineSignature(a), BaselineSignature(b))
        XCTAssertEqual(BaselineSignature(a).frames.map(\.function),
                       ["Registry.open(_:)", "closure #1 in main", "swift::runJobInEstablishedExecutorContext(swift::Job*)"])
    }

    func testRoundTripMovedLinesAndNewSitesInTheSameFunction() throws {
        let old = Synthetic.finding(function: "leak_session", line: 32)
        let baseline = Baseline(findings: [old, old])
        XCTAssertEqual(baseline.entries.count, 1, "one entry per signature")
        let text = try baseline.encoded()
        XCTAssertTrue(text.contains("\"schema\" : \"heapgen-baseline/1\""), text)
        XCTAssertTrue(text.contains("\"site\" : \"blocks at leak_session (app.c:32)\""), text)
        let back = try Baseline.decode(Data(text.utf8), source: "b.json")
        XCTAssertEqual(back, baseline)

        // The same site, moved 3 lines down: still known. A second site in the same
        // function is new: the moved entry accounts for one finding only.
        let moved = Synthetic.finding(function: "leak_session", line: 35)
        let added = Synthetic.finding(function: "leak_session", line: 50)
        let m = back.match([moved, added])
        XCTAssertEqual(m.entryForFinding, [0, nil])
        XCTAssertEqual(m.unmatchedEntries, [])
        // An exact match is preferred to a moved one.
        XCTAssertEqual(back.match([added, old]).entryForFinding, [nil, 0])
        // Nothing left: the entry is fixed.
        XCTAssertEqual(back.match([]).unmatchedEntries, [0])
    }

    func testBadBaselineFiles() {
        XCTAssertThrowsError(try Baseline.decode(Data("{\"schema\":\"heapgen-report/1\"}".utf8), source: "b.json")) {
            XCTAssertEqual("\($0)", "b.json: schema is 'heapgen-report/1', expected 'heapgen-baseline/1'")
        }
        XCTAssertThrowsError(try Baseline.decode(Data("[1,2]".utf8), source: "b.json")) {
            XCTAssertEqual("\($0)", "b.json: not a JSON object")
        }
        XCTAssertThrowsError(try Baseline.decode(Data("{\"schema\":\"heapgen-baseline/1\",\"entries\":[{}]}".utf8), source: "b.json"))
    }

    func testKnownAndFixedInVerdict() {
        let known = Synthetic.finding(function: "known_leak")
        let fresh = Synthetic.finding(function: "new_leak")
        let gone = Synthetic.finding(function: "fixed_leak")
        let policy = GatePolicy(failOn: [.abandoned], baseline: Baseline(findings: [known, gone]))
        let v = Gate.evaluate(Synthetic.report([known, fresh]), policy: policy)
        XCTAssertEqual(v.findings.map(\.status), [.known(entry: 1), .failing])
        XCTAssertEqual(v.fixedEntries.map(\.site), ["blocks at fixed_leak (app.c:10)"])
        let lines = GateMessages.verdictLines(v)
        XCTAssertTrue(lines.contains("heapgen: fixed — remove from the baseline: blocks at fixed_leak (app.c:10)"), "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("heapgen: known (baseline): blocks at known_leak") }, "\(lines)")
        XCTAssertEqual(GateMessages.reportNotes(v).count, 2)
    }
}

final class WriterTests: XCTestCase {
    /// JUnit escapes with the XML dialect of the one escaper: `&apos;`, and `?` for what XML 1.0 cannot carry.
    func testXMLEscaping() {
        let f = Synthetic.finding(function: "a<b>&\"c'\u{1}")
        let report = Synthetic.report([f])
        let xml = JUnitWriter.render(Gate.evaluate(report, policy: GatePolicy(failOn: [.abandoned])), report: report)
        XCTAssertTrue(xml.contains(#"name="blocks at a&lt;b&gt;&amp;&quot;c&apos;? (app.c:10)""#), xml)
    }

    func testMarkdownEscapesPipesInCells() {
        var f = Synthetic.finding(function: "operator|(int, int)")
        f.typeName = "A|B"
        let v = Gate.evaluate(Synthetic.report([f]), policy: GatePolicy(failOn: [.abandoned]))
        let md = MarkdownSummary.render(v, report: Synthetic.report([f]))
        XCTAssertTrue(md.contains("`A\\|B`"), md)
        XCTAssertTrue(md.contains("`operator\\|(int, int)`"), md)
    }
}

// MARK: - Synthetic reports

enum Synthetic {
    static func frames(function: String, file: String = "/src/app.c", line: Int = 10, module: String = "/bin/app",
                       address: UInt64 = 0x1000) -> [Report.Frame] {
        [Report.Frame(function: function, shortFunction: function, file: file, line: line, column: 5, module: module,
                      address: address),
         Report.Frame(function: "main", shortFunction: "main", file: file, line: 99, module: module, address: address + 0x40),
         Report.Frame(function: "__libc_start_main", file: "./csu/libc-start.c", line: 360,
                      module: "/lib/x86_64-linux-gnu/libc.so.6", address: 0x7f00_0000_0000)]
    }

    static func finding(kind: Report.Finding.Kind = .abandoned, function: String, file: String = "/src/app.c",
                        line: Int = 10, module: String = "/bin/app", typeName: String? = nil, perCycle: Int = 100,
                        address: UInt64 = 0x1000) -> Report.Finding {
        Report.Finding(kind: kind, typeName: typeName,
                       frames: frames(function: function, file: file, line: line, module: module, address: address),
                       userFrame: 0, cycles: 7, cyclesWithGrowth: 7, objectsPerCycle: Array(repeating: 1, count: 8),
                       bytesPerCycle: Array(repeating: perCycle, count: 8), averageBytesPerCycle: perCycle,
                       survivingObjects: 7, survivingBytes: UInt64(max(0, perCycle * 7)))
    }

    /// A report with `findings` and a generation table whose closing live bytes are `liveBytes`
    /// (generation 0 first), 8 cycles, 7 judged by default.
    static func report(_ findings: [Report.Finding], liveBytes: [UInt64]? = nil, cycles: Int = 8,
                       judged: Int = 7) -> Report {
        let live = liveBytes ?? Array(repeating: 1000, count: cycles + 1)
        let generations = live.enumerated().map { i, bytes in
            Report.Generation(index: i, label: i == 0 ? "heapgen.start" : "cycle", allocations: 1, frees: 0,
                              allocatedBytes: 1, liveObjects: 1, liveBytes: bytes, persistentObjects: 0, persistentBytes: 0)
        } + [Report.Generation(index: live.count, label: nil, allocations: 0, frees: 0, allocatedBytes: 0,
                               liveObjects: 1, liveBytes: live.last ?? 0, persistentObjects: 0, persistentBytes: 0)]
        return Report(trace: "/tmp/x.trace",
                      program: Report.Program(path: "/bin/app", args: ["app"], pid: 1, exitStatus: 0, signal: nil),
                      options: Report.Options(warmUp: cycles - judged, toleratedMisses: 1), totals: Report.Totals(leakScanned: true),
                      cycles: cycles, judgedCycles: judged, generations: generations, findings: findings,
                      liveAtExit: Report.LiveAtExit(objects: 0, bytes: 0, sites: []))
    }
}
