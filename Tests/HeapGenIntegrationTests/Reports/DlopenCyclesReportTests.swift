// Live at exit after dlopen/dlclose cycles (issue 7 item 11): a library loaded, called and
// unloaded again and again allocates blocks the program keeps. The shim defines every
// stack again after each module load or unload (a new stack id per load), so a site keyed
// by stack id was split into one site per load: the report listed 47 of 200 blocks, while
// the totals counted 200 and suppressions judged sites nobody saw. Totals, listed sites,
// findings and gate figures must agree exactly.

import Foundation
import HeapGenTestSupport
import XCTest

final class DlopenCyclesReportTests: XCTestCase {
    /// The C fixture and its library (built with -shared -fPIC).
    func fixture() throws -> (program: String, library: String) {
        let program = try ReportFixture.c("dlcycle.c")
        let library = try FixtureCompiler.build("dlcycle_lib.c", in: ReportFixture.directory, shared: true)
        return (program, library)
    }

    /// Bytes one load keeps: blocks of 40 + i % 3 bytes.
    static func bytesPerLoad(_ per: Int) -> Int { (0..<per).reduce(0) { $0 + 40 + $1 % 3 } }

    /// Sites of the report's live-at-exit list (JSON).
    struct LiveSite {
        var objects: Int
        var bytes: Int
        var functions: [String]
    }

    static func liveSites(_ r: Report) -> (objects: Int, bytes: Int, sites: [LiveSite]) {
        let live = r.json["liveAtExit"] as? [String: Any] ?? [:]
        let sites = (live["sites"] as? [[String: Any]] ?? []).map { s in
            LiveSite(objects: jsonInt(s["objects"]) ?? -1, bytes: jsonInt(s["bytes"]) ?? -1,
                     functions: (s["frames"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String })
        }
        return (jsonInt(live["objects"]) ?? -1, jsonInt(live["bytes"]) ?? -1, sites)
    }

    func assertAgree(loads: Int, per: Int, file: StaticString = #filePath, line: UInt = #line) throws {
        let (program, library) = try fixture()
        let args = [library, "\(loads)", "\(per)"]
        let plain = try runProcess(program, args)
        let run = try HeapGenCLI.runJSON(program, args)
        XCTAssertEqual(plain.status, 0, plain.transcript, file: file, line: line)
        XCTAssertEqual(run.result.stdout, plain.stdout, "the program's output under heapgen", file: file, line: line)
        XCTAssertEqual(plain.stdoutText, "kept \(loads * per) blocks\n", file: file, line: line)

        let r = run.report
        let live = Self.liveSites(r)
        XCTAssertEqual(live.objects, r.total("liveAtExitObjects"), file: file, line: line)
        XCTAssertEqual(live.bytes, r.total("liveAtExitBytes"), file: file, line: line)
        // Few sites: the list holds all of them, so it sums to the totals exactly.
        XCTAssertLessThan(live.sites.count, 10, "\(live.sites)", file: file, line: line)
        XCTAssertEqual(live.sites.map(\.objects).reduce(0, +), live.objects, "\(live.sites)", file: file, line: line)
        XCTAssertEqual(live.sites.map(\.bytes).reduce(0, +), live.bytes, "\(live.sites)", file: file, line: line)
        // The library's blocks: one site, every block of every load.
        let lib = live.sites.filter { $0.functions.first == "dlcycle_block" }
        XCTAssertEqual(lib.count, 1, "\(live.sites)", file: file, line: line)
        XCTAssertEqual(lib.first?.objects, loads * per, "\(live.sites)", file: file, line: line)
        XCTAssertEqual(lib.first?.bytes, loads * Self.bytesPerLoad(per), "\(live.sites)", file: file, line: line)
        XCTAssertEqual(r.total("lostEvents"), 0, file: file, line: line)
    }

    func testTwoHundredLoadsOfOneBlockAreOneSiteOfTwoHundred() throws {
        try assertAgree(loads: 200, per: 1)
    }

    func testTenLoadsOfTwentyBlocks() throws {
        try assertAgree(loads: 10, per: 20)
    }

    /// `--max-live-at-exit` and a suppression of the library's site: the gate's figures are
    /// the report's (total, suppressed = the listed library site, judged = the rest).
    func testGateFiguresAreTheReportsFigures() throws {
        let (program, library) = try fixture()
        let loads = 200, per = 1
        let trace = try HeapGenCLI.record(program, [library, "\(loads)", "\(per)"])
        let r = try HeapGenCLI.report(trace)
        let total = try XCTUnwrap(r.total("liveAtExitBytes"))
        let libBytes = loads * Self.bytesPerLoad(per)

        let dir = try TestPaths.freshDirectory("dlgate")
        let supp = dir + "/supp.txt"
        try "leak:dlcycle_block\n".write(toFile: supp, atomically: true, encoding: .utf8)
        func exact(_ n: Int) -> String {
            let digits = String(n)
            var out = ""
            for (i, ch) in digits.enumerated() {
                if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
                out.append(ch)
            }
            return out + " B"
        }
        // Limit just below what is left after the suppression: fails, naming the exact figures.
        let rest = total - libBytes
        XCTAssertGreaterThan(rest, 0)
        let failing = try HeapGenCLI.run(["check", trace, "--max-live-at-exit", "\(rest - 1)", "--suppressions", supp,
                                          "--output", dir + "/r1.txt"])
        XCTAssertEqual(failing.status, 23, failing.transcript)
        XCTAssertTrue(failing.stderrText.contains("\(exact(rest)) live at exit (limit \(exact(rest - 1)); \(exact(libBytes)) suppressed)"),
                      failing.transcript)
        // At the limit: holds.
        let holding = try HeapGenCLI.run(["check", trace, "--max-live-at-exit", "\(rest)", "--suppressions", supp,
                                          "--output", dir + "/r2.txt"])
        XCTAssertEqual(holding.status, 0, holding.transcript)
        // Without the suppression the whole total is judged.
        let whole = try HeapGenCLI.run(["check", trace, "--max-live-at-exit", "\(total - 1)", "--output", dir + "/r3.txt"])
        XCTAssertEqual(whole.status, 23, whole.transcript)
        XCTAssertTrue(whole.stderrText.contains("\(exact(total)) live at exit (limit \(exact(total - 1)))"), whole.transcript)
    }

    /// With a mark after every load, the library's site grows by PER blocks in every cycle:
    /// one abandoned finding with the exact staircase, not one small site per load.
    func testMarkedLoadsAreOneAbandonedSite() throws {
        let (program, library) = try fixture()
        let loads = 10, per = 20
        let run = try HeapGenCLI.runJSON(program, [library, "\(loads)", "\(per)", "mark"])
        let r = run.report
        XCTAssertEqual(r.cycles, loads, "\(r)")
        let lib = r.findings.filter { $0.frames.first?.function == "dlcycle_block" }
        XCTAssertEqual(lib.count, 1, r.findingsSummary)
        let found = lib.first
        XCTAssertEqual(found?.kind, "abandoned", r.findingsSummary)
        XCTAssertEqual(found?.objectsPerCycle, [Int](repeating: per, count: loads), r.findingsSummary)
        XCTAssertEqual(found?.bytesPerCycle, [Int](repeating: Self.bytesPerLoad(per), count: loads), r.findingsSummary)
        XCTAssertEqual(found?.survivingObjects, (loads - 1) * per, r.findingsSummary)
        let live = Self.liveSites(r)
        XCTAssertEqual(live.sites.first { $0.functions.first == "dlcycle_block" }?.objects, loads * per, "\(live.sites)")
    }
}
