// heapgen diff and heapgen export on traces of real processes recorded by the
// built heapgen (fixture: Fixtures/leaky.c), pprof output read by Go's pprof.

import Foundation
import HeapGenTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class DiffEndToEndTests: XCTestCase {
    static let source = "leaky.c"

    func leakLine() throws -> Int { try XCTUnwrap(DiffExportFixture.lines(Self.source, containing: "/* LEAK */").first) }
    func churnLine() throws -> Int { try XCTUnwrap(DiffExportFixture.lines(Self.source, containing: "/* CHURN */").first) }

    /// `--from 1 --to 4`: three cycles of leak_some (3 × 48 bytes each) added and nothing
    /// removed; churn's block replaced (one added, one removed, no change); scratch never live.
    func testDiffBetweenMarksGivesExactAddedAndRemoved() throws {
        let trace = try HeapGenCLI.record(try DiffExportFixture.c(Self.source))
        let diff = try HeapGenCLI.json(["diff", trace, "--from", "1", "--to", "4", "--format", "json"])
        XCTAssertEqual(diff["schema"] as? String, "heapgen-diff/1")
        XCTAssertEqual(diff["mode"] as? String, "marks")
        let entries = diff.diffEntries
        let context = entries.map(\.description).joined(separator: "\n")

        let leak = try XCTUnwrap(entries.first { $0.function == "leak_some" }, context)
        XCTAssertEqual(leak.file.map { ($0 as NSString).lastPathComponent }, "leaky.c", context)
        XCTAssertEqual(leak.line, try leakLine(), context)
        XCTAssertEqual(leak.int("objectsBefore"), 3, context)
        XCTAssertEqual(leak.int("objectsAfter"), 12, context)
        XCTAssertEqual(leak.int("objectsDelta"), 9, context)
        XCTAssertEqual(leak.int("bytesDelta"), 9 * 48, context)
        XCTAssertEqual(leak.amount("added")?.objects, 9, context)
        XCTAssertEqual(leak.amount("added")?.bytes, 9 * 48, context)
        XCTAssertEqual(leak.amount("removed")?.objects, 0, context)
        XCTAssertEqual(leak.amount("removed")?.bytes, 0, context)
        XCTAssertNil(leak.json["typeName"] as? String)
        XCTAssertTrue(leak.json.keys.contains("typeName"), "typeName is written as null")

        let churn = try XCTUnwrap(entries.first { $0.function == "churn" }, context)
        XCTAssertEqual(churn.line, try churnLine(), context)
        XCTAssertEqual(churn.int("objectsDelta"), 0, context)
        XCTAssertEqual(churn.int("bytesDelta"), 0, context)
        XCTAssertEqual(churn.amount("added")?.objects, 1, context)
        XCTAssertEqual(churn.amount("added")?.bytes, 1000, context)
        XCTAssertEqual(churn.amount("removed")?.objects, 1, context)
        XCTAssertEqual(churn.amount("removed")?.bytes, 1000, context)
        XCTAssertNil(entries.first { $0.function == "scratch" }, "scratch is never live at a mark: \(context)")

        XCTAssertEqual(entries.first?.function, "leak_some", "sorted by |bytesDelta|: \(context)")
        let totals = diff.diffTotals
        XCTAssertEqual(jsonInt(totals["objectsDelta"]), 9)
        XCTAssertEqual(jsonInt(totals["bytesDelta"]), 9 * 48)
        XCTAssertEqual(jsonInt((totals["added"] as? [String: Any])?["objects"]), 10)
        XCTAssertEqual(jsonInt((totals["removed"] as? [String: Any])?["bytes"]), 1000)
        let base = diff["base"] as? [String: Any], new = diff["new"] as? [String: Any]
        XCTAssertEqual(jsonInt((base?["point"] as? [String: Any])?["index"]), 1)
        XCTAssertEqual(jsonInt((new?["point"] as? [String: Any])?["index"]), 4)
        XCTAssertEqual((new?["point"] as? [String: Any])?["label"] as? String, "cycle")

        // The same as text: the leaky site first, with its file and line.
        let text = try HeapGenCLI.succeed(["diff", trace, "--from", "1", "--to", "4"]).stdoutText
        XCTAssertTrue(text.contains("leak_some  leaky.c:\(try leakLine())"), text)
        XCTAssertTrue(text.contains("+432 B"), text)
        XCTAssertLessThan(try XCTUnwrap(text.range(of: "leak_some")).lowerBound,
                          try XCTUnwrap(text.range(of: "churn")).lowerBound, text)
    }

    /// Labels, start and end as points; ambiguous labels and backwards diffs are usage errors.
    func testPointsByLabelStartAndEnd() throws {
        let trace = try HeapGenCLI.record(try DiffExportFixture.c(Self.source))
        let all = try HeapGenCLI.json(["diff", trace, "--from", "start", "--to", "done", "--format", "json"])
        let leak = try XCTUnwrap(all.diffEntries.first { $0.function == "leak_some" })
        XCTAssertEqual(leak.int("objectsBefore"), 0)
        XCTAssertEqual(leak.amount("added")?.objects, 18)
        let info = try HeapGenCLI.json(["info", trace, "--format", "json"])
        let toEnd = try HeapGenCLI.json(["diff", trace, "--from", "start", "--to", "end", "--format", "json"])
        XCTAssertEqual(jsonInt(toEnd.diffTotals["bytesAfter"]), jsonInt(info["liveBytes"]))
        XCTAssertEqual(jsonInt(toEnd.diffTotals["objectsAfter"]), jsonInt(info["liveObjects"]))

        let ambiguous = try HeapGenCLI.run(["diff", trace, "--from", "cycle", "--to", "done"])
        XCTAssertEqual(ambiguous.status, 64, ambiguous.transcript)
        XCTAssertTrue(ambiguous.stderrText.contains("labelled \"cycle\""), ambiguous.transcript)
        let missing = try HeapGenCLI.run(["diff", trace, "--from", "1", "--to", "42"])
        XCTAssertEqual(missing.status, 64, missing.transcript)
        let backwards = try HeapGenCLI.run(["diff", trace, "--from", "4", "--to", "1"])
        XCTAssertEqual(backwards.status, 64, backwards.transcript)
        let noTo = try HeapGenCLI.run(["diff", trace, "--from", "1"])
        XCTAssertEqual(noTo.status, 64, noTo.transcript)
        let absent = try HeapGenCLI.run(["diff", trace + ".missing", "--from", "1", "--to", "2"])
        XCTAssertEqual(absent.status, 66, absent.transcript)
    }

    /// The same program twice (different ASLR): every site matched, nothing changed.
    func testTwoRunsOfOneProgramMatchWithZeroDeltas() throws {
        let program = try DiffExportFixture.c(Self.source)
        let a = try HeapGenCLI.record(program), b = try HeapGenCLI.record(program)
        if (try? String(contentsOfFile: "/proc/sys/kernel/randomize_va_space", encoding: .utf8))?.hasPrefix("0") == false {
            let biasA = try executableBias(a, program), biasB = try executableBias(b, program)
            XCTAssertNotEqual(biasA, biasB, "ASLR is on: the two runs should load the program at different addresses")
        }
        let diff = try HeapGenCLI.json(["diff", a, b, "--format", "json"])
        XCTAssertEqual(diff["mode"] as? String, "traces")
        let entries = diff.diffEntries
        let context = entries.map(\.description).joined(separator: "\n")
        XCTAssertGreaterThanOrEqual(entries.count, 2, context)
        for e in entries {
            XCTAssertEqual(e.status, "matched", context)
            XCTAssertEqual(e.int("objectsDelta"), 0, context)
            XCTAssertEqual(e.int("bytesDelta"), 0, context)
            XCTAssertNil(e.json["added"], "added/removed are for diffs within one trace")
        }
        XCTAssertEqual(jsonInt(diff.diffTotals["bytesDelta"]), 0)
        XCTAssertEqual(jsonInt(diff.diffTotals["changedEntries"]), 0)
        let leak = try XCTUnwrap(entries.first { $0.function == "leak_some" }, context)
        XCTAssertEqual(leak.int("bytesAfter"), 18 * 48, "the final snapshot is the last mark, after all six cycles")
        let text = try HeapGenCLI.succeed(["diff", a, b]).stdoutText
        XCTAssertTrue(text.contains("No site changed"), text)
    }

    /// A variant that leaks twice as much: the leaky site grows by what the variant adds.
    func testVariantLeakingTwiceAsMuchShowsThePositiveDelta() throws {
        let program = try DiffExportFixture.c(Self.source)
        let base = try HeapGenCLI.record(program), doubled = try HeapGenCLI.record(program, ["2"])
        let diff = try HeapGenCLI.json(["diff", base, doubled, "--format", "json"])
        let entries = diff.diffEntries
        let context = entries.map(\.description).joined(separator: "\n")
        let leak = try XCTUnwrap(entries.first, context)
        XCTAssertEqual(leak.function, "leak_some", context)
        XCTAssertEqual(leak.line, try leakLine(), context)
        XCTAssertEqual(leak.status, "matched", context)
        XCTAssertEqual(leak.int("objectsBefore"), 18, context)
        XCTAssertEqual(leak.int("objectsAfter"), 36, context)
        XCTAssertEqual(leak.int("objectsDelta"), 18, context)
        XCTAssertEqual(leak.int("bytesDelta"), 18 * 48, context)
        for e in entries.dropFirst() { XCTAssertEqual(e.int("bytesDelta"), 0, context) }
        XCTAssertEqual(jsonInt(diff.diffTotals["bytesDelta"]), 18 * 48)
        // At an earlier mark of both: after two cycles, 2 × 3 more blocks.
        let early = try HeapGenCLI.json(["diff", base, doubled, "--at", "2", "--format", "json"])
        XCTAssertEqual(early.diffEntries.first?.int("objectsDelta"), 6, early.diffEntries.map(\.description).joined(separator: "\n"))
    }

    /// The load bias of `program` in `trace`, from `heapgen dump`.
    func executableBias(_ trace: String, _ program: String) throws -> String {
        let dump = try HeapGenCLI.succeed(["dump", trace]).stdoutText
        let line = try XCTUnwrap(dump.split(separator: "\n").first { $0.hasPrefix("module ") && $0.contains("\"\(program)\"") })
        return String(line.split(separator: " ")[1])
    }
}

