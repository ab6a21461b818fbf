// Programs that do not mark their own cycles: `--mark-every` and `heapgen mark PID`.

import Foundation
import HeapGenTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class ExternalMarkReportTests: XCTestCase {
    /// 8 cycles of 150 ms, each leaking 2 blocks half-way through; heapgen marks every 150 ms.
    /// Timing-tolerant: the marks and the cycles are not synchronised.
    func testMarkEveryFindsTheLeak() throws {
        let fixture = try ReportFixture.c("external.c")
        let run = try HeapGenCLI.runJSON(fixture, ["timed", "8", "150"], flags: ["--mark-every", "150ms"])
        let r = run.report
        guard let cycles = r.cycles else { return XCTFail("no cycles: \(r)") }
        XCTAssertGreaterThanOrEqual(cycles, 4, "about 7 timer cycles expected: \(r)")
        XCTAssertLessThanOrEqual(cycles, 10, "about 7 timer cycles expected: \(r)")
        let leaks = r.findings(function: "leak_two")
        XCTAssertEqual(leaks.map(\.kind), ["abandoned"], r.findingsSummary)
        if let f = leaks.first, let judged = f.cycles {
            XCTAssertGreaterThanOrEqual(f.cyclesWithGrowth ?? -1, judged - 1, f.summary)
            XCTAssertTrue(f.objectsPerCycle.allSatisfy { $0 >= 0 && $0 % 2 == 0 && $0 <= 4 }, f.summary)
            XCTAssertEqual(f.userFrame?.function, "leak_two", f.summary)
        }
        // The transient 500-byte block is freed at once: no finding anywhere else.
        XCTAssertEqual(r.findings.count, 1, r.findingsSummary)
    }

    /// A program that frees what it kept when it shuts down, and runs on after that: the
    /// timed marks that land in the teardown would hide the leak (Node freed every Buffer
    /// there, and half the runs said "No growth"). The report judges the cycles up to the
    /// last peak before the fall, says so, and `--to LAST` judges them all as before.
    func testMarkEveryDoesNotJudgeTheTeardown() throws {
        let fixture = try ReportFixture.c("external.c")
        let run = try HeapGenCLI.runJSON(fixture, ["teardown", "10", "100", "450"], flags: ["--mark-every", "100ms"])
        let r = run.report
        let leaks = r.findings(function: "leak_two")
        XCTAssertEqual(leaks.map(\.kind), ["abandoned"], r.findingsSummary)
        let note = try XCTUnwrap(r.notes.first { $0.contains("the program's teardown, not judged") }, "\(r.notes)")
        // "… (--to 14 judges them all)."
        let last = try XCTUnwrap(note.split(separator: "(--to ").last?.split(separator: " ").first.map(String.init), note)
        XCTAssertNotNil(Int(last), note)
        XCTAssertLessThan(r.cycles ?? .max, Int(last) ?? 0, "the judged cycles end before the last mark: \(note)")
        // Judged to the last timed mark, the teardown's marks freed the leak: nothing grew.
        let whole = try HeapGenCLI.report(run.trace, flags: ["--to", last])
        XCTAssertEqual(whole.findings(function: "leak_two").map(\.kind), [], whole.findingsSummary)
        XCTAssertFalse(whole.notes.contains { $0.contains("teardown") }, "\(whole.notes)")
        // The same program without the teardown: no note, the leak as before.
        let plain = try HeapGenCLI.runJSON(fixture, ["timed", "10", "100"], flags: ["--mark-every", "100ms"]).report
        XCTAssertFalse(plain.notes.contains { $0.contains("teardown") }, "\(plain.notes)")
        XCTAssertEqual(plain.findings(function: "leak_two").map(\.kind), ["abandoned"], plain.findingsSummary)
    }

    /// The same leak, then 450 ms without a heap event before the exit (a program that sleeps
    /// or waits, a garbage collector's pause): the four idle timed cycles were judged misses,
    /// and with one miss tolerated "No growth" was the verdict on a staircase (probe of a
    /// Python script that grew a list, then slept). They are merged into the next now.
    func testMarkEveryDoesNotJudgeCyclesWithoutAHeapEvent() throws {
        let fixture = try ReportFixture.c("external.c")
        let run = try HeapGenCLI.runJSON(fixture, ["idle", "10", "100", "450"], flags: ["--mark-every", "100ms"])
        let r = run.report
        XCTAssertEqual(r.findings(function: "leak_two").map(\.kind), ["abandoned"], r.findingsSummary)
        let note = try XCTUnwrap(r.notes.first { $0.contains("in which the program made no heap event") }, "\(r.notes)")
        let idle = try XCTUnwrap(Int(note.prefix { $0.isNumber }), note)
        XCTAssertGreaterThanOrEqual(idle, 3, note)
        // Merged, they are not judged cycles: the count says so (it said all, beside the note).
        XCTAssertEqual(jsonInt(r.json["idleCycles"]), idle, "\(r)")
        let cycles = try XCTUnwrap(r.cycles)
        XCTAssertEqual(r.judgedCycles, cycles - 1 - idle, "\(r)")
        let text = try HeapGenCLI.succeed(["report", run.trace]).stdoutText
        XCTAssertTrue(text.contains("Generations (\(cycles) cycles, the first is warm-up)"), text)
    }

    /// The same program started by a shell script that runs 0.5 s first: the script gets
    /// timer marks too, and its trace is written first. The report (JSON shows one) is on
    /// the program the script exec'd, with its leak; it was on the script, with none.
    func testMarkEveryReportsTheProgramAWrapperExecd() throws {
        let fixture = try ReportFixture.c("external.c")
        let run = try HeapGenCLI.runJSON("/bin/sh", ["-c", "sleep 0.5; exec \"$0\" timed 8 150", fixture],
                                         flags: ["--mark-every", "150ms"])
        let r = run.report
        XCTAssertEqual(r.program["path"] as? String, fixture, "\(r)")
        XCTAssertEqual(r.findings(function: "leak_two").map(\.kind), ["abandoned"], r.findingsSummary)
        // The script and its `sleep`, where nothing grew, are one note.
        XCTAssertTrue(r.notes.contains("2 more process images had generation marks, and nothing grew or leaked in them: sh (1), sleep (1)."),
                      "\(r.notes)")
    }

    /// A script that runs two helpers (`sleep`, long enough for timer marks), the leaking
    /// program, then exec's it again: in text, both runs of the program are reported whole,
    /// and the script and its helpers, where nothing grew, are one summary, not a report each.
    /// The gate's verdicts the same: both failures in full, one line for the passes.
    func testMarkEverySummarizesTheImagesWhereNothingGrew() throws {
        let fixture = try ReportFixture.c("external.c")
        let script = "sleep 0.4; sleep 0.4; \"$0\" timed 8 150; exec \"$0\" timed 8 150"
        let run = try HeapGenCLI.run(["run", "--mark-every", "150ms", "--fail-on", "abandoned", "--",
                                      "/bin/sh", "-c", script, fixture])
        XCTAssertEqual(run.status, 23, run.transcript)
        let gate = run.stderrLines
        XCTAssertEqual(gate.filter { $0.hasPrefix("SUMMARY: heapgen: gate failed") }.count, 2, run.stderrText)
        XCTAssertFalse(run.stderrText.contains("gate passed:"), run.stderrText)
        XCTAssertEqual(gate.last, "heapgen: gate passed on 3 more process images: sh (1), sleep (2)", run.stderrText)
        let text = run.stdoutText
        let headers = text.split(separator: "\n").filter { $0.hasPrefix("heapgen: ") }
        XCTAssertEqual(headers.filter { $0.hasPrefix("heapgen: external (pid ") }.count, 2, text)
        XCTAssertEqual(text.components(separatedBy: "1. blocks from leak_two ").count - 1, 2, "one finding in each report:\n\(text)")
        XCTAssertFalse(headers.contains { $0.hasPrefix("heapgen: sleep (pid") || $0.hasPrefix("heapgen: sh (pid") }, text)
        // The summary: sh and two sleeps, each with at least one mark.
        guard let summary = text.range(of: "had generation marks, and nothing grew or leaked in them:") else {
            return XCTFail("no summary:\n\(text)")
        }
        let rows = text[summary.upperBound...].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertTrue(headers.last?.hasPrefix("heapgen: 3 more process images") == true, "\(headers)")
        XCTAssertTrue(rows.contains { $0.hasPrefix("sh ") && $0.contains(" 1 image, ") }, "\(rows)")
        XCTAssertTrue(rows.contains { $0.hasPrefix("sleep ") && $0.contains(" 2 images, ") }, "\(rows)")
        XCTAssertEqual(rows.last, "(their traces were temporary; --keep-trace keeps them)", "\(rows)")
        // Temporary traces are gone, so no report lists them.
        XCTAssertFalse(text.contains("Other traces"), text)
        XCTAssertTrue(text.contains("traces of this recording (one per process image) were temporary files"), text)
    }

    /// The test drives the cycles through FIFOs and marks each with `heapgen mark PID`.
    func testMarkCommandBetweenDrivenCycles() throws {
        try markDrivenCycles(mode: "driven", cycles: 6)
    }

    /// The same with a program that wrote zeros over its environment (PostgreSQL's
    /// process titles do): `heapgen mark` finds the collector by the segment's name in
    /// /proc/PID/maps, as the program keeps no descriptor of heapgen's.
    func testMarkCommandFindsAProgramThatWroteOverItsEnvironment() throws {
        try markDrivenCycles(mode: "driven-titled", cycles: 3)
    }

    private func markDrivenCycles(mode: String, cycles n: Int) throws {
        let fixture = try ReportFixture.c("external.c")
        let dir = try TestPaths.freshDirectory("driven")
        let pidFile = dir + "/pid", goPath = dir + "/go", donePath = dir + "/done"
        try FIFO.make(goPath)
        try FIFO.make(donePath)
        let trace = dir + "/x.trace", out = dir + "/report.json"
        let heapgen = try RunningProcess(try TestPaths.heapgen(),
                                  ["run", "--format", "json", "--output", out, "--trace", trace, "--",
                                   fixture, mode, pidFile, goPath, donePath, "\(n)"])
        defer { heapgen.killIfRunning() }

        // The program's pid.
        let deadline = Date().addingTimeInterval(30)
        var pid: Int32?
        while pid == nil && Date() < deadline && !heapgen.poll() {
            if let text = try? String(contentsOfFile: pidFile, encoding: .utf8) {
                pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
            } else {
                usleep(5_000)
            }
        }
        guard let pid else {
            return XCTFail("the fixture never wrote its pid:\n\(heapgen.wait(timeout: 5).transcript)")
        }
        let go = try FIFO.open(goPath, write: true)
        defer { close(go) }
        let done = try FIFO.open(donePath, write: false)
        defer { close(done) }

        func mark(_ label: String) throws {
            let m = try HeapGenCLI.run(["mark", "\(pid)", label], timeout: 30)
            XCTAssertEqual(m.status, 0, "heapgen mark \(pid) \(label):\n\(m.transcript)")
        }
        if mode == "driven-titled" {
            let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ") ?? Data()
            XCTAssertFalse(String(decoding: environ, as: UTF8.self).contains("HEAPGEN_SOCK="), "the fixture blanked it")
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
            XCTAssertTrue(fds.allSatisfy { (Int($0) ?? 0) < 500 }, "heapgen keeps no descriptor in the program: \(fds)")
        }
        // heapgen's own pid (what `$!` gives after `heapgen run … &`): it names the program.
        let own = try HeapGenCLI.run(["mark", "\(heapgen.pid)"], timeout: 30)
        XCTAssertEqual(own.status, 69, own.transcript)
        XCTAssertEqual(own.stderrLines.last, "heapgen: cannot mark process \(heapgen.pid): it is heapgen itself, which "
                       + "records the program; the program it records: pid \(pid)", own.transcript)

        try mark("heapgen.start")
        for k in 1...n {
            try FIFO.writeByte(go)
            try FIFO.readByte(done)
            try mark(k == 1 ? "warm-up 1" : "cycle \(k)")
        }
        try FIFO.writeByte(go)   // let it exit
        let result = heapgen.wait(timeout: 60)
        XCTAssertEqual(result.status, 0, result.transcript)
        guard let data = FileManager.default.contents(atPath: out) else {
            return XCTFail("no report at \(out):\n\(result.transcript)")
        }
        let r = try Report(data: data, origin: result.command)

        XCTAssertEqual(r.cycles, n, "\(r)")
        XCTAssertEqual(r.generations.map(\.label), ["heapgen.start", "warm-up 1"] + (2...n).map { "cycle \($0)" } + [nil],
                       "generation labels: \(r.generations.map(\.json))")
        let leaks = r.findings(function: "leak_two")
        XCTAssertEqual(leaks.map(\.kind), ["abandoned"], r.findingsSummary)
        if let f = leaks.first {
            XCTAssertEqual(f.objectsPerCycle, Array(repeating: 2, count: n), f.summary)
            XCTAssertEqual(f.bytesPerCycle, Array(repeating: 160, count: n), f.summary)
            XCTAssertEqual(f.cycles, n - 1, f.summary)
            XCTAssertEqual(f.cyclesWithGrowth, n - 1, f.summary)
            XCTAssertEqual(f.survivingObjects, 2 * (n - 1), f.summary)
        }
        XCTAssertEqual(r.findings.count, 1, r.findingsSummary)
        for k in 1...n {
            XCTAssertEqual(r.generations[safe: k]?.allocations, 3, "cycle \(k): 2 kept + 1 transient")
            XCTAssertEqual(r.generations[safe: k]?.frees, 1, "cycle \(k)")
        }

        // A process heapgen is not recording: exit 69.
        let notRecorded = try HeapGenCLI.run(["mark", "\(getpid())"])
        XCTAssertEqual(notRecorded.status, 69, notRecorded.transcript)
    }
}
