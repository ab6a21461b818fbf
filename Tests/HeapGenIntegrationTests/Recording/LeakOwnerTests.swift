// Direct and indirect leaks (Fixtures/leakowner.c), split as valgrind's memcheck
// splits "definitely" and "indirectly lost" and LeakSanitizer "Direct leak" and
// "Indirect leak", and suppressions that follow the owner: a block only a
// suppressed leak reaches is suppressed too.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class LeakOwnerTests: XCTestCase {
    /// Blocks and bytes.
    private struct Figure: Equatable, CustomStringConvertible {
        var blocks: Int
        var bytes: Int
        var description: String { "\(blocks) block(s), \(bytes) B" }
    }

    /// heapgen's direct and indirect leaks, summed over the leaked findings of the JSON report.
    private func heapgen(_ exe: String, _ mode: String) throws -> (direct: Figure, indirect: Figure, leaked: [[String: Any]]) {
        let result = try HeapGenCLI.run(["run", "--leaks", "--format", "json", "--", exe, mode])
        XCTAssertStatus(result, 0)
        guard let report = try? JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] else {
            throw TestSupportError("not one JSON report:\n\(result.transcript)")
        }
        let leaked = (report["findings"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "leaked" }
        func sum(_ key: String) -> Int { leaked.reduce(0) { $0 + ($1[key] as? Int ?? -1_000_000) } }
        for f in leaked {
            XCTAssertEqual((f["directBlocks"] as? Int ?? -1) + (f["indirectBlocks"] as? Int ?? -1), f["leakedBlocks"] as? Int)
            XCTAssertEqual((f["directBytes"] as? Int ?? -1) + (f["indirectBytes"] as? Int ?? -1), f["leakedBytes"] as? Int)
        }
        return (Figure(blocks: sum("directBlocks"), bytes: sum("directBytes")),
                Figure(blocks: sum("indirectBlocks"), bytes: sum("indirectBytes")), leaked)
    }

    /// valgrind --leak-check=full: definitely and indirectly lost.
    private func valgrind(_ exe: String, _ mode: String) throws -> (definitely: Figure, indirectly: Figure) {
        let valgrind = try tool("valgrind", hint: "apt-get install -y valgrind (.ci/run does)")
        let r = try runProcess(valgrind, ["--leak-check=full", "--run-libc-freeres=no", "--run-cxx-freeres=no", exe, mode],
                               timeout: 600)
        guard r.status == 0 else { throw TestSupportError("valgrind run failed:\n\(r.transcript)") }
        func figure(_ label: String) -> Figure {
            // ==1== definitely lost: 48 bytes in 1 blocks
            for line in r.stderrLines where line.contains(label + ":") {
                let words = line.components(separatedBy: label + ":")[1]
                    .replacingOccurrences(of: ",", with: "").split(separator: " ")
                if words.count >= 4, let bytes = Int(words[0]), let blocks = Int(words[3]) {
                    return Figure(blocks: blocks, bytes: bytes)
                }
            }
            return Figure(blocks: 0, bytes: 0)
        }
        return (figure("definitely lost"), figure("indirectly lost"))
    }

    private func suppressionFile(_ text: String) throws -> String {
        let path = try TestPaths.freshDirectory("supp") + "/owner.supp"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func testDirectAndIndirectLeaksAreValgrindsDefinitelyAndIndirectlyLost() throws {
        let exe = try Fixture.build("leakowner.c")
        for (mode, direct, indirect) in [("owner", Figure(blocks: 1, bytes: 48), Figure(blocks: 1, bytes: 200)),
                                         ("chain", Figure(blocks: 2, bytes: 80), Figure(blocks: 3, bytes: 256))] {
            XCTAssertStatus(try runProcess(exe, [mode]), 0, "the fixture fails without heapgen")
            let h = try heapgen(exe, mode)
            XCTAssertEqual(h.direct, direct, mode)
            XCTAssertEqual(h.indirect, indirect, mode)
            let v = try valgrind(exe, mode)
            XCTAssertEqual(v.definitely, direct, "valgrind \(mode)")
            XCTAssertEqual(v.indirectly, indirect, "valgrind \(mode)")
        }
    }

    /// The text report says it LeakSanitizer's way, per finding; a cycle of two blocks
    /// (one site) is one direct leak and one indirect, as valgrind counts it.
    func testTheTextReportSaysDirectAndIndirectLeak() throws {
        let exe = try Fixture.build("leakowner.c")
        let text = try HeapGenCLI.run(["run", "--leaks", "--", exe, "chain"])
        XCTAssertStatus(text, 0)
        let lines = text.stdoutText.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        XCTAssertEqual(lines.filter { $0.hasPrefix("Direct leak of ") }.sorted(),
                       ["Direct leak of 32 byte(s) in 1 object(s)", "Direct leak of 48 byte(s) in 1 object(s)"], text.transcript)
        XCTAssertEqual(lines.filter { $0.hasPrefix("Indirect leak of ") }.sorted(),
                       ["Indirect leak of 200 byte(s) in 1 object(s)", "Indirect leak of 24 byte(s) in 1 object(s)",
                        "Indirect leak of 32 byte(s) in 1 object(s)"], text.transcript)
        XCTAssertTrue(lines.contains("SUMMARY: heapgen: 336 byte(s) leaked in 5 allocation(s)."), text.transcript)
    }

    /// The gate counts leaked sites as the report lists them: the sites leaked only through
    /// another are nested there, and counted apart here. It said "5 leaked sites" beside the
    /// report's "Leaked: 2 sites" (probe of a C++ program with owned containers).
    func testTheGateCountsLeakedSitesAsTheReportDoes() throws {
        let exe = try Fixture.build("leakowner.c")
        let run = try HeapGenCLI.run(["run", "--fail-on", "leaked", "--", exe, "chain"])
        XCTAssertStatus(run, 23)
        XCTAssertTrue(run.stdoutText.contains("\nLeaked: 2 sites unreachable at exit\n"), run.transcript)
        XCTAssertEqual(run.stderrLines.last, "SUMMARY: heapgen: gate failed: 2 leaked sites (336 B in 5 blocks, "
                       + "with 3 sites leaked only through them).", run.transcript)
    }

    /// The trace's `indirectLeaks` record names the payload and its owner, the 48 B block.
    func testTheTraceRecordsEachIndirectBlocksOwner() throws {
        let exe = try Fixture.build("leakowner.c")
        let rec = try HeapGenCLI.recording(exe, ["owner"], flags: ["--quiet", "--leaks"])
        XCTAssertStatus(rec.result, 0)
        var sizes: [UInt64: UInt64] = [:]
        var unreachable: [UInt64] = []
        var indirect: [IndirectLeak] = []
        for record in try HeapGenCLI.records(rec.trace) {
            switch record {
            case let .allocation(_, address, size, _, _): sizes[address] = size
            case let .unreachable(addresses): unreachable += addresses
            case let .indirectLeaks(leaks): indirect += leaks
            default: break
            }
        }
        XCTAssertEqual(unreachable.map { sizes[$0] }.sorted { ($0 ?? 0) < ($1 ?? 0) }, [48, 200])
        XCTAssertEqual(indirect.count, 1)
        XCTAssertEqual(indirect.first.flatMap { sizes[$0.address] }, 200)
        XCTAssertEqual(indirect.first.flatMap { sizes[$0.owner] }, 48)
    }

    /// leak:owner_function matches the owner's stack only (the payload comes from setup →
    /// make_payload); the payload only the owner reaches is suppressed with it.
    func testASuppressedOwnerSuppressesWhatOnlyItReaches() throws {
        let exe = try Fixture.build("leakowner.c")
        let supp = try suppressionFile("leak:owner_function\n")
        let native = try runProcess(exe, ["owner"])
        XCTAssertStatus(native, 0)

        let passed = try HeapGenCLI.run(["run", "--fail-on", "leaked", "--suppressions", supp, "--print-suppressions",
                                         "--", exe, "owner"])
        XCTAssertStatus(passed, 0)
        let lines = passed.stderrLines
        XCTAssertEqual(lines.last, "SUMMARY: heapgen: gate passed: no leaked sites; 2 suppressed.", passed.transcript)
        XCTAssertFalse(lines.contains { $0.hasPrefix("heapgen: gate failed") }, passed.transcript)
        XCTAssertTrue(lines.contains { $0.hasPrefix("heapgen: suppressed by leak:owner_function") && $0.contains("blocks at make_payload") },
                      passed.transcript)
        XCTAssertTrue(lines.contains { $0.hasPrefix("      2        248 leak:owner_function") }, passed.transcript)

        let failed = try HeapGenCLI.run(["run", "--fail-on", "leaked", "--", exe, "owner"])
        XCTAssertStatus(failed, 23)
        XCTAssertTrue(failed.stderrLines.contains("SUMMARY: heapgen: gate failed: 1 leaked site (248 B in 2 blocks, with 1 site leaked only through it)."),
                      failed.transcript)

        // In the chain, the owner's payload and its tail follow it; the cycle of make_pair does not.
        let chain = try HeapGenCLI.run(["run", "--fail-on", "leaked", "--suppressions", supp, "--", exe, "chain"])
        XCTAssertStatus(chain, 23)
        XCTAssertEqual(chain.stderrLines.last, "SUMMARY: heapgen: gate failed: 1 leaked site (64 B in 2 blocks, with 1 site leaked only through it); 3 suppressed.",
                       chain.transcript)
    }

    /// A program that defines __lsan_default_suppressions() (LeakSanitizer's hook) has its
    /// lines honoured: the trace keeps them, the gate applies them with the user's and
    /// --print-suppressions says they come from the program.
    func testTheProgramsDefaultSuppressionsAreHonoured() throws {
        let exe = try Fixture.build("leakowner.c", flags: ["-DLEAKOWNER_LSAN"], output: "leakowner-lsan")
        let native = try runProcess(exe, ["owner"])
        XCTAssertStatus(native, 0)

        let rec = try HeapGenCLI.recording(exe, ["owner"], flags: ["--quiet", "--leaks"])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, native.stdout)
        let texts: [String] = try HeapGenCLI.records(rec.trace).compactMap {
            if case let .programSuppressions(text) = $0 { return text } else { return nil }
        }
        XCTAssertEqual(texts, ["leak:owner_function\n"])

        let passed = try HeapGenCLI.run(["run", "--fail-on", "leaked", "--print-suppressions", "--", exe, "owner"])
        XCTAssertStatus(passed, 0)
        let lines = passed.stderrLines
        XCTAssertTrue(lines.contains("      2        248 leak:owner_function  (from the program: __lsan_default_suppressions)"),
                      passed.transcript)
        XCTAssertTrue(lines.contains { $0.hasPrefix("heapgen: suppressed by leak:owner_function (__lsan_default_suppressions:1): blocks at make_payload") },
                      passed.transcript)
        XCTAssertEqual(lines.last, "SUMMARY: heapgen: gate passed: no leaked sites; 2 suppressed.", passed.transcript)

        // The same program without the hook fails: the rules came from it.
        let plain = try HeapGenCLI.run(["run", "--fail-on", "leaked", "--", try Fixture.build("leakowner.c"), "owner"])
        XCTAssertStatus(plain, 23)

        // Without --leaks the shim never looks for the hook: no record.
        let quiet = try HeapGenCLI.recording(exe, ["owner"], flags: ["--quiet"])
        XCTAssertStatus(quiet.result, 0)
        XCTAssertFalse(try HeapGenCLI.records(quiet.trace).contains {
            if case .programSuppressions = $0 { return true } else { return false }
        })
    }
}