final class ExportEndToEndTests: XCTestCase {
    static let source = "leaky.c"

    /// Collapsed stacks add up to what `heapgen info` says is live, for every sample type.
    func testCollapsedTotalsEqualInfo() throws {
        let trace = try HeapGenCLI.record(try DiffExportFixture.c(Self.source))
        let info = try HeapGenCLI.json(["info", trace, "--format", "json"])
        let allocations = info["allocations"] as? [String: Any] ?? [:]
        let allocatedBytes = allocations.values.compactMap { jsonInt(($0 as? [String: Any])?["bytes"]) }.reduce(0, +)
        let expected: [(String?, Int?)] = [
            (nil, jsonInt(info["liveBytes"])), ("inuse_space", jsonInt(info["liveBytes"])),
            ("inuse_objects", jsonInt(info["liveObjects"])), ("alloc_objects", jsonInt(info["allocationCount"])),
            ("alloc_space", allocatedBytes),
        ]
        for (sample, total) in expected {
            let args = ["export", trace, "--format", "collapsed"] + (sample.map { ["--sample", $0] } ?? [])
            let text = try HeapGenCLI.succeed(args).stdoutText
            let lines = text.split(separator: "\n")
            XCTAssertEqual(Set(lines.map { $0.split(separator: " ").dropLast().joined(separator: " ") }).count, lines.count,
                           "one line per stack")
            let sum = lines.compactMap { Int($0.split(separator: " ").last ?? "") }.reduce(0, +)
            XCTAssertEqual(sum, total, "\(sample ?? "default"):\n\(text)")
        }
        let text = try HeapGenCLI.succeed(["export", trace, "--format", "collapsed"]).stdoutText
        let leak = try XCTUnwrap(text.split(separator: "\n").first { $0.hasSuffix(";leak_some \(18 * 48)") }, text)
        XCTAssertTrue(leak.hasPrefix("_start;") || leak.contains("main;leak_some"), "outermost first: \(leak)")

        // At a mark: what info says was live there.
        let marks = info["marks"] as? [[String: Any]] ?? []
        let atMark = try HeapGenCLI.succeed(["export", trace, "--format", "collapsed", "--at", "3"]).stdoutText
        XCTAssertEqual(atMark.split(separator: "\n").compactMap { Int($0.split(separator: " ").last ?? "") }.reduce(0, +),
                       jsonInt(marks.first { jsonInt($0["index"]) == 3 }?["liveBytes"]), atMark)
    }

