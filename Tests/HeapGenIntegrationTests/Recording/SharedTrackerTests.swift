// With --leaks and forks followed, one live tracker serves the control channel and the
// fork snapshots: an `untrack` from the program must not stop the snapshots.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class SharedTrackerTests: XCTestCase {
    /// untrackfork.c: 100 × 48 B kept, begin + untrack, 50 × 32 B kept, fork; the child frees all 150.
    func testForkSnapshotGoesOnAfterUntrack() throws {
        let exe = try Fixture.build("untrackfork.c")
        let rec = try HeapGenCLI.recording(exe, flags: ["--quiet", "--leaks"])
        XCTAssertStatus(rec.result, 0)
        let out = String(decoding: rec.result.stdout, as: UTF8.self)
        let lines = out.split(separator: "\n").map(String.init)
        func answer(_ tag: String) -> String { lines.first { $0.hasPrefix(tag + " ") } ?? "" }
        XCTAssertTrue(answer("UNTRACK").contains("\"tracking\":false"), out)
        XCTAssertTrue(answer("STATUS").contains("\"tracking\":false"), out)
        XCTAssertTrue(answer("STATUS").contains("\"liveBlocks\":0"), out)
        XCTAssertTrue(answer("GROWTH").contains("no growth session"), "the untrack ended the session: \(out)")
        XCTAssertTrue(answer("TRACK").contains("\"already\":false"), "a new tracker after the untrack: \(out)")
        XCTAssertFalse(answer("TRACK").contains("\"since\":0,"), out)
        XCTAssertTrue(lines.contains("child ok"), out)

        guard let childPath = rec.allTraces.first(where: { $0 != rec.trace }) else {
            return XCTFail("no child trace: \(rec.allTraces)")
        }
        let child = try HeapGenCLI.summary(childPath)
        XCTAssertEqual(child.calls("inherited"), 150, "blocks from before and after the untrack: \(child)")
        XCTAssertEqual(child.bytes("inherited"), 100 * 48 + 50 * 32)
        XCTAssertEqual(child.frees("free"), 150)
        XCTAssertEqual(child.unknownFrees, 0, "every free names a block the child inherited")
        XCTAssertEqual(child.liveObjects, 2)
    }
}
