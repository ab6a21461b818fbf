// `heapgen run` / `heapgen report` as a command: text output, colours, exit
// statuses, the program's output, kept traces, corrupt traces.

import Foundation
import HeapGenTestSupport
import XCTest

final class CommandLineReportTests: XCTestCase {
    static let esc = "\u{1B}["

    func testTextReportHasTableAndFindingsWithoutEscapes() throws {
        let fixture = try ReportFixture.c("sites.c")
        let r = try HeapGenCLI.run(["run", "--", fixture, "leaky", "8"])
        XCTAssertEqual(r.status, 0, r.transcript)
        XCTAssertTrue(r.stdoutText.contains("sites: done"), r.transcript)
        let text = r.stdoutText + r.stderrText
        // The generation table: a header naming its columns, one row per generation.
        let lower = text.lowercased()
        let lines = text.components(separatedBy: "\n")
        XCTAssertTrue(lines.contains { $0.hasPrefix("Generations") }, "no generation table title:\n\(r.transcript)")
        let header = lines.first { l in ["gen", "label", "allocs", "frees", "live", "persistent"].allSatisfy { l.contains($0) } }
        XCTAssertNotNil(header, "no generation table header (gen, label, allocs, frees, live, persistent):\n\(r.transcript)")
        XCTAssertTrue(lower.contains("heapgen.start") && lower.contains("warm-up 1"), "rows carry the mark labels:\n\(r.transcript)")
        // One table row per generation (setup, 8 cycles, tail): rows start with the generation index.
        for g in 0...9 {
            XCTAssertTrue(lines.contains { $0.trimmingCharacters(in: .whitespaces).hasPrefix("\(g) ") }, "no row for generation \(g):\n\(r.transcript)")
        }
        // The findings section.
        XCTAssertTrue(lower.contains("abandoned"), "no abandoned section:\n\(r.transcript)")
        XCTAssertTrue(lower.contains("cache"), "no cache section:\n\(r.transcript)")
        XCTAssertTrue(text.contains("leak_session") && text.contains("grow_log") && text.contains("cache_lookup"),
                      "the findings name their functions:\n\(r.transcript)")
        XCTAssertTrue(text.contains("sites.c:"), "file:line of the user frames:\n\(r.transcript)")
        XCTAssertFalse(text.contains(Self.esc), "ANSI escapes in output that is not a terminal:\n\(r.transcript)")
        // Abandoned listed before the cache.
        if let a = text.range(of: "leak_session"), let c = text.range(of: "cache_lookup") {
            XCTAssertLessThan(a.lowerBound, c.lowerBound, "abandoned first:\n\(r.transcript)")
        }

        // The same text from `heapgen report` on a kept trace, and --format text is the default.
        let trace = try HeapGenCLI.record(fixture, ["leaky", "8"])
        let explicit = try HeapGenCLI.run(["report", trace, "--format", "text"])
        let implicit = try HeapGenCLI.run(["report", trace])
        XCTAssertEqual(explicit.status, 0, explicit.transcript)
        XCTAssertEqual(implicit.status, 0, implicit.transcript)
        XCTAssertEqual(explicit.stdoutText, implicit.stdoutText, "text is the default format")
        XCTAssertTrue(explicit.stdoutText.contains("leak_session"), explicit.transcript)
        XCTAssertFalse(explicit.stdoutText.contains(Self.esc), explicit.transcript)
    }

    /// Under a terminal (script(1) gives it a pty), NO_COLOR turns colours off.
    func testNoColorIsRespectedOnATerminal() throws {
        let fixture = try ReportFixture.c("sites.c")
        let trace = try HeapGenCLI.record(fixture, ["leaky", "8"])
        let script = try tool("script", hint: "apt-get install -y bsdutils")
        let command = ([try TestPaths.heapgen(), "report", trace]).map(shellQuote).joined(separator: " ")
        var env = ProcessInfo.processInfo.environment
        env["TERM"] = "xterm-256color"
        env.removeValue(forKey: "NO_COLOR")
        let colored = try runProcess(script, ["-qec", command, "/dev/null"], environment: env)
        XCTAssertEqual(colored.status, 0, colored.transcript)
        XCTAssertTrue(colored.stdoutText.contains("leak_session"), "report through the pty:\n\(colored.transcript)")
        env["NO_COLOR"] = "1"
        let plain = try runProcess(script, ["-qec", command, "/dev/null"], environment: env)
        XCTAssertEqual(plain.status, 0, plain.transcript)
        XCTAssertTrue(plain.stdoutText.contains("leak_session"), plain.transcript)
        XCTAssertFalse(plain.stdoutText.contains(Self.esc), "NO_COLOR=1 on a terminal still has escapes:\n\(plain.transcript)")
        // Without NO_COLOR the terminal gets colour (so the check above is not vacuous);
        // an empty NO_COLOR does not count (no-color.org: "present and not an empty string").
        XCTAssertTrue(colored.stdoutText.contains(Self.esc), "no colour on a terminal at all:\n\(colored.transcript)")
        env["NO_COLOR"] = ""
        let empty = try runProcess(script, ["-qec", command, "/dev/null"], environment: env)
        XCTAssertTrue(empty.stdoutText.contains(Self.esc), "empty NO_COLOR should not disable colour:\n\(empty.transcript)")
        env["NO_COLOR"] = nil
        env["TERM"] = "dumb"
        let dumb = try runProcess(script, ["-qec", command, "/dev/null"], environment: env)
        XCTAssertFalse(dumb.stdoutText.contains(Self.esc), "TERM=dumb still has escapes:\n\(dumb.transcript)")
    }