    /// Go's pprof reads the profile: sample types, the leaky function's in-use bytes, generation labels.
    func testPprofReadBackByGoPprof() throws {
        let trace = try HeapGenCLI.record(try DiffExportFixture.c(Self.source))
        let profile = try TestPaths.freshDirectory("pprof") + "/heap.pb.gz"
        _ = try HeapGenCLI.succeed(["export", trace, "--format", "pprof", "--output", profile])
        let go = try GoTool.path()

        let raw = try GoTool.pprof(go, ["-raw", profile])
        XCTAssertTrue(raw.contains("alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]"), raw)
        XCTAssertTrue(raw.contains("leak_some"), raw)
        XCTAssertTrue(raw.contains("leaky.c:\(try XCTUnwrap(DiffExportFixture.lines(Self.source, containing: "/* LEAK */").first))"), raw)

        let top = try GoTool.pprof(go, ["-top", "-sample_index=inuse_space", "-unit=byte", profile])
        let leakRow = try XCTUnwrap(top.split(separator: "\n").first { $0.hasSuffix(" leak_some") }, top)
        XCTAssertEqual(leakRow.split(separator: " ").first, "\(18 * 48)B", top)
        let churnRow = try XCTUnwrap(top.split(separator: "\n").first { $0.hasSuffix(" churn") }, top)
        XCTAssertEqual(churnRow.split(separator: " ").first, "1000B", top)

        let objects = try GoTool.pprof(go, ["-top", "-sample_index=alloc_objects", profile])
        let leakObjects = try XCTUnwrap(objects.split(separator: "\n").first { $0.hasSuffix(" leak_some") }, objects)
        XCTAssertEqual(leakObjects.split(separator: " ").first, "18", objects)

        let tags = try GoTool.pprof(go, ["-tags", profile])
        XCTAssertTrue(tags.contains("generation:"), tags)
        for cycle in 1...6 { XCTAssertTrue(tags.contains("cycle #\(cycle)"), "cycle #\(cycle) in:\n\(tags)") }
        let focused = try GoTool.pprof(go, ["-top", "-sample_index=inuse_space", "-unit=byte", "-tagfocus=generation=cycle #3", profile])
        let leakIn3 = try XCTUnwrap(focused.split(separator: "\n").first { $0.hasSuffix(" leak_some") }, focused)
        XCTAssertEqual(leakIn3.split(separator: " ").first, "\(3 * 48)B", focused)
    }

