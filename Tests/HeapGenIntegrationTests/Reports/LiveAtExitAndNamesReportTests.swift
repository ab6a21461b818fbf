// Issue 9, the report's side: start-up runtime blocks (libstdc++'s emergency pool)
// summed apart from the user's live-at-exit sites, allocation wrappers skipped when a
// site is named (known ones and --alloc-fn), long C++ names shortened, and the program
// named as it was started (a symbolic link's name) with its empty arguments quoted.

import Foundation
import HeapGenTestSupport
import XCTest

final class LiveAtExitAndNamesReportTests: XCTestCase {
    /// A C++ program: libstdc++'s 72,704-byte emergency pool (bookworm's libstdc++ 12) is
    /// not a site of the program's; it is counted in the totals and in `startup`, and the
    /// text shows it on one line of its own.
    func testStartupPoolIsSummedApartAndTotalsStayExact() throws {
        let exe = try ReportFixture.cxx("startup.cpp")
        let run = try HeapGenCLI.runJSON(exe)
        XCTAssertEqual(run.result.stdoutText, "startup: done\n", run.result.transcript)
        let live = try XCTUnwrap(run.report.json["liveAtExit"] as? [String: Any], "\(run.report)")
        let startup = try XCTUnwrap(live["startup"] as? [String: Any], "\(run.report)")
        let parts = try XCTUnwrap(startup["parts"] as? [[String: Any]], "\(run.report)")
        XCTAssertEqual(parts.count, 1, "\(startup)")
        XCTAssertEqual(parts.first?["name"] as? String, "libstdc++ emergency exception-handling pool", "\(startup)")
        XCTAssertTrue((parts.first?["module"] as? String ?? "").hasSuffix("/libstdc++.so.6"), "\(startup)")
        XCTAssertEqual(jsonInt(startup["objects"]), 1, "\(startup)")
        XCTAssertEqual(jsonInt(startup["bytes"]), 72_704, "\(startup)")
        XCTAssertEqual(jsonInt(parts.first?["bytes"]), 72_704, "\(startup)")

        // No listed site is the pool; listed sites + start-up blocks = every live block.
        let sites = try XCTUnwrap(live["sites"] as? [[String: Any]], "\(run.report)")
        let siteObjects = sites.compactMap { jsonInt($0["objects"]) }.reduce(0, +)
        let siteBytes = sites.compactMap { jsonInt($0["bytes"]) }.reduce(0, +)
        XCTAssertEqual(jsonInt(live["objects"]), siteObjects + 1, "\(live)")
        XCTAssertEqual(jsonInt(live["bytes"]), siteBytes + 72_704, "\(live)")
        XCTAssertEqual(run.report.total("liveAtExitBytes"), jsonInt(live["bytes"]), "\(run.report)")
        // main's three new char[100] are a site of their own.
        XCTAssertTrue(sites.contains { jsonInt($0["objects"]) == 3 && jsonInt($0["bytes"]) == 300 }, "\(sites)")
        XCTAssertFalse(sites.contains { jsonInt($0["bytes"]) == 72_704 }, "\(sites)")

        // The text: the pool on its own line, never among the sites.
        let text = try HeapGenCLI.succeed(["report", run.trace]).stdoutText
        let liveLines = text.components(separatedBy: "\n").drop { !$0.hasPrefix("Live at exit") }
        XCTAssertTrue(liveLines.contains(
            "    start-up runtime blocks: 1 block, 72,704 bytes (libstdc++ emergency exception-handling pool, allocated as their libraries loaded; not listed)"),
            text)
        XCTAssertFalse(text.contains("72.7 kB"), text)
        XCTAssertFalse(text.contains("libstdc++.so.6)"), text)
        XCTAssertTrue(liveLines.contains { $0.hasPrefix("     300 B in 3 blocks") && $0.contains("at main (Fixtures/startup.cpp:") }, text)
    }

