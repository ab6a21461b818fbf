// Swift leak patterns with Foundation on Linux, and the bundled demo.

import Foundation
import HeapGenTestSupport
import XCTest

final class SwiftPatternsReportTests: XCTestCase {
    static let patternCycles = 9
    nonisolated(unsafe) static var cachedPatterns: (report: Report, fixture: String)?

    /// The Patterns fixture's report (recorded once per test process).
    func patternsReport() throws -> (report: Report, fixture: String) {
        if let hit = Self.cachedPatterns { return hit }
        let fixture = try ReportFixture.swift("Patterns")
        let run = try HeapGenCLI.runJSON(fixture, ["\(Self.patternCycles)"])
        XCTAssertTrue(run.result.stdoutText.contains("patterns: \(Self.patternCycles) cycles"), run.result.transcript)
        Self.cachedPatterns = (run.report, fixture)
        return (run.report, fixture)
    }

    /// Tasks/main.swift: each cycle 10 child tasks open a Session in an actor and leave it
    /// captured by a handler. Whichever pool thread resumes a task, the Session is one
    /// allocation site, abandoned with 10 objects in every cycle: the frames outside the
    /// executor's job entry are not part of a site (they split it in two, each half short of
    /// 10 in some cycles, one only growing "since cycle 4").
    func testASwiftTaskAllocationIsOneSiteWhicheverThreadRanIt() throws {
        let fixture = try ReportFixture.swift("Tasks")
        let cycles = 8
        let run = try HeapGenCLI.runJSON(fixture, ["\(cycles)"])
        XCTAssertEqual(run.result.stdoutText, "tasks: \(cycles) cycles, \(cycles * 10) handlers\n", run.result.transcript)
        let r = run.report
        let sessions = r.findings(type: "Fixture.Session")
        XCTAssertEqual(sessions.count, 1, r.findingsSummary)
        guard let f = sessions.first else { return }
        XCTAssertEqual(f.kind, "abandoned", f.summary)
        XCTAssertEqual(f.objectsPerCycle.count, r.cycles, f.summary)
        XCTAssertEqual(Set(f.objectsPerCycle), [10], f.summary)
        XCTAssertEqual(f.cyclesWithGrowth, f.cycles, f.summary)
        let source = ReportFixture.sourcePath("Tasks/main.swift")
        let line = try ReportFixture.lines("Tasks/main.swift", containing: "ALLOC Session")
        XCTAssertTrue(f.frames.contains { $0.file == source && $0.line.map(line.contains) == true }, f.summary)
    }

    static let leakTypes = ["Fixture.ClosureCycleVM", "Fixture.TimerOwner", "Fixture.ObserverOwner", "Fixture.WorkItemOwner"]

    func testFoundationLeakPatternsAreAbandonedByType() throws {
        let n = Self.patternCycles
        let (r, fixture) = try patternsReport()
        XCTAssertEqual(r.cycles, n, "\(r)")
        let warmUp = 1
        let source = ReportFixture.sourcePath("Patterns/main.swift")
        let body = try ReportFixture.markedLines("Patterns/main.swift", "pushAndPop")

        for type in Self.leakTypes {
            let found = r.findings(type: type)
            XCTAssertEqual(found.count, 1, "\(type): one site expected:\n\(r.findingsSummary)")
            guard let f = found.first else { continue }
            XCTAssertEqual(f.kind, "abandoned", "\(type):\n\(r.findingsSummary)")
            XCTAssertEqual(f.objectsPerCycle.count, n, "\(type): \(f.summary)")
            XCTAssertEqual(Array(f.objectsPerCycle.dropFirst(warmUp)), Array(repeating: 1, count: n - warmUp), "\(type): \(f.summary)")
            XCTAssertEqual(f.cycles, n - warmUp, "\(type): \(f.summary)")
            XCTAssertEqual(f.cyclesWithGrowth, n - warmUp, "\(type): \(f.summary)")
            XCTAssertEqual(f.survivingObjects, n - warmUp, "\(type): \(f.summary)")
            // Symbolicated in the fixture's own code: the user frame is in the fixture, and the
            // stack reaches pushAndPop(_:) at a line of its body.
            guard let u = f.userFrame else { XCTFail("\(type): no user frame: \(f.summary)"); continue }
            XCTAssertEqual(u.module, fixture, "\(type): user frame \(u.text)")
            XCTAssertEqual(u.file, source, "\(type): user frame \(u.text)")
            let push = f.frames.first { ($0.function ?? "").contains("pushAndPop") }
            XCTAssertEqual(push?.file, source, "\(type): \(f.frames.map(\.text))")
            XCTAssertTrue(push?.line.map { body.contains($0) } ?? false,
                          "\(type): pushAndPop frame should be at a line in \(body): \(push?.text ?? "none")")
        }

        // The static dictionary filled in the first cycle: a cache, never abandoned.
        let entries = r.findings(type: "Fixture.CacheEntry")
        XCTAssertEqual(entries.map(\.kind), ["cache"], "Fixture.CacheEntry should be one cache finding:\n\(r.findingsSummary)")
        for f in entries {
            XCTAssertEqual(f.objectsPerCycle, [8] + Array(repeating: 0, count: n - 1), f.summary)
            XCTAssertEqual(f.cyclesWithGrowth, 0, f.summary)
        }
        XCTAssertTrue(r.findings(kind: "abandoned").allSatisfy { !$0.hasFunction("EntryCache") }, r.findingsSummary)

        // Pushed and popped properly: not a finding, and nothing made in it is abandoned.
        // (The Swift runtime's one-time metadata caches first touched in its init are caches.)
        XCTAssertTrue(r.findings(type: "Fixture.ReleasedScreen").isEmpty, r.findingsSummary)
        XCTAssertTrue(r.findings(kind: "abandoned").allSatisfy { !$0.hasFunction("ReleasedScreen") }, r.findingsSummary)
    }

