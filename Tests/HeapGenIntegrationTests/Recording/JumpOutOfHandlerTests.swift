// A program may siglongjmp out of a signal handler, and the handler may have interrupted the
// shim: between a ring claim and its publication, or with its nesting guard raised. The frames
// that held them are gone; before, the claimed slot stopped the collector for good (the rest
// of the run lost, 13.9 M events of jumpout.c, or a stall and "wrote over its recording
// segment") and the guard stayed raised.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class JumpOutOfHandlerTests: XCTestCase {
    /// jumpout.c: 2,000 jumps out of a timer's handler into a loop that marks generations as
    /// fast as it can, then 1,000 malloc/free pairs of 777 bytes. The next call into the shim
    /// finds each abandoned claim and fills it: at most one event lost a jump, none torn, and
    /// every allocation after the jumps recorded.
    func testAbandonedClaimsAreFilledAndRecordingGoesOn() throws {
        let exe = try Fixture.build("jumpout.c")
        let native = try runProcess(exe, [], timeout: 120)
        XCTAssertStatus(native, 0)
        let rec = try HeapGenCLI.recording(exe, flags: ["--quiet"], timeout: 120)
        XCTAssertStatus(rec.result, 0)
        XCTAssertTrue(rec.result.stdoutText.hasPrefix("jumps 2000 marks "), rec.result.transcript)
        XCTAssertTrue(rec.result.stdoutText.hasSuffix(" pairs 1000\n"), rec.result.transcript)
        XCTAssertFalse(rec.result.stderrText.contains("recording segment"), rec.result.stderrText)
        var allocations = 0, frees = 0, marks = 0
        var live = Set<UInt64>()
        for r in try HeapGenCLI.records(rec.trace) {
            switch r {
            case let .allocation(_, address, 777, _, _):
                allocations += 1
                live.insert(address)
            case let .free(_, address):
                if live.remove(address) != nil { frees += 1 }
            case .mark:
                marks += 1
            default: break
            }
        }
        XCTAssertEqual(allocations, 1000, "every allocation after the jumps")
        XCTAssertEqual(frees, 1000)
        XCTAssertGreaterThan(marks, 2000)
        let s = try HeapGenCLI.summary(rec.trace)
        XCTAssertLessThanOrEqual(s.lostEvents, 2000, "at most the event of each jump: \(s)")
        XCTAssertEqual(s.uint("end.tornEvents"), 0, "\(s)")
        XCTAssertEqual(s.uint("end.stacksLost"), 0, "\(s)")
        XCTAssertEqual(s.string("end.reason"), "exited", "\(s)")
    }
}
