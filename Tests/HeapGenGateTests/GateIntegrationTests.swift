// `heapgen run` / `heapgen check` as a CI leak gate on real processes: exit statuses, the
// program's output, suppressions, baselines, limits, and the JUnit / SARIF / Markdown files.

import Foundation
import HeapGenTestSupport
import FoundationXML
import HeapGenGate
import HeapGenReport
import XCTest

final class GateIntegrationTests: XCTestCase {
    func gateFixture() throws -> String { try GateFixture.c("gate.c") }

    func write(_ text: String, _ name: String) throws -> String {
        let path = try TestPaths.freshDirectory("files") + "/" + name
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    func testFailOnAbandonedExits23OnLeakyAndProgramStatusOtherwise() throws {
        let fixture = try gateFixture()
        let leaky = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--", fixture, "leaky"])
        XCTAssertEqual(leaky.status, 23, leaky.transcript)
        let line = try GateFixture.lines("gate.c", containing: "struct node *n = malloc").first!
        XCTAssertTrue(leaky.stderrLines.contains("heapgen: gate failed: 1 abandoned site (+192 B per cycle): blocks at leak_session (gate.c:\(line))"),
                      leaky.transcript)
        XCTAssertEqual(leaky.stderrLines.last, "SUMMARY: heapgen: gate failed: 1 abandoned site (+192 B per cycle).", leaky.transcript)
        XCTAssertTrue(leaky.stdoutText.contains("Abandoned memory"), "the report still goes to stdout:\n\(leaky.transcript)")

        let clean = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--", fixture, "clean"])
        XCTAssertEqual(clean.status, 0, clean.transcript)
        XCTAssertTrue(clean.stderrLines.last?.hasPrefix("SUMMARY: heapgen: gate passed: no abandoned memory above 0 B per cycle over 7 cycles") == true,
                      clean.transcript)
        // The gate holds: the program's own status; it fails: 23 whatever the program said.
        let cleanFailing = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--", fixture, "clean", "3"])
        XCTAssertEqual(cleanFailing.status, 3, cleanFailing.transcript)
        let leakyFailing = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--", fixture, "leaky", "3"])
        XCTAssertEqual(leakyFailing.status, 23, leakyFailing.transcript)
        // Without gate options, run keeps its old behaviour.
        let plain = try HeapGenCLI.run(["run", "--", fixture, "leaky"])
        XCTAssertEqual(plain.status, 0, plain.transcript)
        XCTAssertFalse(plain.stderrText.contains("SUMMARY: heapgen: gate"), plain.transcript)
        // A bad criterion is a usage error.
        let bad = try HeapGenCLI.run(["run", "--fail-on", "abandoned,leeks", "--", fixture, "leaky"])
        XCTAssertEqual(bad.status, 64, bad.transcript)
        XCTAssertTrue(bad.stderrText.contains("leeks"), bad.transcript)
    }

    /// LSan and gperftools lose buffered stdout when they fail a run from an atexit hook; the
    /// gate runs after the program has exited normally, so nothing is lost.
    func testProgramOutputSurvivesAFailingGateByteForByte() throws {
        let fixture = try gateFixture()
        let out = try TestPaths.freshDirectory("out") + "/report.txt"
        let r = try HeapGenCLI.run(["run", "--output", out, "--fail-on", "abandoned", "--", fixture, "leaky", "0"])
        XCTAssertEqual(r.status, 23, r.transcript)
        XCTAssertEqual(r.stdoutText, "gate-fixture: mode leaky\ngate-fixture: last words, no newline, status 0", r.transcript)
        XCTAssertTrue(r.stderrText.hasPrefix("gate-fixture: stderr line\n"), r.transcript)
    }

    func testSuppressionFileTurnsAFailureIntoSuccessAndIsCounted() throws {
        let fixture = try gateFixture()
        let supp = try write("# known: the session registry\nleak:leak_session\n\ntype:NoSuchType\n", "lsan.supp")
        let r = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--suppressions", supp, "--print-suppressions",
                                     "--", fixture, "leaky"])
        XCTAssertEqual(r.status, 0, r.transcript)
        let lines = r.stderrLines
        XCTAssertTrue(lines.contains("Suppressions used:"), r.transcript)
        let used = lines.first { $0.hasSuffix(" leak:leak_session") }
        let columns = used?.split(separator: " ").map(String.init) ?? []
        XCTAssertEqual(columns.first, "1", "one finding matched:\n\(r.transcript)")
        XCTAssertEqual(columns.dropFirst().first, "1344", "bytes left behind by 7 judged cycles of 3 x 64 B:\n\(r.transcript)")
        XCTAssertTrue(lines.contains { $0.hasSuffix(" type:NoSuchType") && $0.split(separator: " ").first == "0" }, r.transcript)
        XCTAssertTrue(lines.contains { $0.hasPrefix("heapgen: suppressed by leak:leak_session (lsan.supp:2): blocks at leak_session") },
                      r.transcript)
        XCTAssertTrue(r.stdoutText.contains("Gate: suppressed by leak:leak_session"), "the report lists it:\n\(r.transcript)")
        XCTAssertTrue(lines.last?.contains("1 suppressed") == true, r.transcript)
    }

    func testBadSuppressionFileIsAUsageErrorBeforeTheProgramRuns() throws {
        let fixture = try gateFixture()
        let supp = try write("leak:ok\n# fine\nlek:leak_session\n", "bad.supp")
        let r = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--suppressions", supp, "--", fixture, "leaky"])
        XCTAssertEqual(r.status, 64, r.transcript)
        XCTAssertTrue(r.stderrText.contains("bad.supp:3: unknown kind 'lek'"), r.transcript)
        XCTAssertEqual(r.stdout.count, 0, "the program did not run:\n\(r.transcript)")
        let missing = try HeapGenCLI.run(["run", "--suppressions", "/nonexistent.supp", "--", fixture, "leaky"])
        XCTAssertEqual(missing.status, 64, missing.transcript)
        XCTAssertTrue(missing.stderrText.contains("/nonexistent.supp"), missing.transcript)
    }

    func testTypeSuppressionsOnSwiftTypes() throws {
        let fixture = try GateFixture.swift("SwiftTypes", module: "GateFixture")
        let all = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--", fixture])
        XCTAssertEqual(all.status, 23, all.transcript)
        XCTAssertTrue(all.stderrText.contains("GateFixture.Session at openSession"), all.transcript)
        XCTAssertTrue(all.stderrText.contains("GateFixture.Token at issueToken"), all.transcript)

        let one = try write("type:^GateFixture.Session$\n", "types.supp")
        let r1 = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--suppressions", one, "--", fixture])
        XCTAssertEqual(r1.status, 23, "Token still fails:\n\(r1.transcript)")
        XCTAssertTrue(r1.stderrLines.contains { $0.hasPrefix("heapgen: suppressed by type:^GateFixture.Session$") }, r1.transcript)
        XCTAssertFalse(r1.stderrLines.first { $0.hasPrefix("heapgen: gate failed") }?.contains("Session") ?? true, r1.transcript)

        let both = try write("type:^GateFixture.Session$\ntype:GateFixture.Tok*\n", "types2.supp")
        let r2 = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--suppressions", both, "--", fixture])
        XCTAssertEqual(r2.status, 0, r2.transcript)
        XCTAssertTrue(r2.stdoutText.contains("swift-types: 8 sessions, 8 tokens"), r2.transcript)
    }

    func testBaselineAcceptsKnownFindingsAndReportsFixedOnes() throws {
        let fixture = try gateFixture()
        let dir = try TestPaths.freshDirectory("baseline")
        let path = dir + "/heapgen-baseline.json"
        let w = try HeapGenCLI.run(["run", "--write-baseline", path, "--", fixture, "leaky"])
        XCTAssertEqual(w.status, 0, w.transcript)
        XCTAssertTrue(w.stderrText.contains("wrote 1 baseline entry"), w.transcript)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(text.contains("heapgen-baseline/1") && text.contains("\"function\" : \"leak_session\"")
                      && text.contains("\"file\" : \"gate.c\""), text)
        XCTAssertFalse(text.contains("0x"), "no addresses in a baseline:\n\(text)")
        XCTAssertFalse(text.contains(TestPaths.repoRoot), "no directories in signatures:\n\(text)")

        // Writing a baseline is not a failure, even with a gate that today's findings break.
        let second = dir + "/second.json"
        let w2 = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--write-baseline", second, "--", fixture, "leaky"])
        XCTAssertEqual(w2.status, 0, w2.transcript)
        XCTAssertTrue(w2.stderrText.contains("not failing: --write-baseline records today's findings"), w2.transcript)
        XCTAssertEqual(try Baseline.load(path: second).entries.map(\.signature), try Baseline.load(path: path).entries.map(\.signature))

        let known = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--baseline", path, "--", fixture, "leaky"])
        XCTAssertEqual(known.status, 0, known.transcript)
        XCTAssertTrue(known.stderrLines.contains { $0.hasPrefix("heapgen: known (baseline): blocks at leak_session") }, known.transcript)
        XCTAssertTrue(known.stdoutText.contains("Gate: known (baseline)"), known.transcript)

        // A baseline with one more entry, for a site that is gone: fixed.
        var baseline = try Baseline.load(path: path)
        var gone = baseline.entries[0]
        gone.signature.frames[0].function = "old_leak"
        gone.site = "blocks at old_leak (gate.c:12)"
        baseline.entries.append(gone)
        let stale = dir + "/stale.json"
        try baseline.encoded().write(toFile: stale, atomically: false, encoding: .utf8)
        let r = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--baseline", stale, "--write-baseline", stale,
                                     "--", fixture, "leaky"])
        XCTAssertEqual(r.status, 0, r.transcript)
        XCTAssertTrue(r.stderrLines.contains("heapgen: fixed — remove from the baseline: blocks at old_leak (gate.c:12)"), r.transcript)
        // --write-baseline with --baseline rewrote it without the fixed entry.
        XCTAssertEqual(try Baseline.load(path: stale).entries.map(\.signature), try Baseline.load(path: path).entries.map(\.signature))

        // A new leak is not in the baseline: the gate fails.
        let small = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--baseline", path, "--", fixture, "small"])
        XCTAssertEqual(small.status, 23, small.transcript)
        XCTAssertTrue(small.stderrText.contains("blocks at leak_bytes"), small.transcript)
        XCTAssertTrue(small.stderrText.contains("heapgen: fixed — remove from the baseline: blocks at leak_session"), small.transcript)

        let broken = try write("{\"schema\": \"something/2\"}", "broken.json")
        let b = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--baseline", broken, "--", fixture, "leaky"])
        XCTAssertEqual(b.status, 64, b.transcript)
        XCTAssertTrue(b.stderrText.contains("broken.json: schema is 'something/2'"), b.transcript)
    }

    /// Two runs put the program at different addresses (ASLR); the signatures agree.
    func testSignaturesAreStableAcrossRuns() throws {
        let fixture = try gateFixture()
        let (r1, a) = try HeapGenCLI.runJSON(fixture, ["leaky"])
        let (r2, b) = try HeapGenCLI.runJSON(fixture, ["leaky"])
        XCTAssertEqual(r1.status, 0, r1.transcript)
        XCTAssertEqual(r2.status, 0, r2.transcript)
        let fa = a.findings(.abandoned), fb = b.findings(.abandoned)
        XCTAssertEqual(fa.count, 1)
        XCTAssertEqual(fa.map(BaselineSignature.init), fb.map(BaselineSignature.init))
        XCTAssertNotEqual(fa.first?.frames.first?.address, fb.first?.frames.first?.address, "ASLR moved the program")
        XCTAssertEqual(fa.first.map { BaselineSignature($0).fingerprint }, fb.first.map { BaselineSignature($0).fingerprint })
    }

    /// A private Swift type's runtime name holds an ASLR address: names, baselines and
    /// diffs must not change from one run to the next because of it.
    func testPrivateSwiftTypesHaveTheSameNameInEveryRun() throws {
        let fixture = try GateFixture.swift("PrivateTypes", module: "PrivateFixture")
        let dir = try TestPaths.freshDirectory("private-types")
        let baseline = dir + "/baseline.json"
        let first = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--write-baseline", baseline,
                                        "--trace", dir + "/1.trace", "--", fixture])
        XCTAssertEqual(first.status, 0, first.transcript)
        XCTAssertTrue(first.stdoutText.contains("private-types: 8 entries"), first.transcript)
        XCTAssertTrue(first.stderrText.contains("PrivateFixture.SessionRegistry.(private).Entry"), first.transcript)
        XCTAssertFalse(first.transcript.contains("unknown context at"), first.transcript)

        let second = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--baseline", baseline,
                                         "--trace", dir + "/2.trace", "--", fixture])
        XCTAssertEqual(second.status, 0, "run 1's baseline holds in run 2:\n\(second.transcript)")
        XCTAssertFalse(second.stderrText.contains("fixed"), second.transcript)

        let diff = try HeapGenCLI.json(["diff", dir + "/1.trace", dir + "/2.trace", "--format", "json"])
        let entries = diff["entries"] as? [[String: Any]] ?? []
        let registry = entries.filter { ($0["typeName"] as? String) == "PrivateFixture.SessionRegistry.(private).Entry" }
        XCTAssertEqual(registry.count, 1, "\(entries)")
        XCTAssertEqual(registry.first?["status"] as? String, "matched")
        let totals = diff["totals"] as? [String: Any]
        XCTAssertEqual((totals?["addedEntries"] as? NSNumber)?.intValue, 0, "no phantom new sites: \(entries)")
        XCTAssertEqual((totals?["removedEntries"] as? NSNumber)?.intValue, 0, "no phantom gone sites: \(entries)")
    }

    /// A launcher (here /bin/sh) runs the programs that mark generations: the report is
    /// on their traces, not the launcher's, and the gate judges each of them.
    func testLaunchedProgramsAreReportedAndJudged() throws {
        let fixture = try gateFixture()
        let dir = try TestPaths.freshDirectory("launcher")
        let script = "\(fixture) clean; \(fixture) leaky; true"
        let r = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--trace", dir + "/sh.trace", "--",
                                    "/bin/sh", "-c", script])
        XCTAssertEqual(r.status, 23, r.transcript)
        // Both gate runs are reported (each report's header names its program), the shell
        // is not. (A header may follow the program's last output on its line: gate.c ends
        // without a newline.)
        XCTAssertEqual(r.stdoutText.components(separatedBy: "heapgen: gate (pid ").count - 1, 2, r.transcript)
        XCTAssertFalse(r.stdoutText.contains("heapgen: dash (pid ") || r.stdoutText.contains("heapgen: sh (pid "), r.transcript)
        XCTAssertTrue(r.stdoutText.contains("Other traces"), r.transcript)
        // The verdict names the leaking run's site and which program it was in.
        XCTAssertTrue(r.stderrText.contains("gate failed: "), r.transcript)
        XCTAssertTrue(r.stderrText.contains("leak_session"), r.transcript)
        XCTAssertEqual(r.stderrLines.filter { $0.hasPrefix("heapgen: gate (pid ") }.count, 2, r.transcript)
        XCTAssertEqual(r.stderrLines.filter { $0.hasPrefix("SUMMARY: heapgen: gate failed") }.count, 1, r.transcript)
        XCTAssertEqual(r.stderrLines.filter { $0.hasPrefix("SUMMARY: heapgen: gate passed") }.count, 1, r.transcript)

        // `report` on the shell's trace lists the recording's other traces.
        let shell = try HeapGenCLI.json(["report", dir + "/sh.trace", "--format", "json"])
        let others = shell["otherTraces"] as? [String] ?? []
        XCTAssertGreaterThanOrEqual(others.count, 2, "\(shell)")
        XCTAssertTrue(others.allSatisfy { $0.hasPrefix(dir + "/sh.trace.") }, "\(others)")
    }

    func testMaxLiveAtExit() throws {
        let fixture = try gateFixture()
        // leaky keeps 8 x 3 x 64 = 1,536 B to the end, plus stdio's buffer: measure the total.
        let (_, report) = try HeapGenCLI.runJSON(fixture, ["leaky"])
        let total = Int(report.liveAtExit.bytes)
        XCTAssertGreaterThanOrEqual(total, 1536)
        let over = try HeapGenCLI.run(["run", "--max-live-at-exit", String(total - 1), "--", fixture, "leaky"])
        XCTAssertEqual(over.status, 23, over.transcript)
        let limit = (total - 1).formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US")))
        XCTAssertTrue(over.stderrLines.contains { $0.hasPrefix("heapgen: gate failed: ") && $0.contains("live at exit (limit \(limit) B)") },
                      over.transcript)
        let under = try HeapGenCLI.run(["run", "--max-live-at-exit", String(total), "--", fixture, "leaky"])
        XCTAssertEqual(under.status, 0, under.transcript)
        // After suppressions: the 1,536 B of session blocks no longer count.
        let supp = try write("leak:leak_session\n", "live.supp")
        let suppressed = try HeapGenCLI.run(["run", "--max-live-at-exit", String(total - 1), "--suppressions", supp,
                                              "--", fixture, "leaky"])
        XCTAssertEqual(suppressed.status, 0, suppressed.transcript)
        XCTAssertTrue(suppressed.stderrLines.last?.contains("\((total - 1536).formatted(.number.grouping(.automatic).locale(Locale(identifier: "en_US")))) B live at exit") == true,
                      suppressed.transcript)
    }

    func testGrowthGateWithAPerCycleLimit() throws {
        let fixture = try gateFixture()
        let small = try HeapGenCLI.run(["run", "--fail-on", "growth", "--max-bytes-per-cycle", "1KB", "--", fixture, "small"])
        XCTAssertEqual(small.status, 0, small.transcript)
        XCTAssertTrue(small.stderrLines.last?.contains("live heap +64 B per cycle (limit 1,024 B)") == true, small.transcript)
        let big = try HeapGenCLI.run(["run", "--fail-on", "growth", "--max-bytes-per-cycle", "1 KiB", "--", fixture, "big"])
        XCTAssertEqual(big.status, 23, big.transcript)
        XCTAssertTrue(big.stderrLines.contains("heapgen: gate failed: live heap grew +8,192 B per cycle over 7 cycles (limit 1,024 B)"),
                      big.transcript)
        // --max-bytes-per-cycle alone gates abandoned sites above it.
        let alone = try HeapGenCLI.run(["run", "--max-bytes-per-cycle", "1KB", "--", fixture, "small"])
        XCTAssertEqual(alone.status, 0, alone.transcript)
        let aloneBig = try HeapGenCLI.run(["run", "--max-bytes-per-cycle", "1KB", "--", fixture, "big"])
        XCTAssertEqual(aloneBig.status, 23, aloneBig.transcript)
    }

    func testCheckGivesTheSameVerdictAsRun() throws {
        let fixture = try gateFixture()
        let leakyTrace = try HeapGenCLI.record(fixture, ["leaky"])
        let cleanTrace = try HeapGenCLI.record(fixture, ["clean"])
        let run = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--", fixture, "leaky"])
        let check = try HeapGenCLI.run(["check", leakyTrace, "--fail-on", "abandoned"])
        XCTAssertEqual(check.status, 23, check.transcript)
        XCTAssertEqual(check.stderrLines.filter { $0.hasPrefix("heapgen: gate") || $0.hasPrefix("SUMMARY:") },
                       run.stderrLines.filter { $0.hasPrefix("heapgen: gate") || $0.hasPrefix("SUMMARY:") })
        XCTAssertTrue(check.stdoutText.contains("Abandoned memory"), check.transcript)
        // check gates on abandoned memory by default.
        XCTAssertEqual(try HeapGenCLI.run(["check", leakyTrace]).status, 23)
        XCTAssertEqual(try HeapGenCLI.run(["check", cleanTrace, "--fail-on", "abandoned"]).status, 0)
        // Bad traces as elsewhere.
        XCTAssertEqual(try HeapGenCLI.run(["check", "/nonexistent.trace"]).status, 66)
        let junk = try write("not a trace", "junk.trace")
        XCTAssertEqual(try HeapGenCLI.run(["check", junk]).status, 65)
        XCTAssertEqual(try HeapGenCLI.run(["check", leakyTrace, "--max-bytes-per-cycle", "lots"]).status, 64)
    }

    func testJUnitSARIFAndMarkdownOutputs() throws {
        let fixture = try gateFixture()
        let dir = try TestPaths.freshDirectory("ci")
        let supp = try write("function:^nothing$\n", "ci.supp")
        let leakLine = try GateFixture.lines("gate.c", containing: "struct node *n = malloc").first!
        // Run from the repository root, as CI does: SARIF paths are relative to it.
        let r = try HeapGenCLI.run(["run", "--fail-on", "abandoned,growth", "--suppressions", supp,
                                     "--junit", dir + "/junit.xml", "--sarif", dir + "/heapgen.sarif",
                                     "--summary", dir + "/summary.md", "--", fixture, "leaky"], directory: TestPaths.repoRoot)
        XCTAssertEqual(r.status, 23, r.transcript)
        for name in ["junit.xml", "heapgen.sarif", "summary.md"] {
            let mode = (try FileManager.default.attributesOfItem(atPath: dir + "/" + name)[.posixPermissions] as? NSNumber)?.intValue
            XCTAssertEqual(mode, 0o600, name)
        }

        // JUnit: one testcase for the finding (failing) and one for the growth criterion (failing).
        let xml = try XMLDocument(contentsOf: URL(fileURLWithPath: dir + "/junit.xml"))
        let suites = try xml.nodes(forXPath: "//testsuite")
        XCTAssertEqual(suites.count, 1)
        XCTAssertEqual((suites.first as? XMLElement)?.attribute(forName: "name")?.stringValue, "heapgen")
        let cases = try xml.nodes(forXPath: "//testcase")
        let failures = try xml.nodes(forXPath: "//testcase/failure")
        XCTAssertEqual(cases.count, 2, xml.xmlString)
        XCTAssertEqual(failures.count, 2, xml.xmlString)
        XCTAssertEqual((suites.first as? XMLElement)?.attribute(forName: "failures")?.stringValue, "2")
        let failure = failures.compactMap { $0 as? XMLElement }.first { $0.attribute(forName: "type")?.stringValue == "abandoned" }
        XCTAssertTrue(failure?.stringValue?.contains("+192 B per cycle") == true, xml.xmlString)
        XCTAssertTrue(failure?.stringValue?.contains("at leak_session (") == true, "the stack:\n\(xml.xmlString)")

        // A clean run: one passing testcase.
        let cleanJUnit = dir + "/clean.xml"
        let c = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--junit", cleanJUnit, "--", fixture, "clean"])
        XCTAssertEqual(c.status, 0, c.transcript)
        let cleanXML = try XMLDocument(contentsOf: URL(fileURLWithPath: cleanJUnit))
        XCTAssertEqual(try cleanXML.nodes(forXPath: "//testcase").count, 1)
        XCTAssertEqual(try cleanXML.nodes(forXPath: "//testcase/failure").count, 0)
        XCTAssertEqual((try cleanXML.nodes(forXPath: "//testcase").first as? XMLElement)?.attribute(forName: "name")?.stringValue,
                       "no abandoned memory")

        // SARIF: valid JSON, 2.1.0, the fixture's file and line in a result.
        let sarifData = try Data(contentsOf: URL(fileURLWithPath: dir + "/heapgen.sarif"))
        let sarif = try XCTUnwrap(try JSONSerialization.jsonObject(with: sarifData) as? [String: Any])
        XCTAssertEqual(sarif["version"] as? String, "2.1.0")
        let run = try XCTUnwrap((sarif["runs"] as? [[String: Any]])?.first)
        let driver = (run["tool"] as? [String: Any])?["driver"] as? [String: Any]
        XCTAssertEqual(driver?["name"] as? String, "heapgen")
        XCTAssertEqual((driver?["rules"] as? [[String: Any]])?.compactMap { $0["id"] as? String },
                       ["abandoned", "leaked", "cache-growth", "live-at-exit", "invalid-free"])
        let results = run["results"] as? [[String: Any]] ?? []
        XCTAssertEqual(results.compactMap { $0["ruleId"] as? String }, ["abandoned", "cache-growth"])
        let physical = ((results.first?["locations"] as? [[String: Any]])?.first?["physicalLocation"]) as? [String: Any]
        XCTAssertEqual((physical?["artifactLocation"] as? [String: Any])?["uri"] as? String, "Tests/HeapGenGateTests/Fixtures/gate.c")
        XCTAssertEqual((physical?["artifactLocation"] as? [String: Any])?["uriBaseId"] as? String, "%SRCROOT%")
        XCTAssertEqual((physical?["region"] as? [String: Any])?["startLine"] as? Int, leakLine)
        XCTAssertTrue(((results.first?["message"] as? [String: Any])?["text"] as? String)?.contains("+192 B per cycle") == true)

        // Markdown: the verdict and the table.
        let md = try String(contentsOfFile: dir + "/summary.md", encoding: .utf8)
        XCTAssertTrue(md.hasPrefix("### ❌ heapgen: leak gate failed"), md)
        XCTAssertTrue(md.contains("| status | kind | type | per cycle | left behind | where |"), md)
        XCTAssertTrue(md.contains("| ❌ failing | abandoned | — | +3 objects / +192 B | 1,344 B | `leak_session` (gate.c:\(leakLine)) |"), md)
        XCTAssertTrue(md.contains("- ❌ live heap grew +192 B per cycle over 7 cycles (limit 0 B)"), md)

        // Never through a symbolic link.
        let link = dir + "/link.xml"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: dir + "/target.xml")
        let l = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--junit", link, "--", fixture, "leaky"])
        XCTAssertEqual(l.status, 125, l.transcript)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/target.xml"))
    }
}
