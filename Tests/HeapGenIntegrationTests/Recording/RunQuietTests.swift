// `heapgen run --quiet` (as record's) and run's warnings about temporary traces it removes.

import Foundation
import HeapGenTestSupport
import XCTest

final class RunQuietTests: XCTestCase {
    /// With --trace the collector prints its summary line; --quiet (and -q) drop it. The
    /// program's output is the same either way.
    func testRunQuietDropsTheSummaryLine() throws {
        let exe = try Fixture.build("scribble.c")
        let dir = try TestPaths.freshDirectory("quiet")
        let loud = try HeapGenCLI.run(["run", "--trace", dir + "/loud.trace", "--", exe, "none"])
        XCTAssertEqual(loud.status, 0, loud.transcript)
        XCTAssertEqual(loud.stderrLines.filter { $0.hasPrefix("heapgen: ") && $0.contains(dir + "/loud.trace") }.count, 1,
                       loud.transcript)
        for flag in ["--quiet", "-q"] {
            let quiet = try HeapGenCLI.run(["run", flag, "--trace", dir + "/quiet\(flag).trace", "--", exe, "none"])
            XCTAssertEqual(quiet.status, 0, quiet.transcript)
            XCTAssertEqual(quiet.stderrText, "", quiet.transcript)
            XCTAssertEqual(quiet.stdout.prefix(40), loud.stdout.prefix(40), quiet.transcript)
        }
        let record = try HeapGenCLI.run(["record", "-q", "--output", dir + "/rec.trace", "--", exe, "none"])
        XCTAssertEqual(record.stderrText, "", record.transcript)
    }

    /// A warning about a temporary trace names the process, not the file `run` removes.
    func testWarningsOfTemporaryTracesNameTheProcess() throws {
        let exe = try Fixture.build("scribble.c")
        let result = try HeapGenCLI.run(["run", "--", exe, "counters"], timeout: 60)
        XCTAssertEqual(result.status, 0, result.transcript)
        XCTAssertTrue(result.stdoutText.hasPrefix("scribble counters: 1000 + 1000 blocks\n"), result.transcript)
        let warnings = result.stderrLines.filter { $0.hasPrefix("heapgen: warning: ") }
        XCTAssertEqual(warnings.count, 1, result.transcript)
        let warning = try XCTUnwrap(warnings.first)
        XCTAssertTrue(warning.hasPrefix("heapgen: warning: the recording of pid "), warning)
        XCTAssertTrue(warning.hasSuffix(": counters the program overwrote with impossible values were dropped"), warning)
        XCTAssertFalse(result.stderrText.contains(".trace"), result.transcript)
    }
}