    /// The pool of a libstdc++ the program loads at run time (the java launcher's LoadJavaVM
    /// does): the program's dlopen is below the loader, whose constructor call allocated it;
    /// it is a start-up part too, not 72.7 kB at the program's load_runtime. The loader's own
    /// blocks for the new library stay the program's site.
    func testAPoolOfALibraryLoadedAtRunTimeIsAStartupBlock() throws {
        let exe = try ReportFixture.c("dlruntime.c")
        let run = try HeapGenCLI.runJSON(exe)
        XCTAssertEqual(run.result.stdoutText.split(separator: "\n").first, "loaded", run.result.transcript)
        let live = try XCTUnwrap(run.report.json["liveAtExit"] as? [String: Any], "\(run.report)")
        let startup = try XCTUnwrap(live["startup"] as? [String: Any], "\(run.report)")
        let parts = try XCTUnwrap(startup["parts"] as? [[String: Any]], "\(run.report)")
        XCTAssertEqual(parts.map { $0["name"] as? String }, ["libstdc++ emergency exception-handling pool"], "\(startup)")
        XCTAssertEqual(jsonInt(startup["bytes"]), 72_704, "\(startup)")
        let sites = try XCTUnwrap(live["sites"] as? [[String: Any]], "\(run.report)")
        XCTAssertFalse(sites.contains { jsonInt($0["bytes"]) ?? 0 >= 72_704 }, "\(sites)")
        let text = try HeapGenCLI.succeed(["report", run.trace]).stdoutText
        XCTAssertTrue(text.contains("start-up runtime blocks: 1 block, 72,704 bytes (libstdc++ emergency exception-handling pool, "
                                    + "allocated as their libraries loaded; not listed)"), text)
        // The loader's own blocks for the new library are the program's dlopen's, listed as before.
        XCTAssertTrue(text.contains("at main (Fixtures/dlruntime.c:19)"), text)
        XCTAssertFalse(text.contains("72.7 kB"), text)
    }

    /// A Swift program (the demo): the pool is its own part, the runtime's other start-up
    /// blocks are named after their libraries, and the parts add up.
    func testSwiftStartupBlocksAddUp() throws {
        let trace = try HeapGenCLI.record(try TestPaths.demo())
        let r = try HeapGenCLI.report(trace)
        let live = try XCTUnwrap(r.json["liveAtExit"] as? [String: Any], "\(r)")
        let startup = try XCTUnwrap(live["startup"] as? [String: Any], "\(r)")
        let parts = try XCTUnwrap(startup["parts"] as? [[String: Any]], "\(r)")
        let pool = try XCTUnwrap(parts.first { $0["name"] as? String == "libstdc++ emergency exception-handling pool" }, "\(parts)")
        XCTAssertEqual(jsonInt(pool["objects"]), 1, "\(parts)")
        XCTAssertEqual(jsonInt(pool["bytes"]), 72_704, "\(parts)")
        for part in parts where part["name"] as? String != "libstdc++ emergency exception-handling pool" {
            let module = (part["module"] as? String).map { ($0 as NSString).lastPathComponent } ?? "?"
            XCTAssertEqual(part["name"] as? String, "start-up blocks of \(module)", "\(part)")
        }
        XCTAssertEqual(jsonInt(startup["objects"]), parts.compactMap { jsonInt($0["objects"]) }.reduce(0, +), "\(startup)")
        XCTAssertEqual(jsonInt(startup["bytes"]), parts.compactMap { jsonInt($0["bytes"]) }.reduce(0, +), "\(startup)")
        let sites = live["sites"] as? [[String: Any]] ?? []
        XCTAssertGreaterThanOrEqual(jsonInt(live["objects"]) ?? 0,
                                    sites.compactMap { jsonInt($0["objects"]) }.reduce(0, +) + (jsonInt(startup["objects"]) ?? 0))
    }