    /// The user frame of a finding in a `-g` build carries a line: a compiler-generated
    /// `__allocating_init` thunk (no line) is not where the user looks.
    func testSwiftUserFramesHaveLines() throws {
        let (r, _) = try patternsReport()
        for type in Self.leakTypes {
            guard let f = r.findings(type: type).first else { XCTFail("\(type) not found:\n\(r.findingsSummary)"); continue }
            XCTAssertNotNil(f.userFrame?.line, "\(type): user frame without a line: \(f.userFrame?.text ?? "none")")
        }
    }

    func testDemo() throws {
        let demo = try TestPaths.demo()
        let result = try HeapGenCLI.run(["run", "--format", "json", "--", demo])
        XCTAssertEqual(result.status, 0, result.transcript)
        let programLine = "heapgen-demo: pushed and popped the profile screen 10 times"
        XCTAssertTrue(result.stdoutText.contains(programLine), "the program's own output is kept:\n\(result.transcript)")
        let r = try ReportJSON.extract(from: result)

        XCTAssertEqual(r.cycles, 10, "\(r)")
        for type in ["heapgen_demo.ProfileViewModel", "heapgen_demo.ThemeSubscriber"] {
            let found = r.findings(type: type)
            XCTAssertEqual(found.map(\.kind), ["abandoned"], "\(type):\n\(r.findingsSummary)")
            if let f = found.first {
                XCTAssertEqual(Array(f.objectsPerCycle.dropFirst()), Array(repeating: 1, count: 9), f.summary)
                XCTAssertEqual(f.cyclesWithGrowth, 9, f.summary)
                XCTAssertTrue(f.hasFunction("ProfileScreen"), "made in ProfileScreen.init: \(f.summary)")
            }
        }
        // The image cache fills on the first push: a cache, not abandoned.
        let imageSites = r.findings.filter { $0.hasFunction("ImageCache") || ($0.typeName ?? "").contains("ImageCache") }
        XCTAssertTrue(imageSites.contains { $0.kind == "cache" && ($0.bytesPerCycle.first ?? 0) >= 48 * 1024 },
                      "the 48 KiB image should be a cache finding:\n\(r.findingsSummary)")
        XCTAssertTrue(imageSites.allSatisfy { $0.kind == "cache" }, "nothing of ImageCache is abandoned:\n\(r.findingsSummary)")
    }
}

enum ReportJSON {
    /// The JSON report printed on stdout by `heapgen run --format json` without --output,
    /// after whatever the program printed: the suffix of stdout that starts at a line
    /// beginning with "{" and parses as one JSON object.
    static func extract(from result: ProcessResult) throws -> Report {
        let text = result.stdoutText
        if let whole = try? Report(data: result.stdout, origin: result.command) { return whole }
        var starts: [String.Index] = []
        if text.hasPrefix("{") { starts.append(text.startIndex) }
        var search = text.startIndex
        while let r = text.range(of: "\n{", range: search..<text.endIndex) {
            starts.append(text.index(after: r.lowerBound))
            search = r.upperBound
        }
        for s in starts {
            if let report = try? Report(data: Data(text[s...].utf8), origin: result.command) { return report }
        }
        throw TestSupportError("no JSON report on stdout:\n\(result.transcript)")
    }
}
