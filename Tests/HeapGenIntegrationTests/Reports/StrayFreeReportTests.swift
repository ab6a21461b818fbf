// Frees of addresses that were not live (LeakSanitizer's double_free tests, valgrind's
// "Invalid free()"): the program's own fate is untouched, and the report says what each was.

import Foundation
import HeapGenTestSupport
import XCTest

final class StrayFreeReportTests: XCTestCase {
    /// One mode of strayfree.c, natively and under `heapgen record`: the same output and
    /// status (glibc's abort included), then the report's `strayFrees` entry.
    private func stray(_ mode: String, status: Int32, line: String = #function) throws -> (entry: [String: Any], report: Report, text: String) {
        let fixture = try ReportFixture.c("strayfree.c", flags: ["-O0"])
        let native = try runProcess(fixture, [mode])
        XCTAssertEqual(native.status, status, native.transcript)
        let dir = try TestPaths.freshDirectory("stray")
        let trace = dir + "/x.trace"
        let traced = try HeapGenCLI.run(["record", "--quiet", "--output", trace, "--", fixture, mode])
        XCTAssertEqual(traced.status, native.status, traced.transcript)
        XCTAssertEqual(traced.stdoutText, native.stdoutText, "the program's output is its own")
        // glibc's message, then heapgen's one line on the signal.
        XCTAssertTrue(traced.stderrText.hasPrefix(native.stderrText), "native:\n\(native.stderrText)\nheapgen:\n\(traced.stderrText)")
        let report = try HeapGenCLI.report(trace)
        let text = try HeapGenCLI.run(["report", trace]).stdoutText
        let entries = report.json["strayFrees"] as? [[String: Any]] ?? []
        XCTAssertEqual(entries.count, 1, "\(report)")
        XCTAssertEqual(report.total("untrackedFrees"), 1, "\(report.totals)")
        return (entries.first ?? [:], report, text)
    }

    private func allocationLine(_ entry: [String: Any]) -> Int? {
        let frames = (entry["frames"] as? [[String: Any]] ?? []).map(Frame.init)
        return frames.first { $0.function == "main" }?.line
    }

    func testADoubleFreeNamesTheBlockAndWhereItWasAllocated() throws {
        let (e, _, text) = try stray("double", status: 134)
        XCTAssertEqual(e["cause"] as? String, "doubleFree")
        XCTAssertEqual(e["function"] as? String, "free")
        XCTAssertEqual(jsonInt(e["blockSize"]), 16)
        XCTAssertEqual(e["address"] as? String, e["blockAddress"] as? String)
        // Events: printf's buffer, the block, its first free, the second.
        XCTAssertEqual(jsonInt(e["blockFreedAtEvent"]).map { $0 + 1 }, jsonInt(e["event"]), "\(e)")
        XCTAssertEqual(allocationLine(e), try ReportFixture.lines("strayfree.c", containing: "ALLOC double").first, "\(e)")
        XCTAssertTrue(text.contains("Frees of addresses that were not live (1)"), text)
        XCTAssertTrue(text.contains(": a double free of a 16 B block freed at event "), text)
        XCTAssertTrue(text.contains("allocated at main ("), text)
    }

    func testAnInteriorPointerIsNamedWithItsOffset() throws {
        let (e, _, text) = try stray("interior", status: 134)
        XCTAssertEqual(e["cause"] as? String, "interiorPointer")
        XCTAssertEqual(jsonInt(e["blockSize"]), 64)
        XCTAssertTrue(e["blockFreedAtEvent"] is NSNull, "the block is live: \(e)")
        let address = (e["address"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) }
        let block = (e["blockAddress"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) }
        XCTAssertEqual(address.flatMap { a in block.map { a - $0 } }, 16, "\(e)")
        XCTAssertEqual(allocationLine(e), try ReportFixture.lines("strayfree.c", containing: "ALLOC interior").first, "\(e)")
        XCTAssertTrue(text.contains("a pointer 16 bytes into a 64 B block (live), not its start"), text)
    }

    func testReallocOfAFreedBlockIsADoubleFree() throws {
        let (e, report, _) = try stray("realloc-freed", status: 0)
        XCTAssertEqual(e["cause"] as? String, "doubleFree")
        XCTAssertEqual(e["function"] as? String, "realloc")
        XCTAssertEqual(allocationLine(e), try ReportFixture.lines("strayfree.c", containing: "ALLOC realloc-freed").first, "\(e)")
        XCTAssertEqual(report.program["exitStatus"].flatMap(jsonInt), 0)
    }

