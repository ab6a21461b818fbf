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
        // The declaring file (LLVM 16+ llvm-symbolizer answers it), else the module.
        XCTAssertTrue(["registry.c", (fixture as NSString).lastPathComponent].contains(path.first?["detail"] as? String ?? ""), "\(path)")
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
        XCTAssertTrue(out.contains("held by: g_clients (registry.c) → block (accept_client, registry.c:")
                      || out.contains("held by: g_clients (\((fixture as NSString).lastPathComponent)) → block (accept_client, registry.c:"), out)
        XCTAssertTrue(out.contains("retains 1.8 kB, holding 1 more finding:"), out)
        XCTAssertTrue(out.contains("- blocks from open_buffer (open_buffer"), out)
        XCTAssertFalse(out.contains("2. blocks from open_buffer"), "held findings are not top-level:\n\(out)")
    }

    /// registry.c `local` with --retention-at request: the sessions are held by a local of
    /// serve_locally(), named as that thread's stack in that function.
    func testStackRootNamesTheThreadAndFunction() throws {
        let fixture = try ReportFixture.c("registry.c")
        let run = try HeapGenCLI.runJSON(fixture, ["local"], flags: ["--retention-at", "request"])
        let scan = run.report.json["retentionScan"] as? [String: Any]
        XCTAssertEqual(scan?["trigger"] as? String, "mark", "\(run.report)")
        XCTAssertEqual(scan?["label"] as? String, "request", "\(run.report)")
        guard let session = run.report.findings.first(where: { ($0.userFrame?.function ?? "") == "serve_locally" }) else {
            return XCTFail("sessions of serve_locally:\n\(run.report)")
        }
        let path = session.json["retention"] as? [[String: Any]] ?? []
        let root = path.first?["name"] as? String ?? ""
        // The newest session is also in a register heapgen_mark saved in its frame, which comes
        // first on the stack: that slot is serve_locally's too (a stale code address in the
        // shim's frame named open_buffer before heapgen_mark sent where its caller's frame is).
        XCTAssertTrue(root.hasPrefix("thread ") && root.hasSuffix("'s stack in serve_locally"), "\(path)")
        XCTAssertEqual(jsonInt(session.json["retainedBytes"]), 8 * (24 + 200), "\(session.json)")
    }

    #if arch(x86_64)
    /// registry.c `registers`: the newest session is only in callee-saved registers while
    /// heapgen_mark runs (mark_holding, in assembly), so its only stack copies are the ones
    /// heapgen_mark's frames saved. Those slots are named after the program's caller,
    /// never after heapgen's functions.
    func testSlotsInTheShimsFramesAreTheCallers() throws {
        let fixture = try ReportFixture.c("registry.c")
        let run = try HeapGenCLI.runJSON(fixture, ["registers"], flags: ["--retention-at", "request"])
        XCTAssertTrue(run.result.stdoutText.hasPrefix("registers 0x"), run.result.transcript)
        guard let session = run.report.findings.first(where: { ($0.userFrame?.function ?? "") == "serve_in_registers" }) else {
            return XCTFail("sessions of serve_in_registers:\n\(run.report)")
        }
        let path = session.json["retention"] as? [[String: Any]] ?? []
        let root = path.first?["name"] as? String ?? ""
        XCTAssertEqual(path.first?["kind"] as? String, "root", "\(path)")
        // A register root if the thread's registers still hold it, else a saved copy on the stack.
        if root.contains("'s stack in ") {
            XCTAssertTrue(root.hasSuffix("'s stack in mark_holding"), "\(path)")
        } else {
            XCTAssertTrue(root.contains("'s register "), "\(path)")
        }
        for finding in run.report.findings {
            for step in finding.json["retention"] as? [[String: Any]] ?? [] {
                let name = step["name"] as? String ?? ""
                XCTAssertFalse(name.contains("heapgen_") || name.contains(" hg_"), "heapgen's own frame named: \(name)")
            }
        }
        // The 8 sessions and their buffers, but for the newest buffer when the caller's frame
        // also holds it (a root of its own).
        XCTAssertTrue([8 * 24 + 7 * 200, 8 * (24 + 200)].contains(jsonInt(session.json["retainedBytes"]) ?? 0),
                      "\(session.json)")
    }
    #endif

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

final class SwiftRetentionReportTests: XCTestCase {
    /// Retention/main.swift `bus`: view models held through EventBus.shared's closure array.
    func testViewModelHeldThroughTheSingletonsClosureArray() throws {
        let fixture = try ReportFixture.swift("Retention")
        let report = try HeapGenCLI.runJSON(fixture, ["bus", "8"], flags: ["--retention"]).report
        let findings = report.findings
        guard let model = findings.firstIndex(where: { $0.typeName == "Fixture.SettingsViewModel" }) else {
            return XCTFail("the view model should be a finding:\n\(report)")
        }
        let modelJSON = findings[model].json
        guard let holder = jsonInt(modelJSON["heldBy"]) else { return XCTFail("held by the closure: \(modelJSON)") }
        let top = findings[holder].json
        XCTAssertNil(top["heldBy"], "\(top)")
        XCTAssertNotNil(jsonInt(top["retainedBytes"]), "\(top)")
        let path = top["retention"] as? [[String: Any]] ?? []
        XCTAssertEqual(path.first?["kind"] as? String, "root", "\(path)")
        XCTAssertEqual(path.first?["name"] as? String, "static Fixture.EventBus.shared", "\(path)")
        XCTAssertEqual(path[safe: 1]?["typeName"] as? String, "Fixture.EventBus", "\(path)")
        XCTAssertEqual(path[safe: 1]?["field"] as? String, "subscribers", "the stored property of the edge: \(path)")
        // The model's own path goes through the singleton too.
        let own = modelJSON["retention"] as? [[String: Any]] ?? []
        XCTAssertEqual(own.first?["name"] as? String, "static Fixture.EventBus.shared", "\(own)")
        XCTAssertEqual(own.last?["typeName"] as? String, "Fixture.SettingsViewModel", "\(own)")
    }