    /// Sites are named after the first frame past the allocation wrappers: `zmalloc` is
    /// known; `my_alloc` is named with --alloc-fn (on report, run, check and diff).
    func testAllocationWrappersNameTheirCaller() throws {
        let exe = try ReportFixture.c("wrappers.c", flags: ["-O0"])
        let source = ReportFixture.sourcePath("wrappers.c")
        let sessionLine = try XCTUnwrap(try ReportFixture.lines("wrappers.c", containing: "kept[i] = zmalloc(48)").first)
        let tokenLine = try XCTUnwrap(try ReportFixture.lines("wrappers.c", containing: "kept[32 + i] = my_alloc(16)").first)
        let myAllocLine = try XCTUnwrap(try ReportFixture.lines("wrappers.c", containing: "void *p = malloc(n);").last)

        let run = try HeapGenCLI.runJSON(exe)
        XCTAssertEqual(run.result.stdoutText, "wrappers: done\n", run.result.transcript)
        let r = run.report
        XCTAssertEqual(r.findings(kind: "abandoned").count, 2, r.findingsSummary)
        // zmalloc is skipped without being asked.
        let session = try XCTUnwrap(r.findings.first { $0.bytesPerCycle.last == 48 }, r.findingsSummary)
        XCTAssertEqual(session.userFrame?.function, "store_session", session.summary)
        XCTAssertEqual(session.userFrame?.file, source, session.summary)
        XCTAssertEqual(session.userFrame?.line, sessionLine, session.summary)
        XCTAssertEqual(session.frames.first?.function, "zmalloc", session.summary)
        // my_alloc is not known: it names its site until --alloc-fn says it is a wrapper.
        let token = try XCTUnwrap(r.findings.first { $0.bytesPerCycle.last == 16 }, r.findingsSummary)
        XCTAssertEqual(token.userFrame?.function, "my_alloc", token.summary)
        XCTAssertEqual(token.userFrame?.line, myAllocLine, token.summary)

        let named = try HeapGenCLI.report(run.trace, flags: ["--alloc-fn", "my_alloc"])
        let token2 = try XCTUnwrap(named.findings.first { $0.bytesPerCycle.last == 16 }, named.findingsSummary)
        XCTAssertEqual(token2.userFrame?.function, "store_token", token2.summary)
        XCTAssertEqual(token2.userFrame?.line, tokenLine, token2.summary)
        // A prefix pattern does the same.
        let prefixed = try HeapGenCLI.report(run.trace, flags: ["--alloc-fn", "my_*"])
        XCTAssertEqual(prefixed.findings.first { $0.bytesPerCycle.last == 16 }?.userFrame?.function, "store_token",
                       prefixed.findingsSummary)

        // The text report names the callers, in the findings and live at exit.
        let text = try HeapGenCLI.succeed(["report", run.trace, "--alloc-fn", "my_alloc"]).stdoutText
        XCTAssertTrue(text.contains("blocks from store_session  +1 object / +48 B per cycle"), text)
        XCTAssertTrue(text.contains("blocks from store_token  +1 object / +16 B per cycle"), text)
        XCTAssertTrue(text.contains("288 B in 6 blocks  at store_session (Fixtures/wrappers.c:\(sessionLine))"), text)
        XCTAssertTrue(text.contains("96 B in 6 blocks  at store_token (Fixtures/wrappers.c:\(tokenLine))"), text)
        XCTAssertFalse(text.contains("from zmalloc") || text.contains("from my_alloc") || text.contains("at zmalloc"), text)

        // run and check take it too.
        let viaRun = try HeapGenCLI.runJSON(exe, flags: ["--alloc-fn", "my_alloc"])
        XCTAssertEqual(viaRun.report.findings.first { $0.bytesPerCycle.last == 16 }?.userFrame?.function, "store_token",
                       viaRun.report.findingsSummary)
        let check = try HeapGenCLI.run(["check", run.trace, "--alloc-fn", "my_alloc"])
        XCTAssertEqual(check.status, 23, check.transcript)
        XCTAssertTrue(check.stderrText.contains("store_token"), check.transcript)
        XCTAssertFalse(check.stderrText.contains("my_alloc ("), check.transcript)
        // diff: the grown sites are named after the callers.
        let diff = try HeapGenCLI.succeed(["diff", run.trace, "--from", "0", "--to", "end", "--alloc-fn", "my_alloc"]).stdoutText
        XCTAssertTrue(diff.contains("store_token"), diff)
        XCTAssertTrue(diff.contains("store_session"), diff)
        let empty = try HeapGenCLI.run(["report", run.trace, "--alloc-fn", ""])
        XCTAssertEqual(empty.status, 64, empty.transcript)

        // A name that matches nothing (a typo; a stripped binary's frame has no name) says so
        // instead of changing nothing in silence; one that matched says nothing.
        let typo = try HeapGenCLI.report(run.trace, flags: ["--alloc-fn", "my_alloc", "--alloc-fn", "my_aloc"])
        XCTAssertEqual(typo.notes.filter { $0.hasPrefix("--alloc-fn") },
                       ["--alloc-fn my_aloc matched no function in the stacks (a typo, or a frame of a stripped binary, "
                        + "which has no name to match): no site was renamed by it."], "\(typo.notes)")
    }

