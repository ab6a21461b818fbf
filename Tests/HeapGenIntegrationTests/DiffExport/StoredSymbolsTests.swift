// Self-contained traces: a trace stores what its stacks symbolicate to, so it reports and
// diffs the same after its program was rebuilt in place.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class StoredSymbolsTests: XCTestCase {
    /// The modules' symbols are read while the program runs (the symbolizer is heapgen's
    /// child before the program exits: readahead.c waits until it sees one), and what the
    /// trace stores at the end is still its own stacks' symbols. Without stored symbols
    /// nothing is read: the program sees no symbolizer.
    func testModulesAreReadWhileTheProgramRuns() throws {
        let program = try DiffExportFixture.c("readahead.c")
        let rec = try HeapGenCLI.recording(program, [])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdoutText, "symbolizer while running: yes\n", rec.result.transcript)
        let text = try HeapGenCLI.succeed(["report", rec.trace]).stdoutText
        XCTAssertTrue(text.contains("at keep_blocks ("), text)
        XCTAssertFalse(text.contains("Changed or missing since the recording"), text)

        let bare = try HeapGenCLI.recording(program, [], flags: ["--no-symbols"],
                                          environment: ProcessInfo.processInfo.environment.merging(["READAHEAD_WAIT_MS": "300"]) { _, new in new })
        XCTAssertStatus(bare.result, 0)
        XCTAssertEqual(bare.result.stdoutText, "symbolizer while running: no\n", bare.result.transcript)
    }

    /// rebuilt.c built, recorded, rebuilt at the same path with two functions moved in before
    /// the leaking one (its address changes, its line does not), recorded again. (Built
    /// without sibling calls, so `return malloc(n)` keeps leak_block's frame at -O2.)
    func testTraceOfARebuiltProgramReportsAndDiffsByItsStoredSymbols() throws {
        let dir = try TestPaths.freshDirectory("rebuilt")
        let program = dir + "/rebuilt"
        let source = DiffExportFixture.sourcePath("rebuilt.c")
        func build(_ flags: [String]) throws {
            let r = try runProcess("/usr/bin/cc", ["-O2", "-g", "-std=gnu11", "-Wall", "-fno-optimize-sibling-calls"] + flags + ["-o", program, source], timeout: 120)
            XCTAssertEqual(r.status, 0, r.transcript)
        }
        func address(of symbol: String) throws -> String {
            let r = try runProcess("/usr/bin/nm", [program], timeout: 60)
            let line = String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").first { $0.hasSuffix(" " + symbol) }
            return try XCTUnwrap(line.map { String($0.split(separator: " ")[0]) }, "nm: no \(symbol)")
        }
        let leakLine = try XCTUnwrap(try DiffExportFixture.lines("rebuilt.c", containing: "LEAK_LINE").first)

        try build([])
        let oldAddress = try address(of: "leak_block")
        let before = try HeapGenCLI.record(program)
        let unstored = try HeapGenCLI.record(program, flags: ["--no-symbols"])
        try build(["-DMOVED"])
        XCTAssertNotEqual(try address(of: "leak_block"), oldAddress, "the rebuild moved leak_block")
        let after = try HeapGenCLI.record(program)

        // The old trace still names its frames after the rebuild: leak_block at its line.
        func leakSite(_ trace: String) throws -> [String: Any]? {
            let report = try HeapGenCLI.json(["report", trace, "--format", "json"])
            let sites = (report["liveAtExit"] as? [String: Any])?["sites"] as? [[String: Any]] ?? []
            return sites.first { jsonInt($0["objects"]) == 100 }
        }
        let old = try XCTUnwrap(try leakSite(before), "no site of 100 blocks")
        let frame = try XCTUnwrap((old["frames"] as? [[String: Any]])?.first)
        XCTAssertEqual(frame["function"] as? String, "leak_block", "\(old)")
        XCTAssertEqual(jsonInt(frame["line"]), leakLine, "\(old)")
        XCTAssertEqual((frame["file"] as? String).map { ($0 as NSString).lastPathComponent }, "rebuilt.c", "\(old)")
        let text = try HeapGenCLI.succeed(["report", before]).stdoutText
        XCTAssertTrue(text.contains("at leak_block ("), text)
        XCTAssertFalse(text.contains("Changed or missing since the recording"), text)

        // Without stored symbols the same kind of trace cannot be named any more: the
        // module's build ID no longer matches the file (what the stored symbols fix).
        let bare = try XCTUnwrap(try leakSite(unstored), "no site of 100 blocks")
        XCTAssertNil((bare["frames"] as? [[String: Any]])?.first?["function"] as? String, "\(bare)")
        let bareText = try HeapGenCLI.succeed(["report", unstored]).stdoutText
        XCTAssertTrue(bareText.contains("Changed or missing since the recording"), bareText)

        // The diff of the two builds matches both sites: nothing new, nothing gone.
        let diff = try HeapGenCLI.json(["diff", before, after, "--format", "json"])
        let entries = diff.diffEntries
        let context = entries.map(\.description).joined(separator: "\n")
        XCTAssertEqual(entries.map(\.status), entries.map { _ in "matched" }, context)
        let leak = try XCTUnwrap(entries.first { $0.function == "leak_block" }, context)
        XCTAssertEqual(leak.line, leakLine, context)
        XCTAssertEqual(leak.int("objectsBefore"), 100, context)
        XCTAssertEqual(leak.int("objectsAfter"), 100, context)
        XCTAssertEqual(leak.int("bytesDelta"), 0, context)
        XCTAssertNotNil(entries.first { $0.function == "keep_three" }, context)
        XCTAssertEqual(jsonInt(diff.diffTotals["changedEntries"]), 0, context)
    }
}
