// The collector's trust in a hello: the kernel names its sender (SCM_CREDENTIALS),
// whatever pid the message claims.

import Foundation
import HeapGenTestSupport
import XCTest

final class ForgedHelloTests: XCTestCase {
    /// forgedhello.c says hello as pid 1 and as heapgen itself. Outside a PID namespace of
    /// its own, no pid but its own is accepted: both are refused with one line each, the
    /// connections closed, and the program's own trace goes on.
    func testAHelloClaimingAnotherProcessIsRefused() throws {
        let exe = try Fixture.build("forgedhello.c")
        let rec = try HeapGenCLI.recording(exe, flags: ["--quiet"])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdoutText, "refused 2 of 2\n", rec.result.transcript)
        // Sent before the collector accepted the connection, a hello came without the kernel's
        // credentials, and its claimed pid went unchecked (1 run in 30): now that is refused too.
        let refusals = rec.result.stderrLines.filter {
            $0.contains("hello claims a pid other than its sender's") || $0.contains("hello without its sender's credentials")
        }
        XCTAssertEqual(refusals.count, 2, rec.result.transcript)
        XCTAssertEqual(rec.result.stderrLines.count, 2, rec.result.transcript)
        XCTAssertEqual(rec.allTraces, [rec.trace], "no trace for a forged hello")
        let s = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(s.calls("malloc"), 6, "5 × 32 B and stdout's buffer: \(s)")
        XCTAssertEqual(s.endReason, "exited")
    }
}