    func testRunExitsWithProgramStatusAndKeepsItsOutput() throws {
        let fixture = try ReportFixture.c("status.c")
        // Text report.
        let text = try HeapGenCLI.run(["run", "--", fixture, "3"])
        XCTAssertEqual(text.status, 3, text.transcript)
        XCTAssertTrue(text.stdoutText.contains("status-fixture: stdout line, exiting with 3"), text.transcript)
        XCTAssertTrue(text.stderrText.contains("status-fixture: stderr line"), text.transcript)
        XCTAssertTrue(text.stdoutText.contains("leak_one") || text.stderrText.contains("leak_one"), "the report is printed:\n\(text.transcript)")

        // JSON report to a file.
        let run = try HeapGenCLI.runJSON(fixture, ["3"], expectStatus: 3)
        XCTAssertTrue(run.result.stdoutText.contains("status-fixture: stdout line, exiting with 3"), run.result.transcript)
        XCTAssertEqual(jsonInt(run.report.program["exitStatus"]), 3, "\(run.report)")
        XCTAssertTrue(run.report.program["signal"] is NSNull, "\(run.report)")
        XCTAssertEqual(run.report.findings(function: "leak_one").map(\.kind), ["abandoned"], run.report.findingsSummary)

        // Standard input reaches the program.
        let outDir = try TestPaths.freshDirectory("stdin")
        let cat = try runProcess(try TestPaths.heapgen(), ["run", "--output", outDir + "/report.txt", "--", "/bin/cat"],
                                   stdin: Data("line through stdin\n".utf8))
        XCTAssertEqual(cat.status, 0, cat.transcript)
        XCTAssertEqual(cat.stdoutText, "line through stdin\n", "the program's stdin and stdout are untouched:\n\(cat.transcript)")

        // JSON on stdout after the program's own output.
        let mixed = try HeapGenCLI.run(["run", "--format", "json", "--", fixture, "0"])
        XCTAssertEqual(mixed.status, 0, mixed.transcript)
        XCTAssertTrue(mixed.stdoutText.contains("status-fixture: stdout line, exiting with 0"), mixed.transcript)
        let r = try ReportJSON.extract(from: mixed)
        XCTAssertEqual(jsonInt(r.program["exitStatus"]), 0, "\(r)")
    }

    func testRunOfAKilledProgramAndOfProgramsThatCannotRun() throws {
        let fixture = try ReportFixture.c("status.c")
        let run = try HeapGenCLI.runJSON(fixture, ["signal", "15"], expectStatus: 128 + 15)
        XCTAssertTrue(run.result.stdoutText.contains("status-fixture: stdout line"), run.result.transcript)
        XCTAssertTrue(run.report.program["exitStatus"] is NSNull, "killed: exitStatus null: \(run.report.program)")
        XCTAssertEqual(jsonInt(run.report.program["signal"]), 15, "\(run.report.program)")
        XCTAssertEqual(run.report.findings(function: "leak_one").map(\.kind), ["abandoned"], run.report.findingsSummary)

        let dir = try TestPaths.freshDirectory("cannot")
        let missing = try HeapGenCLI.run(["run", "--", dir + "/no-such-program"])
        XCTAssertEqual(missing.status, 127, missing.transcript)
        XCTAssertEqual(missing.stderrLines.count, 1, missing.transcript)
        let notExecutable = dir + "/data.txt"
        try Data("not a program\n".utf8).write(to: URL(fileURLWithPath: notExecutable))
        let cannot = try HeapGenCLI.run(["run", "--", notExecutable])
        XCTAssertEqual(cannot.status, 126, cannot.transcript)
        XCTAssertEqual(cannot.stderrLines.count, 1, cannot.transcript)
    }

