// Progress lines: on a terminal only, never in pipes, files or CI logs, and never in the
// way of the program's own output. A terminal is made with util-linux `script`, which
// runs a command on a pseudo-terminal and keeps everything written to it in a typescript.

import Foundation
import HeapGenTestSupport
import XCTest

final class ProgressTests: XCTestCase {
    static let fixtures = TestPaths.fixtures(for: #filePath)

    private func churn() throws -> String {
        try FixtureCompiler.build("churn.c", in: Self.fixtures)
    }

    /// The environment of a terminal user: no CI variable (the suite may run in CI), a real
    /// TERM, and no delay before the first line.
    private func terminalEnvironment(_ extra: [String: String] = [:]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["CI"] = nil
        env["HEAPGEN_PROGRESS"] = nil
        env["TERM"] = "xterm"
        env["HEAPGEN_PROGRESS_DELAY_MS"] = "0"
        env.merge(extra) { $1 }
        return env
    }

    /// Runs the shell command `command` on a pseudo-terminal; returns what was written to
    /// the terminal, and the command's exit status.
    private func onTerminal(_ command: String, environment: [String: String]) throws -> (screen: String, status: Int32) {
        let dir = try TestPaths.freshDirectory("tty")
        let typescript = dir + "/typescript"
        let result = try runProcess(try tool("script", hint: "install bsdutils (util-linux)"),
                                    ["-q", "-e", "-c", command, typescript], environment: environment, timeout: 240)
        let screen = (try? String(contentsOfFile: typescript, encoding: .utf8)) ?? ""
        return (screen, result.status)
    }

    private func record(pairs: Int) throws -> String {
        let trace = try TestPaths.freshDirectory("progress") + "/x.trace"
        let result = try HeapGenCLI.run(["record", "-q", "--output", trace, "--", try churn(), String(pairs)])
        XCTAssertEqual(result.status, 3, result.transcript)
        return trace
    }

    func testReportShowsProgressOnATerminalAndTheSameReport() throws {
        let trace = try record(pairs: 300_000)
        let piped = try HeapGenCLI.run(["report", trace], environment: terminalEnvironment())
        XCTAssertEqual(piped.status, 0, piped.transcript)
        XCTAssertFalse(piped.stderrText.contains("\u{1B}"), "a pipe got terminal escapes:\n\(piped.stderrText)")
        XCTAssertFalse(piped.stderrText.contains("x.trace (pass"), piped.stderrText)

        let out = try TestPaths.freshDirectory("progress-out") + "/report.txt"
        let run = try onTerminal("\(shellQuote(try TestPaths.heapgen())) report \(shellQuote(trace)) > \(shellQuote(out))",
                                 environment: terminalEnvironment())
        XCTAssertEqual(run.status, 0, run.screen)
        // A compressed trace this small is read in one go: then only the "read" line shows.
        XCTAssertTrue(run.screen.contains("heapgen: read x.trace (pass 1), working"), run.screen)
        // The line is erased before heapgen ends: the last thing drawn is the erase.
        let drawn = run.screen.components(separatedBy: "\r\u{1B}[K")
        XCTAssertGreaterThan(drawn.count, 2, run.screen)
        XCTAssertFalse(drawn.last!.contains("heapgen:"), "the progress line was left on the terminal:\n\(run.screen)")
        // The report itself is the one a pipe gets, byte for byte.
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: out)), piped.stdout)
    }

    func testDiffAndExportShowProgressOnATerminal() throws {
        let trace = try record(pairs: 200_000)
        let heapgen = shellQuote(try TestPaths.heapgen())
        for command in ["diff \(shellQuote(trace)) --from start --to end", "export \(shellQuote(trace)) --format collapsed"] {
            let run = try onTerminal("\(heapgen) \(command) > /dev/null", environment: terminalEnvironment())
            XCTAssertEqual(run.status, 0, "\(command):\n\(run.screen)")
            XCTAssertTrue(run.screen.contains("x.trace (pass 1)"), "\(command):\n\(run.screen)")
        }
    }

    func testNoProgressInCIOrWhenTurnedOff() throws {
        let trace = try record(pairs: 100_000)
        let heapgen = shellQuote(try TestPaths.heapgen())
        for extra in [["CI": "true"], ["HEAPGEN_PROGRESS": "0"], ["TERM": "dumb"]] {
            let run = try onTerminal("\(heapgen) report \(shellQuote(trace)) > /dev/null", environment: terminalEnvironment(extra))
            XCTAssertEqual(run.status, 0, run.screen)
            XCTAssertFalse(run.screen.contains("x.trace (pass"), "\(extra):\n\(run.screen)")
        }
    }

    /// The program's output goes to files: the status line is drawn on the controlling
    /// terminal and erased at the end; the files hold exactly what the program wrote.
    func testRecordingStatusOnTheTerminalWhenTheProgramWritesElsewhere() throws {
        let dir = try TestPaths.freshDirectory("progress-rec")
        let program = try churn()
        let native = try runProcess(program, ["1000000"])
        XCTAssertEqual(native.status, 3)
        let command = "\(shellQuote(try TestPaths.heapgen())) record -o \(shellQuote(dir + "/x.trace")) -- "
            + "\(shellQuote(program)) 1000000 > \(shellQuote(dir + "/out")) 2> \(shellQuote(dir + "/err"))"
        let run = try onTerminal(command, environment: terminalEnvironment())
        XCTAssertEqual(run.status, 3, run.screen)
        XCTAssertTrue(run.screen.contains("heapgen: recording 0:0"), run.screen)
        XCTAssertTrue(run.screen.contains(" events, "), run.screen)
        let drawn = run.screen.components(separatedBy: "\r\u{1B}[K")
        XCTAssertFalse(drawn.last!.contains("heapgen: recording"), "the status line was left on the terminal:\n\(run.screen)")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/out")), native.stdout)
        let err = try String(contentsOfFile: dir + "/err", encoding: .utf8)
        XCTAssertTrue(err.hasPrefix(native.stderrText), err)
        XCTAssertFalse(err.contains("\u{1B}"), "a file got terminal escapes:\n\(err)")
    }

    /// The program shares the terminal: no line is redrawn over its output (short runs print
    /// nothing; long ones a whole line every 30 s), and its output is on the screen intact.
    func testRecordingNeverRedrawsOverTheProgramsOutput() throws {
        let program = try churn()
        let dir = try TestPaths.freshDirectory("progress-shared")
        let command = "\(shellQuote(try TestPaths.heapgen())) record -q -o \(shellQuote(dir + "/x.trace")) -- \(shellQuote(program)) 500000"
        let run = try onTerminal(command, environment: terminalEnvironment())
        XCTAssertEqual(run.status, 3, run.screen)
        XCTAssertFalse(run.screen.contains("\u{1B}[K"), run.screen)
        XCTAssertFalse(run.screen.contains("heapgen: recording"), run.screen)
        XCTAssertTrue(run.screen.contains("churn: start 500000\r\n"), run.screen)
        XCTAssertTrue(run.screen.contains("churn: on stderr\r\n"), run.screen)
        XCTAssertTrue(run.screen.contains("churn: done\r\n"), run.screen)
    }
}