    func testAFreeOfMemoryHeapgenNeverSawAllocatedSaysSo() throws {
        let (e, _, text) = try stray("foreign", status: 0)
        XCTAssertEqual(e["cause"] as? String, "notAllocated")
        XCTAssertTrue(e["blockAddress"] is NSNull, "\(e)")
        XCTAssertEqual((e["frames"] as? [Any])?.count, 0, "\(e)")
        XCTAssertTrue(text.contains(": no block heapgen recorded holds it"), text)
    }

    /// The same binary under valgrind (whose allocator lets the program live on): its
    /// "Invalid free()" names the same offset into a block of the same size, freed or live,
    /// allocated at the same line.
    func testTheExplanationsAgreeWithValgrinds() throws {
        let valgrind = try tool("valgrind", hint: "apt-get install -y valgrind")
        let fixture = try ReportFixture.c("strayfree.c", flags: ["-O0"])
        let pattern = try NSRegularExpression(pattern: #"is (\d+) bytes inside a block of size (\d+) (free'd|alloc'd)"#)
        for (mode, status) in [("double", Int32(134)), ("interior", 134), ("realloc-freed", 0)] {
            let v = try runProcess(valgrind, ["--leak-check=no", fixture, mode], timeout: 300)
            let lines = v.stderrText.components(separatedBy: "\n")
            guard let at = lines.firstIndex(where: { pattern.firstMatch(in: $0, range: NSRange($0.startIndex..., in: $0)) != nil }),
                  let m = pattern.firstMatch(in: lines[at], range: NSRange(lines[at].startIndex..., in: lines[at])) else {
                XCTFail("\(mode): no invalid free in valgrind's output:\n\(v.transcript)")
                continue
            }
            func group(_ i: Int) -> String { String(lines[at][Range(m.range(at: i), in: lines[at])!]) }
            // The allocation's line: after "Block was alloc'd at" for a freed block, else
            // right under the "Address" line.
            let allocStart = group(3) == "free'd" ? (lines.firstIndex { $0.contains("Block was alloc'd at") } ?? at) : at
            let valgrindLine = lines[(allocStart + 1)...].lazy.compactMap { line -> Int? in
                guard let r = line.range(of: #"main \(strayfree\.c:(\d+)\)"#, options: .regularExpression) else { return nil }
                return Int(line[r].dropFirst("main (strayfree.c:".count).dropLast())
            }.first

            let (e, _, _) = try stray(mode, status: status)
            let address = (e["address"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) }
            let block = (e["blockAddress"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) }
            XCTAssertEqual(address.flatMap { a in block.map { Int(a - $0) } }, Int(group(1)), "\(mode): \(e)")
            XCTAssertEqual(jsonInt(e["blockSize"]), Int(group(2)), "\(mode): \(e)")
            XCTAssertEqual(!(e["blockFreedAtEvent"] is NSNull), group(3) == "free'd", "\(mode): \(e)")
            XCTAssertNotNil(valgrindLine, v.stderrText)
            XCTAssertEqual(allocationLine(e), valgrindLine, "\(mode): \(e)\n\(v.stderrText)")
        }
    }

    /// `--fail-on invalid-free`: a double free fails the run with exit 23 after the program's
    /// own abort and output, naming the block's allocation; a `free:` rule excuses it; a clean
    /// program passes with its own status.
    func testAnInvalidFreeGateFailsTheRunAndAFreeRuleExcusesIt() throws {
        let fixture = try ReportFixture.c("strayfree.c", flags: ["-O0"])
        let dir = try TestPaths.freshDirectory("stray-gate")
        let line = try XCTUnwrap(try ReportFixture.lines("strayfree.c", containing: "ALLOC double").first)
        let failed = try HeapGenCLI.run(["run", "--quiet", "--fail-on", "invalid-free", "--junit", dir + "/j.xml",
                                         "--sarif", dir + "/r.sarif", "--", fixture, "double"])
        XCTAssertEqual(failed.status, 23, failed.transcript)
        XCTAssertEqual(failed.stdoutText.split(separator: "\n").first, "mode double", "the program's output comes first, whole")
        XCTAssertTrue(failed.stderrText.contains("free(): double free detected"), "glibc's own abort: \(failed.stderrText)")
        XCTAssertTrue(failed.stderrLines.contains(
            "heapgen: gate failed: 1 invalid free (1 double free): double free of a 16 B block allocated at main (strayfree.c:\(line))"),
            failed.stderrText)
        XCTAssertEqual(failed.stderrLines.last, "SUMMARY: heapgen: gate failed: 1 invalid free (1 double free).")
        let junit = try String(contentsOfFile: dir + "/j.xml", encoding: .utf8)
        XCTAssertTrue(junit.contains("<testcase classname=\"heapgen.invalid-free\" name=\"double free of a 16 B block allocated at main (strayfree.c:\(line))\""), junit)
        XCTAssertTrue(junit.contains("<failure type=\"invalid-free\""), junit)
        let sarif = try String(contentsOfFile: dir + "/r.sarif", encoding: .utf8)
        XCTAssertTrue(sarif.contains("\"ruleId\" : \"invalid-free\""), sarif)
        XCTAssertTrue(sarif.contains("\"startLine\" : \(line)"), sarif)

        // The same trace through `check`, and a rule for the block's allocation.
        let trace = dir + "/x.trace"
        _ = try HeapGenCLI.run(["record", "--quiet", "--output", trace, "--", fixture, "interior"])
        let checked = try HeapGenCLI.run(["check", "--fail-on", "invalid-free", trace])
        XCTAssertEqual(checked.status, 23, checked.transcript)
        XCTAssertTrue(checked.stderrText.contains("1 invalid free (1 interior pointer): free of a pointer 16 bytes into a 64 B block allocated at main"),
                      checked.stderrText)
        let rules = dir + "/free.supp"
        try "# reviewed: the fixture frees inside its block on purpose\nfree:strayfree.c\n".write(toFile: rules, atomically: true, encoding: .utf8)
        let excused = try HeapGenCLI.run(["check", "--fail-on", "invalid-free", "--suppressions", rules, trace])
        XCTAssertEqual(excused.status, 0, excused.transcript)
        XCTAssertEqual(excused.stderrLines.last, "SUMMARY: heapgen: gate passed: no invalid frees; 1 invalid free suppressed.")
        // Other kinds do not excuse a free.
        try "leak:strayfree.c\nfunction:main\n".write(toFile: rules, atomically: true, encoding: .utf8)
        XCTAssertEqual(try HeapGenCLI.run(["check", "--fail-on", "invalid-free", "--suppressions", rules, trace]).status, 23)

        let clean = try HeapGenCLI.run(["run", "--quiet", "--fail-on", "invalid-free", "--", fixture, "none"])
        XCTAssertEqual(clean.status, 0, clean.transcript)
        XCTAssertEqual(clean.stderrLines.last, "SUMMARY: heapgen: gate passed: no invalid frees.")
    }

    /// An invalid free in a forked child fails the run too, as valgrind's --trace-children
    /// reports it, although `run` reports on the parent.
    func testAnInvalidFreeInAForkedChildFailsTheRun() throws {
        let fixture = try ReportFixture.c("strayfree.c", flags: ["-O0"])
        let native = try runProcess(fixture, ["child"])
        XCTAssertEqual(native.status, 0, native.transcript)
        let run = try HeapGenCLI.run(["run", "--quiet", "--fail-on", "invalid-free", "--", fixture, "child"])
        XCTAssertEqual(run.status, 23, run.transcript)
        XCTAssertEqual(run.stdoutText.split(separator: "\n").prefix(2), ["mode child", "survived"], "its output is its own")
        let line = try XCTUnwrap(try ReportFixture.lines("strayfree.c", containing: "ALLOC child").first)
        XCTAssertTrue(run.stderrLines.contains(
            "heapgen: gate failed: 1 invalid free (1 double free): double free (realloc) of a 24 B block allocated at main (strayfree.c:\(line))"),
            run.stderrText)
        XCTAssertTrue(run.stderrLines.contains { $0.hasPrefix("heapgen: strayfree (pid ") }, "each image's verdict is named: \(run.stderrText)")
        // Without the criterion the child's free fails nothing.
        XCTAssertEqual(try HeapGenCLI.run(["run", "--quiet", "--fail-on", "leaked", "--", fixture, "child"]).status, 0)
    }

    /// A healthy program's report has no such list (the key is absent).
    func testAHealthyProgramHasNone() throws {
        let fixture = try ReportFixture.c("strayfree.c", flags: ["-O0"])
        let run = try HeapGenCLI.runJSON(fixture, ["none"])
        XCTAssertNil(run.report.json["strayFrees"], "\(run.report)")
        XCTAssertEqual(run.report.total("untrackedFrees"), 0)
    }
}
