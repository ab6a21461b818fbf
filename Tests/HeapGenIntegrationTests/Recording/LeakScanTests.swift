// `--leaks`: the conservative reachability scan at exit, and the leaked findings
// and gate verdicts it enables (Fixtures/leaks.c).

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class LeakScanTests: XCTestCase {
    /// `heapgen run FLAGS --format json -- leaks ARGS`: status and report.
    private func run(_ flags: [String], _ arguments: [String] = []) throws -> (ProcessResult, [String: Any]) {
        let exe = try Fixture.build("leaks.c")
        let result = try HeapGenCLI.run(["run", "--format", "json"] + flags + ["--", exe] + arguments)
        guard let report = try? JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] else {
            throw TestSupportError("not one JSON report:\n\(result.transcript)")
        }
        return (result, report)
    }

    private func findings(_ report: [String: Any]) -> [(kind: String, function: String?, finding: [String: Any])] {
        (report["findings"] as? [[String: Any]] ?? []).map { f in
            let frames = f["frames"] as? [[String: Any]] ?? []
            let user = f["userFrame"] as? Int ?? 0
            let frame = user < frames.count ? frames[user] : nil
            return (f["kind"] as? String ?? "", frame?["shortFunction"] as? String, f)
        }
    }

    func testLeaksFindsTheLostBlocksAndNotTheAbandonedList() throws {
        let (result, report) = try run(["--leaks"])
        XCTAssertStatus(result, 0)
        let all = findings(report)
        let leaked = all.filter { $0.kind == "leaked" }
        let abandoned = all.filter { $0.kind == "abandoned" }
        XCTAssertEqual(leaked.map(\.function), ["lose_block"], result.transcript)
        XCTAssertEqual(abandoned.map(\.function), ["keep_node"], result.transcript)
        if let lost = leaked.first?.finding {
            XCTAssertEqual(lost["objectsPerCycle"] as? [Int], [1, 1, 1, 1, 1, 1])
            XCTAssertEqual(lost["bytesPerCycle"] as? [Int], [64, 64, 64, 64, 64, 64])
            XCTAssertEqual(lost["survivingObjects"] as? Int, 5)
        }
        if let kept = abandoned.first?.finding {
            XCTAssertEqual(kept["objectsPerCycle"] as? [Int], [1, 1, 1, 1, 1, 1])
            XCTAssertEqual(kept["bytesPerCycle"] as? [Int], [32, 32, 32, 32, 32, 32])
        }
        let notes = report["notes"] as? [String] ?? []
        XCTAssertTrue(notes.contains("leak scan: 6 unreachable blocks (384 B) of 12 live at exit."), "\(notes)")
    }

    /// A program that ends with _exit runs no exit handlers; the scan runs in heapgen's
    /// _exit, and finds what a return from main finds (before, no scan ran and
    /// `--fail-on leaked` passed).
    /// The scan skips the pages of private mappings the program never touched (they hold
    /// zeros): a 2 GiB mapping with one page written (a JVM's G1 heap at -Xms2g) is scanned
    /// within the 1 GiB cap, and the pointer in the touched page keeps its block. The scan
    /// used to read the whole mapping, stop at the cap, and judge no leak at all.
    func testTheScanSkipsPagesTheProgramNeverTouched() throws {
        let exe = try Fixture.build("untouched.c")
        let result = try HeapGenCLI.run(["run", "--leaks", "--format", "json", "--", exe])
        XCTAssertStatus(result, 0)
        XCTAssertTrue(result.stdoutText.hasPrefix("mapped\n"), result.transcript)
        XCTAssertFalse(result.stderrText.contains("stopped after reading"), result.transcript)
        let json = result.stdoutText[result.stdoutText.range(of: "{")!.lowerBound...]
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        XCTAssertEqual((report["totals"] as? [String: Any])?["leakScanned"] as? Bool, true, result.transcript)
        let leaked = findings(report).filter { $0.kind == "leaked" }
        XCTAssertEqual(leaked.map { $0.finding["leakedBytes"] as? Int }, [48],
                       "only the lost block; the one the touched page points to is kept: \(result.transcript)")
    }

    func testAProgramThatEndsWithUnderscoreExitIsScannedToo() throws {
        let (result, report) = try run(["--leaks"], ["_exit"])
        XCTAssertStatus(result, 0)
        XCTAssertEqual(findings(report).filter { $0.kind == "leaked" }.map(\.function), ["lose_block"], result.transcript)
        let notes = report["notes"] as? [String] ?? []
        XCTAssertTrue(notes.contains("leak scan: 6 unreachable blocks (384 B) of 12 live at exit."), "\(notes)")
        let (gate, _) = try run(["--fail-on", "leaked"], ["_exit"])
        XCTAssertStatus(gate, 23)
    }

    func testWithoutLeaksNothingIsLeaked() throws {
        let (result, report) = try run([])
        XCTAssertStatus(result, 0)
        let all = findings(report)
        XCTAssertFalse(all.contains { $0.kind == "leaked" }, "\(all.map(\.kind))")
        XCTAssertEqual(all.filter { $0.kind == "abandoned" }.compactMap(\.function).sorted(), ["keep_node", "lose_block"])
        XCTAssertFalse((report["notes"] as? [String] ?? []).contains { $0.hasPrefix("leak scan") })
    }

    func testFailOnLeakedImpliesTheScan() throws {
        let (failing, _) = try run(["--fail-on", "leaked"])
        XCTAssertStatus(failing, 23)
        let (passing, report) = try run(["--fail-on", "leaked"], ["noleak"])
        XCTAssertStatus(passing, 0)
        let notes = report["notes"] as? [String] ?? []
        XCTAssertTrue(notes.contains("leak scan: 0 unreachable blocks (0 B) of 6 live at exit."), "\(notes)")
    }

    /// A program that made itself non-dumpable cannot be read by a user's heapgen (only root
    /// may): one warning that says so, no verdict on leaks, and the program's own status.
    /// As root the test runs heapgen as `nobody` (setpriv), from a directory nobody can use.
    func testANonDumpableProgramIsNamedAsTheReason() throws {
        let exe = try Fixture.build("leaks.c")
        var template = Array("/tmp/heapgen-nodump.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TestSupportError("mkdtemp failed") }
        let shared = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: shared) }
        for (from, name) in [(try TestPaths.heapgen(), "heapgen"), (try TestPaths.shim(), "libHeapGenShim.so"), (exe, "leaks")] {
            try FileManager.default.copyItem(atPath: from, toPath: shared + "/" + name)
        }
        XCTAssertEqual(chmod(shared, 0o1777), 0)
        let command = [shared + "/heapgen", "run", "--leaks", "--format", "json", "--", shared + "/leaks", "nodump"]
        let result = geteuid() == 0
            ? try runProcess("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] + command,
                             directory: shared)
            : try runProcess(command[0], Array(command.dropFirst()), directory: shared)
        XCTAssertStatus(result, 0)
        let warnings = result.stderrLines.filter { $0.contains("warning") }
        XCTAssertEqual(warnings, ["heapgen: warning: cannot read the memory of process \(pidOf(warnings.first)): it made itself "
            + "non-dumpable (prctl PR_SET_DUMPABLE 0, or a change of user or group ID) and only root may read such a process; "
            + "no block is reported as leaked"], result.transcript)
        let report = try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] ?? [:]
        XCTAssertFalse(findings(report).contains { $0.kind == "leaked" }, result.transcript)
        XCTAssertEqual(findings(report).filter { $0.kind == "abandoned" }.compactMap(\.function).sorted(),
                       ["keep_node", "lose_block"], result.transcript)
    }

    /// vforkexit.c: a vfork child that calls exit() runs the exit handlers in its parent's
    /// memory, and consumes them there: the parent's own exit then runs none, natively too.
    /// The child must not take the parent's scan (it did once the wipe-on-fork word alone
    /// said whose segment it was: the scan of the suspended parent ran into its 20 s limit),
    /// and the scan the parent never asked for must not pass for a clean one: the collector
    /// says so, and a leak gate says leaks were not judged.
    func testAScanLostToAVforkChildIsNamedNotPassedOver() throws {
        let exe = try Fixture.build("vforkexit.c")
        let rec = try HeapGenCLI.recording(exe, flags: ["--quiet", "--leaks"], timeout: 60)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdoutText, "child 7\n")
        XCTAssertLessThan(rec.result.seconds, 10, "no scan ran into its time limit")
        XCTAssertEqual(rec.result.stderrLines, [Self.noScanWarning(rec.trace)], rec.result.transcript)
        var scans = 0
        try HeapGenCLI.records(rec.trace).forEach { if case .referenceGraph = $0 { scans += 1 } }
        XCTAssertEqual(scans, 0)

        let gate = try HeapGenCLI.run(["run", "--fail-on", "leaked", "--", exe], timeout: 60)
        XCTAssertStatus(gate, 0)
        XCTAssertTrue(gate.stderrLines.contains("heapgen: warning: leaked memory not judged: the trace has no leak scan "
            + "(record with --leaks; a process that exits without running its exit handlers is not scanned, and a scan that "
            + "would read more than 1 GiB or take 20 s gives up, as the recording's warning said)"), gate.transcript)
        XCTAssertEqual(gate.stderrLines.last, "SUMMARY: heapgen: gate passed: leaked memory not judged (no leak scan).", gate.transcript)
    }

    /// syscallexit.c: two children leave by the exit system call itself, so neither is
    /// scanned. Only the one with a block of its own live gets the warning: the other (a
    /// tool's probe child, as strace -f starts) had nothing a scan could judge.
    func testOnlyAChildWithBlocksOfItsOwnIsWarnedOfItsMissingScan() throws {
        let exe = try Fixture.build("syscallexit.c")
        let rec = try HeapGenCLI.recording(exe, flags: ["--quiet", "--leaks"], timeout: 60)
        XCTAssertStatus(rec.result, 0)
        let lines = rec.result.stdoutText.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        guard lines.count == 2, lines.allSatisfy({ $0.count == 3 && $0[2] == "0" }) else {
            return XCTFail(rec.result.transcript)
        }
        let (a, b) = (lines[0][1], lines[1][1])
        XCTAssertTrue(rec.allTraces.contains(rec.trace + ".\(a)"), "\(rec.allTraces)")
        XCTAssertEqual(rec.result.stderrLines, [Self.noScanWarning(rec.trace + ".\(b)")], rec.result.transcript)
    }

    /// handlerexit.c: a timer's handler calls _exit while main is (almost always) inside
    /// heapgen_control, which holds its lock while it waits. The exit scan in heapgen's
    /// _exit must not wait on that lock: it gives up after about a second and the collector
    /// says the scan is missing. Before, the program hung for good.
    func testUnderscoreExitInAHandlerThatInterruptedARequestDoesNotHang() throws {
        let exe = try Fixture.build("handlerexit.c")
        for _ in 1...3 {
            let rec = try HeapGenCLI.recording(exe, flags: ["--quiet", "--leaks"], timeout: 60)
            XCTAssertStatus(rec.result, 0)
            XCTAssertLessThan(rec.result.seconds, 10, rec.result.transcript)
            var scans = 0
            try HeapGenCLI.records(rec.trace).forEach { if case .referenceGraph = $0 { scans += 1 } }
            // The handler may also land between two requests: then the scan is taken.
            XCTAssertEqual(rec.result.stderrLines, scans == 1 ? [] : [Self.noScanWarning(rec.trace)], rec.result.transcript)
        }
    }

    /// scankill.c: the parent SIGKILLs its child while the child waits for its exit scan (the
    /// child's 400 MB keep the scan busy), as a pool terminating its workers does. Before, the
    /// collector left the dead thread uncollected: as its tracer it had to wait for it first,
    /// so the parent's waitpid, and heapgen with it, hung for good. Now one line says what
    /// happened and the parent sees the SIGKILL.
    func testAChildKilledDuringItsScanIsReleasedToItsParent() throws {
        let exe = try Fixture.build("scankill.c")
        let rec = try HeapGenCLI.recording(exe, flags: ["--quiet", "--leaks"], timeout: 60)
        XCTAssertStatus(rec.result, 0)
        XCTAssertFalse(rec.result.timedOut, rec.result.transcript)
        XCTAssertEqual(rec.result.stdoutText, "child killed by 9\n", rec.result.transcript)
        let lines = rec.result.stderrLines
        XCTAssertEqual(lines.count, 1, rec.result.transcript)
        XCTAssertTrue(lines.first?.hasSuffix(" ended during its scan (killed while it waited); no block is reported as leaked") == true,
                      rec.result.transcript)
        guard let child = rec.allTraces.first(where: { $0 != rec.trace }) else { return XCTFail("no child trace") }
        let s = try HeapGenCLI.summary(child)
        XCTAssertEqual(s.endReason, "signaled", "\(s)")
        XCTAssertEqual(s.endStatus, 9)
        XCTAssertEqual(lines.first, "heapgen: warning: process \(s.processPid ?? 0) ended during its scan (killed while it waited); "
            + "no block is reported as leaked")
    }

    static func noScanWarning(_ trace: String) -> String {
        "heapgen: warning: \(trace): no scan at exit, so no verdict on its leaks: the process ended without asking "
            + "for one (a vfork child's exit() used up its exit handlers, it made the exit system call itself, as Go "
            + "programs do, or it called _exit in a signal handler that interrupted a heapgen request)"
    }

    /// The pid in "process N:" of a warning, "?" when there is none.
    private func pidOf(_ line: String?) -> String {
        guard let line, let r = line.range(of: "process ") else { return "?" }
        return String(line[r.upperBound...].prefix { $0.isNumber })
    }

    func testTheTraceHoldsTheUnreachableAddresses() throws {
        let exe = try Fixture.build("leaks.c")
        let rec = try HeapGenCLI.recording(exe, [], flags: ["--quiet", "--leaks"])
        XCTAssertStatus(rec.result, 0)
        var reader = try TraceReader(path: rec.trace)
        var lostBlocks: Set<UInt64> = []
        var stacks: [UInt32: [UInt64]] = [:]
        var allocations: [(address: UInt64, size: UInt64)] = []
        var unreachable: [UInt64] = []
        try reader.forEach { record in
            switch record {
            case let .allocation(_, address, size, stack, _):
                allocations.append((address, size))
                if size == 64 { lostBlocks.insert(address) }
                _ = stacks[stack]
            case let .stack(id, frames): stacks[id] = frames
            case let .unreachable(addresses): unreachable += addresses
            default: break
            }
        }
        XCTAssertEqual(allocations.count, 12)
        XCTAssertEqual(Set(unreachable), lostBlocks)
        XCTAssertEqual(unreachable, unreachable.sorted())
    }
}