    /// movedenv.c (PostgreSQL's start-up, without line numbers): one function allocates the
    /// moved environment, lost once setenv() replaces it, and an argv copy a global keeps.
    /// The leaked finding groups both sites; what it says of retention is about the lost
    /// block only: no path from the global, and only the lost block's bytes.
    func testLeakedFindingSharingAFunctionWithAKeptBlockIsHeldByNothing() throws {
        let fixture = try ReportFixture.c("movedenv.c", flags: ["-g0"])
        let run = try HeapGenCLI.runJSON(fixture, flags: ["--leaks"])
        let out = String(decoding: run.result.stdout, as: UTF8.self)
        guard let moved = Int(out.split(separator: " ").dropFirst().first ?? ""), out.hasSuffix(" and argv, set 1\n") else {
            return XCTFail("movedenv's own output: \(out)")
        }
        let leaked = run.report.findings(kind: "leaked")
        guard let f = leaked.first(where: { $0.userFrame?.function == "move_environment" }) else {
            return XCTFail("the moved environment is leaked:\n\(run.report)")
        }
        XCTAssertEqual(jsonInt(f.json["leakedBlocks"]), 1, "\(f.json)")
        XCTAssertEqual(jsonInt(f.json["leakedBytes"]), (moved + 1) * 8, "the moved array alone: \(f.json)")
        XCTAssertNil(f.json["retention"], "a path to the kept argv copy would contradict 'leaked': \(f.json)")
        XCTAssertEqual(jsonInt(f.json["retainedBytes"]), jsonInt(f.json["leakedBytes"]), "\(f.json)")
        let text = String(decoding: try HeapGenCLI.run(["report", run.trace]).stdout, as: UTF8.self)
        XCTAssertTrue(text.contains("held by: nothing (unreachable from every root)"), text)
        XCTAssertFalse(text.contains("held by: g_argv"), text)
    }

    /// Retention/main.swift `pair`: Parent and Child point at each other and are dropped.
    func testDroppedPairIsLeakedWithItsCycleNamed() throws {
        let fixture = try ReportFixture.swift("Retention")
        let run = try HeapGenCLI.runJSON(fixture, ["pair", "8"], flags: ["--leaks"])
        let leaked = run.report.findings(kind: "leaked")
        guard let f = leaked.first(where: { $0.json["cycle"] != nil }) else {
            return XCTFail("a leaked finding with its cycle:\n\(run.report)")
        }
        XCTAssertNil(f.json["retention"], "unreachable: no path")
        let cycle = f.json["cycle"] as? [[String: Any]] ?? []
        XCTAssertEqual(Set(cycle.compactMap { $0["typeName"] as? String }), ["Fixture.Parent", "Fixture.Child"], "\(cycle)")
        XCTAssertEqual(Set(cycle.compactMap { $0["field"] as? String }), ["child", "parent"], "\(cycle)")
        // One root cause for the pair: follow heldBy to it; it retains every Parent and Child.
        var top = f.json, steps = 0
        while let h = jsonInt(top["heldBy"]), steps < 10 { top = run.report.findings[h].json; steps += 1 }
        XCTAssertEqual(top["heldReason"] as? String, nil)
        XCTAssertEqual(jsonInt(top["retainedBytes"]), 8 * (40 + 24), "every Parent and Child: \(top)")
        let text = String(decoding: try HeapGenCLI.run(["report", run.trace]).stdout, as: UTF8.self)
        XCTAssertTrue(text.contains("cycle: Child.parent → Parent.child → Child") || text.contains("cycle: Parent.child → Child.parent → Parent"), text)
    }

    /// heapgen-demo --retention: two root causes, the view model's cycle and the subscriber's
    /// closure, everything else held by them.
    func testDemoHasTwoRootCauses() throws {
        let demo = TestPaths.buildDir + "/heapgen-demo"
        let run = try HeapGenCLI.runJSON(demo, flags: ["--retention"])
        let judged = run.report.findings.filter { $0.kind == "abandoned" || $0.kind == "leaked" }
        let top = judged.filter { $0.json["heldBy"] == nil }
        XCTAssertEqual(top.count, 2, "two root causes:\n\(run.report)")
        XCTAssertTrue(top.contains { $0.typeName?.hasSuffix("ProfileViewModel") == true }, "\(run.report)")
        let vm = top.first { $0.typeName?.hasSuffix("ProfileViewModel") == true }
        let cycle = vm?.json["cycle"] as? [[String: Any]] ?? []
        XCTAssertEqual(cycle.first?["field"] as? String, "onChange", "\(cycle)")
        XCTAssertTrue(judged.count > 2, "the rest held: \(run.report)")
    }
}
