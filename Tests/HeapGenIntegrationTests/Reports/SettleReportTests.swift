// --settle: objects of the last cycle freed ~50 ms after the last mark by another thread.

import Foundation
import HeapGenTestSupport
import XCTest

final class SettleReportTests: XCTestCase {
    func testSettleLetsLateFreesHappenBeforeTheSnapshot() throws {
        let n = 8
        let fixture = try ReportFixture.c("settle.c")

        // Without --settle the final snapshot is the last mark: the last cycle's
        // 4 blocks are still live there and count as its survivors.
        let plain = try HeapGenCLI.runJSON(fixture, ["\(n)"]).report
        XCTAssertEqual(plain.cycles, n, "\(plain)")
        let lastPlain = plain.generations[safe: n]
        XCTAssertEqual(lastPlain?.persistentObjects, 4, "last cycle without --settle: \(lastPlain?.json ?? [:])")
        XCTAssertEqual(lastPlain?.persistentBytes, 480, "last cycle without --settle: \(lastPlain?.json ?? [:])")
        for k in 1..<n {
            XCTAssertEqual(plain.generations[safe: k]?.persistentObjects, 0, "cycle \(k)'s blocks were freed by cycle \(k + 1)")
        }
        let pendingPlain = plain.findings(function: "pending_work")
        XCTAssertEqual(pendingPlain.map(\.kind), ["cache"], "flat at 4 live blocks, above setup at the last mark:\n\(plain.findingsSummary)")
        XCTAssertEqual(pendingPlain.first?.survivingObjects, 4, plain.findingsSummary)
        XCTAssertEqual(pendingPlain.first?.survivingBytes, 480, plain.findingsSummary)
        XCTAssertTrue(plain.findings.allSatisfy { $0.kind != "abandoned" }, plain.findingsSummary)

        // With --settle 200ms the snapshot is taken after the releaser thread ran.
        let settled = try HeapGenCLI.runJSON(fixture, ["\(n)"], flags: ["--settle", "200ms"]).report
        XCTAssertEqual(settled.cycles, n, "the settle mark must not add a cycle: \(settled)")
        XCTAssertEqual(settled.generations.count, n + 2, "setup, \(n) cycles, tail: \(settled.generations.map(\.json))")
        let lastSettled = settled.generations[safe: n]
        XCTAssertEqual(lastSettled?.persistentObjects, 0, "last cycle with --settle: \(lastSettled?.json ?? [:])")
        XCTAssertEqual(lastSettled?.persistentBytes, 0, "last cycle with --settle: \(lastSettled?.json ?? [:])")
        XCTAssertTrue(settled.findings(function: "pending_work").isEmpty,
                      "nothing of pending_work is live at the settle snapshot:\n\(settled.findingsSummary)")
    }
}