    func testUsageErrors() throws {
        let trace = try HeapGenCLI.record(try DiffExportFixture.c(Self.source))
        let sampleWithPprof = try HeapGenCLI.run(["export", trace, "--format", "pprof", "--sample", "inuse_space", "--output", "/dev/null"])
        XCTAssertEqual(sampleWithPprof.status, 64, sampleWithPprof.transcript)
        let badSample = try HeapGenCLI.run(["export", trace, "--format", "collapsed", "--sample", "bogus"])
        XCTAssertEqual(badSample.status, 64, badSample.transcript)
        let badPoint = try HeapGenCLI.run(["export", trace, "--format", "collapsed", "--at", "nope"])
        XCTAssertEqual(badPoint.status, 64, badPoint.transcript)
        let noFormat = try HeapGenCLI.run(["export", trace])
        XCTAssertEqual(noFormat.status, 64, noFormat.transcript)
    }
}

/// Go's toolchain (for `go tool pprof`): installed with apt-get when missing; never skipped.
enum GoTool {
    static func path() throws -> String {
        if let go = lookupExecutable("go") ?? (FileManager.default.isExecutableFile(atPath: "/usr/lib/go/bin/go") ? "/usr/lib/go/bin/go" : nil) {
            return go
        }
        var log = ""
        if let aptGet = lookupExecutable("apt-get") {
            let sudo = getuid() == 0 ? nil : lookupExecutable("sudo")
            var env = ProcessInfo.processInfo.environment
            env["DEBIAN_FRONTEND"] = "noninteractive"
            let install = ["install", "-y", "--no-install-recommends", "golang-go"]
            let result = try sudo.map { try runProcess($0, ["-n", aptGet] + install, environment: env, timeout: 600) }
                ?? runProcess(aptGet, install, environment: env, timeout: 600)
            log = result.transcript
        }
        if let go = lookupExecutable("go") { return go }
        throw TestSupportError("Go's pprof is needed to read the exported profile back, and `go` is missing: install Debian's golang-go (apt-get install -y golang-go; .ci/run does).\n\(log)")
    }

    /// `go tool pprof -symbolize=none ARGS`, required to exit 0; its standard output.
    static func pprof(_ go: String, _ arguments: [String]) throws -> String {
        var env = ProcessInfo.processInfo.environment
        let home = try TestPaths.freshDirectory("gohome")
        if env["HOME"] == nil { env["HOME"] = home }
        env["PPROF_TMPDIR"] = home
        env["GOCACHE"] = env["GOCACHE"] ?? home + "/cache"
        env["GOTOOLCHAIN"] = "local"
        let result = try runProcess(go, ["tool", "pprof", "-symbolize=none"] + arguments, environment: env, timeout: 300)
        guard result.status == 0 else { throw TestSupportError("go tool pprof failed:\n\(result.transcript)") }
        return result.stdoutText
    }
}
