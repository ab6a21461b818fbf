// "Why is it alive": retention paths, held findings and retained bytes in real reports.

import Foundation
import HeapGenTestSupport
import XCTest

final class RetentionReportTests: XCTestCase {
    /// registry.c: a list of sessions reached from the global g_clients, each owning a buffer.
    func testRegistryListIsHeldByTheNamedGlobalAndBuffersByTheSessions() throws {
        let n = 8
        let fixture = try ReportFixture.c("registry.c")
        let run = try HeapGenCLI.runJSON(fixture, flags: ["--retention"])
        let report = run.report
        let scan = report.json["retentionScan"] as? [String: Any]
        XCTAssertEqual(scan?["trigger"] as? String, "exit", "\(report)")
        XCTAssertGreaterThan(jsonInt(scan?["bytesRead"]) ?? 0, 0, "\(report)")

        let findings = report.findings
        guard let s = findings.firstIndex(where: { ($0.userFrame?.function ?? "") == "accept_client" && $0.kind == "abandoned" }),
              let b = findings.firstIndex(where: { ($0.userFrame?.function ?? "").hasPrefix("open_buffer") && $0.kind == "abandoned" }) else {
            return XCTFail("sessions and buffers should both be abandoned:\n\(report)")
        }
        let session = findings[s].json, buffer = findings[b].json

        // The path starts at the global, named, in this program's module.
        let path = session["retention"] as? [[String: Any]] ?? []
        XCTAssertEqual(path.first?["kind"] as? String, "root", "\(path)")
        XCTAssertEqual(path.first?["name"] as? String, "g_clients", "\(path)")
        XCTAssertEqual(path.first?["detail"] as? String, (fixture as NSString).lastPathComponent, "\(path)")
        // Then the sessions, newest to oldest, each linked through `next` (offset 8).
        let blocks = path.dropFirst()
        XCTAssertEqual(blocks.count, n, "every session from the head to the oldest: \(path)")
        for step in blocks.dropLast() { XCTAssertEqual(jsonInt(step["offset"]), 8, "\(step)") }
        XCTAssertNil(path.last?["offset"], "the last step is the object itself: \(path)")
        let frame = path.last?["frame"] as? [String: Any]
        XCTAssertEqual(frame?["function"] as? String, "accept_client", "\(path)")
        XCTAssertEqual(jsonInt(frame?["line"]), try ReportFixture.lines("registry.c", containing: "calloc(1, sizeof *c)").first)

        // The buffers are held by the session finding; it retains sessions + buffers.
        XCTAssertEqual(jsonInt(buffer["heldBy"]), s, "\(buffer)")
        XCTAssertEqual(buffer["heldReason"] as? String, "dominated")
        XCTAssertNil(session["heldBy"], "sessions are a root cause")
        XCTAssertEqual(jsonInt(session["retainedBytes"]), n * (24 + 200), "\(session)")
        XCTAssertNil(buffer["retainedBytes"], "only top-level findings have retained bytes")

        // The text report: the scan's cost, one top-level finding with the buffers under it.
        let text = try HeapGenCLI.run(["report", run.trace])
        let out = String(decoding: text.stdout, as: UTF8.self)
        XCTAssertTrue(out.contains("retention scan at exit:"), out)
        XCTAssertTrue(out.contains("held by: g_clients (\((fixture as NSString).lastPathComponent)) → block (accept_client, registry.c:"), out)
        XCTAssertTrue(out.contains("retains 1.8 kB, holding 1 more finding:"), out)
        XCTAssertTrue(out.contains("- blocks from open_buffer (open_buffer"), out)
        XCTAssertFalse(out.contains("2. blocks from open_buffer"), "held findings are not top-level:\n\(out)")
    }

    /// Without --retention nothing of this appears.
    func testNoGraphNoRetentionFields() throws {
        let fixture = try ReportFixture.c("registry.c")
        let report = try HeapGenCLI.runJSON(fixture).report
        XCTAssertNil(report.json["retentionScan"])
        for f in report.findings {
            for key in ["retention", "cycle", "heldBy", "heldReason", "retainedBytes"] { XCTAssertNil(f.json[key], key) }
        }
    }
}