    /// Without --trace, run's trace is a temporary file (in $TMPDIR) removed afterwards;
    /// --output is created owner-only.
    func testTemporaryTraceIsRemovedAndOutputIsPrivate() throws {
        let fixture = try ReportFixture.c("sites.c")
        let tmp = try TestPaths.freshDirectory("tmpdir")
        let outDir = try TestPaths.freshDirectory("out")
        var env = ProcessInfo.processInfo.environment
        env["TMPDIR"] = tmp
        let out = outDir + "/report.json"
        let r = try HeapGenCLI.run(["run", "--format", "json", "--output", out, "--", fixture, "leaky", "4"], environment: env)
        XCTAssertEqual(r.status, 0, r.transcript)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: tmp), [], "temporary trace left in TMPDIR:\n\(r.transcript)")
        let attributes = try FileManager.default.attributesOfItem(atPath: out)
        let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
        XCTAssertEqual(mode & 0o077, 0, "--output should be owner-only, mode is \(String(mode, radix: 8))")
        let report = try Report(data: try Data(contentsOf: URL(fileURLWithPath: out)), origin: r.command)
        XCTAssertEqual(report.findings(function: "leak_session").map(\.kind), ["abandoned"], report.findingsSummary)
    }

    /// A temporary trace removed at the end is not named in the notes (a note said
    /// "/tmp/heapgen-….trace has the first" next to "the traces … have been removed").
    func testNotesDoNotNameARemovedTrace() throws {
        let fixture = try ReportFixture.c("sites.c")
        let r = try HeapGenCLI.run(["run", "--quiet", "--", "/bin/sh", "-c", "exec \"$0\" leaky 4", fixture])
        XCTAssertEqual(r.status, 0, r.transcript)
        let notes = r.stdoutText.components(separatedBy: "\n").drop { $0 != "Notes" }
        XCTAssertTrue(notes.contains("  - The program exec'd another program: this report is on the last one its process ran."),
                      r.stdoutText)
        XCTAssertFalse(notes.contains { $0.contains("heapgen-") && $0.contains(".trace") && !$0.contains("removed") }, r.stdoutText)
    }

    func testKeptTraceGivesTheSameReport() throws {
        let fixture = try ReportFixture.c("sites.c")
        let run = try HeapGenCLI.runJSON(fixture, ["leaky", "8"])
        XCTAssertTrue(FileManager.default.fileExists(atPath: run.trace), "--trace keeps the trace at \(run.trace)")
        XCTAssertEqual(run.report.json["trace"] as? String, run.trace, "\(run.report)")
        let again = try HeapGenCLI.report(run.trace)
        XCTAssertEqual(again.json["trace"] as? String, run.trace, "\(again)")
        XCTAssertEqual(again.findings.count, run.report.findings.count, again.findingsSummary)
        for (a, b) in zip(run.report.findings, again.findings) {
            XCTAssertEqual(a.kind, b.kind)
            XCTAssertEqual(a.typeName, b.typeName)
            XCTAssertEqual(a.objectsPerCycle, b.objectsPerCycle)
            XCTAssertEqual(a.bytesPerCycle, b.bytesPerCycle)
            XCTAssertEqual(a.cyclesWithGrowth, b.cyclesWithGrowth)
            XCTAssertEqual(a.userFrame?.function, b.userFrame?.function)
            XCTAssertEqual(a.userFrame?.line, b.userFrame?.line)
            XCTAssertEqual(a.frames.map(\.function), b.frames.map(\.function))
        }
        XCTAssertEqual(again.generations.map { $0.json as NSDictionary }, run.report.generations.map { $0.json as NSDictionary })
        XCTAssertEqual(again.totals as NSDictionary, run.report.totals as NSDictionary)
        XCTAssertEqual(again.program as NSDictionary, run.report.program as NSDictionary)
    }

    func testCorruptTraceExits65WithOneLine() throws {
        let fixture = try ReportFixture.c("gentable.c")
        let trace = try HeapGenCLI.record(fixture, ["4"])
        let good = try Data(contentsOf: URL(fileURLWithPath: trace))
        let dir = try TestPaths.freshDirectory("corrupt")

        var flipped = good
        let at = good.count / 2
        for i in at..<min(at + 4, good.count) { flipped[i] ^= 0xff }
        let cases: [(String, Data)] = [
            ("flipped.trace", flipped),
            ("truncated.trace", good.prefix(20)), // inside the process chunk: nothing to salvage
            ("garbage.trace", Data("this is not a heapgen trace\n".utf8)),
        ]
        for (name, data) in cases {
            let path = dir + "/" + name
            try data.write(to: URL(fileURLWithPath: path))
            for format in ["text", "json"] {
                let r = try HeapGenCLI.run(["report", path, "--format", format])
                XCTAssertEqual(r.status, 65, "\(name) (\(format)):\n\(r.transcript)")
                XCTAssertEqual(r.stderrLines.count, 1, "one line on stderr for \(name) (\(format)):\n\(r.transcript)")
                XCTAssertTrue(r.stderrText.hasPrefix("heapgen"), "\(name):\n\(r.transcript)")
                XCTAssertTrue(r.stdout.isEmpty, "nothing on stdout for \(name) (\(format)):\n\(r.transcript)")
                for bad in ["Fatal error", "Backtrace", "Stack dump", "Current stack trace", "💣"] {
                    XCTAssertFalse(r.stderrText.contains(bad), "\(name):\n\(r.transcript)")
                }
            }
        }
        // A missing trace: 66 (cannot open), also one line.
        let missing = try HeapGenCLI.run(["report", dir + "/missing.trace"])
        XCTAssertEqual(missing.status, 66, missing.transcript)
        XCTAssertEqual(missing.stderrLines.count, 1, missing.transcript)
    }
}