    /// A place in the source reached by many stacks (a recursive function) is one live-at-exit
    /// site with all its blocks: listed by source path, the report kept the 10 largest paths
    /// (the ten 20 B sites here) and the text summed the part kept (probe of heaptrack's
    /// callgraph test: "36 B in 3 blocks" of a function's 96 B in 8).
    func testAnAllocationPointReachedByManyStacksIsOneLiveSite() throws {
        let exe = try ReportFixture.c("recursive.c")
        let run = try HeapGenCLI.runJSON(exe)
        XCTAssertStatus(run.result, 0)
        let live = try XCTUnwrap(run.report.json["liveAtExit"] as? [String: Any], "\(run.report)")
        let sites = try XCTUnwrap(live["sites"] as? [[String: Any]], "\(run.report)")
        XCTAssertEqual(sites.count, 10, "\(sites)")
        let first = try XCTUnwrap(sites.first)
        XCTAssertEqual(jsonInt(first["objects"]), 12, "\(sites)")
        XCTAssertEqual(jsonInt(first["bytes"]), 144, "\(sites)")
        let frames = first["frames"] as? [[String: Any]] ?? []
        XCTAssertTrue(frames.contains { $0["function"] as? String == "descend" }, "\(first)")
        XCTAssertTrue(sites.dropFirst().allSatisfy { jsonInt($0["objects"]) == 1 && jsonInt($0["bytes"]) == 20 }, "\(sites)")

        let text = try HeapGenCLI.succeed(["report", run.trace]).stdoutText
        let line = try XCTUnwrap(ReportFixture.lines("recursive.c", containing: "/* DESCEND */").first)
        let liveLines = text.components(separatedBy: "\n").drop { !$0.hasPrefix("Live at exit") }
        XCTAssertEqual(liveLines.dropFirst(2).first, "    144 B in 12 blocks  at descend (Fixtures/recursive.c:\(line))", text)
    }

    /// Findings are shown as one entry only when their shown frames are the same frames
    /// (not merely the same short text), and the entry says how their stacks differ.
    func testOnlyIdenticalShownStacksAreMergedAndSaySo() throws {
        // -O0: at -O2 the one-call functions become tail calls and leave no frame.
        let exe = try FixtureCompiler.build("samestack.cpp", in: ReportFixture.directory, flags: ["-O0"])
        let run = try HeapGenCLI.runJSON(exe)
        XCTAssertEqual(run.report.findings(kind: "abandoned").count, 4, run.report.findingsSummary)
        let text = try HeapGenCLI.succeed(["report", run.trace]).stdoutText
        let entries = text.components(separatedBy: "\n").filter { $0.range(of: #"^  [0-9]+\. "#, options: .regularExpression) != nil }
        XCTAssertEqual(entries, [
            "  1. blocks from void keep<double>(double)  +1 object / +64 B per cycle",
            "  2. blocks from void keep<int>(int)  +1 object / +32 B per cycle",
            "  3. blocks from leaf()  +2 objects / +48 B per cycle  (2 sites whose stacks differ only outside the frames shown)",
        ], text)
        XCTAssertFalse(text.contains("one stack"), text)
    }

    /// A 1,000+-character C++ template instance is shortened in text (`<…>`), whole in JSON.
    func testLongCxxNamesAreShortenedInText() throws {
        let exe = try ReportFixture.cxx("longname.cpp")
        let run = try HeapGenCLI.runJSON(exe)
        let finding = try XCTUnwrap(run.report.findings.first { $0.hasFunction("keep_block") }, run.report.findingsSummary)
        let full = try XCTUnwrap(finding.userFrame?.function, finding.summary)
        XCTAssertGreaterThan(full.count, 1_000, full)
        let text = try HeapGenCLI.succeed(["report", run.trace]).stdoutText
        let lines = text.components(separatedBy: "\n")
        XCTAssertTrue(lines.contains("  1. blocks from void keep_block<…>(int, AVeryLongTemplateNameForTestingPurposesOnly<…>)  +1 object / +32 B per cycle"), text)
        let longest = lines.map(\.count).max() ?? 0
        XCTAssertLessThanOrEqual(longest, 160, text)
    }

    /// Started through a symbolic link with an empty argument: the report names the link
    /// (argv[0]), `info` quotes the empty argument, and the program's output is the same
    /// with and without heapgen.
    func testProgramIsNamedAsStartedAndEmptyArgumentsAreQuoted() throws {
        let exe = try ReportFixture.c("named.c")
        let dir = try TestPaths.freshDirectory("alias")
        let alias = dir + "/started-as"
        try FileManager.default.createSymbolicLink(atPath: alias, withDestinationPath: exe)
        let arguments = ["", "a b", "it's"]
        let direct = try runProcess(alias, arguments)
        XCTAssertEqual(direct.stdoutText, "argc=4\n[]\n[a b]\n[it's]\n", direct.transcript)

        let trace = dir + "/x.trace"
        let traced = try HeapGenCLI.run(["run", "--trace", trace, "--quiet", "--", alias] + arguments)
        XCTAssertEqual(traced.status, 0, traced.transcript)
        XCTAssertEqual(traced.stdout.prefix(direct.stdout.count), direct.stdout, traced.transcript)
        XCTAssertTrue(traced.stdoutText.contains("\nheapgen: started-as (pid "), traced.transcript)
        XCTAssertFalse(traced.stdoutText.contains("heapgen: named"), traced.transcript)

        let report = try HeapGenCLI.report(trace)
        XCTAssertEqual(report.program["args"] as? [String], [alias] + arguments, "\(report)")
        let info = try HeapGenCLI.succeed(["info", trace]).stdoutText
        let row = try XCTUnwrap(info.components(separatedBy: "\n").first { $0.contains("arguments") }, info)
        XCTAssertTrue(row.hasSuffix("\(alias) '' 'a b' 'it'\\''s'"), row)

        // A title a process rewrote in place (sshd's "sshd: [accepted]") leaves the rest of its
        // old arguments NUL-filled: /proc shows a run of empty ones, which are not arguments.
        // Three trailing empty arguments may be the program's own and stay.
        for (extra, shown) in [(3, ["x", "", "", ""]), (150, ["x"])] {
            let padded = dir + "/padded-\(extra).trace"
            let run = try HeapGenCLI.run(["record", "-q", "-o", padded, "--", alias, "x"] + Array(repeating: "", count: extra))
            XCTAssertEqual(run.status, 0, run.transcript)
            XCTAssertEqual(try HeapGenCLI.report(padded).program["args"] as? [String], [alias] + shown)
        }
    }

    /// An image that exec'd did not exit: what was live went with the exec, and the report
    /// says so instead of listing it as live at exit (sshd's listener child: 5,031 blocks).
    func testAnImageThatExecdSaysLiveAtTheExec() throws {
        let dir = try TestPaths.freshDirectory("execd")
        let trace = dir + "/t.trace"
        let rec = try HeapGenCLI.run(["record", "-q", "-o", trace, "--", "/bin/sh", "-c", "x=$(echo a); exec /bin/true"])
        XCTAssertStatus(rec, 0)
        XCTAssertEqual(try HeapGenCLI.summary(trace).endReason, "execed")
        let text = try HeapGenCLI.succeed(["report", trace]).stdoutText
        XCTAssertTrue(text.contains("\nLive at the exec (which discarded it)\n"), text)
        XCTAssertTrue(text.contains(" live at the exec in "), text)
        XCTAssertFalse(text.contains("Live at exit"), text)
        let exited = try XCTUnwrap(try HeapGenCLI.succeed(["info", trace + "." + String(try XCTUnwrap(HeapGenCLI.summary(trace).processPid)) + ".1"]).stdoutText as String?)
        XCTAssertTrue(exited.contains("exited with status 0"), exited)
    }
}
