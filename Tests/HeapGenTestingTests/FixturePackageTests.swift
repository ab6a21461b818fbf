// HeapGenTesting in a real package: Tests/HeapGenTestingTests/Fixtures/FixturePackage
// depends on this checkout's HeapGenTesting product by path; its tests leak or not.
// Built once per test process with `swift build --build-tests`, then run under
// `heapgen run` and without heapgen.

import Foundation
import HeapGenTestSupport
import XCTest

final class FixturePackageTests: XCTestCase {
    /// The built fixture test binary (built once).
    nonisolated(unsafe) private static var built: Result<String, Error>?
    private static let buildLock = NSLock()

    /// Copies the fixture package next to a persistent build directory (so reruns are
    /// incremental) and builds its tests against this checkout.
    static func fixtureBinary() throws -> String {
        buildLock.lock()
        defer { buildLock.unlock() }
        if let built { return try built.get() }
        let result = Result { try build() }
        built = result
        return try result.get()
    }

    private static func build() throws -> String {
        let fm = FileManager.default
        let base = (ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp")
            + "/heapgen-testing-fixture-\(getuid())"
        let source = base + "/FixturePackage"
        let scratch = base + "/build"
        try? fm.removeItem(atPath: source)
        try fm.createDirectory(atPath: base, withIntermediateDirectories: true)
        // cp, not FileManager.copyItem: that also copies the owner, which only root may
        // (a developer's checkout made by root, a CI cache) and fails the copy for anyone else.
        let copy = try Run.run("/bin/cp", ["-R", TestPaths.fixtures + "/FixturePackage", source], timeout: 60)
        guard copy.status == 0 else { throw TestSupportError("cannot copy the fixture package:\n\(copy.transcript)") }
        var env = ProcessInfo.processInfo.environment
        env["HEAPGEN_PACKAGE_ROOT"] = TestPaths.repoRoot
        let swift = try TestPaths.swift()
        let result = try Run.run(swift, ["build", "--build-tests", "--package-path", source, "--scratch-path", scratch],
                                 environment: env, timeout: 900)
        guard result.status == 0 else {
            throw TestSupportError("the fixture package did not build:\n\(result.transcript)")
        }
        let binary = scratch + "/debug/FixturePackagePackageTests.xctest"
        guard fm.isExecutableFile(atPath: binary) else {
            throw TestSupportError("no \(binary) after the build:\n\(result.transcript)")
        }
        return binary
    }

    /// One XCTest case of the fixture's output: its end state and the lines it printed.
    struct Case {
        var state: String
        var text: String
    }

    /// Splits XCTest output into cases ("Test Case 'Class.test' started" … "passed|failed|skipped").
    static func cases(_ output: String) -> [String: Case] {
        var out: [String: Case] = [:]
        var current: String?
        var text = ""
        for line in output.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("Test Case '"), let end = line.dropFirst(11).firstIndex(of: "'") {
                let name = String(line[line.index(line.startIndex, offsetBy: 11)..<end])
                let rest = line[line.index(after: end)...]
                if rest.hasPrefix(" started") {
                    current = name
                    text = ""
                } else if let state = ["passed", "failed", "skipped"].first(where: { rest.hasPrefix(" " + $0) }) {
                    out[name] = Case(state: state, text: text)
                    current = nil
                }
            } else if current != nil {
                text += line + "\n"
            }
        }
        return out
    }

    func testUnderHeapgenLeaksFailAndCleanCodePasses() throws {
        let binary = try Self.fixtureBinary()
        let heapgen = try TestPaths.heapgen()
        let report = TestPaths.scratch + "/fixture-report.txt"
        let result = try Run.run(heapgen, ["run", "--output", report, "--", binary], timeout: 300)
        // XCTest exits 1 when a test failed; heapgen run passes the status on.
        XCTAssertEqual(result.status, 1, result.transcript)
        let cases = Self.cases(result.stdout + result.stderr)

        let leaky = try XCTUnwrap(cases["ExpectNoGrowthTests.testLeakyCycleFails"], result.transcript)
        XCTAssertEqual(leaky.state, "failed", leaky.text)
        XCTAssertTrue(leaky.text.contains("XCTestCases.swift:7: error:"), leaky.text)
        XCTAssertTrue(leaky.text.contains("FixtureTests.LeakyViewModel: +1 objects / +"), leaky.text)
        XCTAssertTrue(leaky.text.contains("bytes per cycle"), leaky.text)
        XCTAssertTrue(leaky.text.contains("objects per cycle: [+1] +1 +1 +1 +1 +1"), leaky.text)
        XCTAssertTrue(leaky.text.contains("testLeakyCycleFails() (XCTestCases.swift:8)"), leaky.text)
        XCTAssertFalse(leaky.text.contains("CleanViewModel"), leaky.text)

        let clean = try XCTUnwrap(cases["ExpectNoGrowthTests.testCleanCyclePasses"], result.transcript)
        XCTAssertEqual(clean.state, "passed", clean.text)

        let retained = try XCTUnwrap(cases["ExpectDeallocationTests.testRetainedObjectFails"], result.transcript)
        XCTAssertEqual(retained.state, "failed", retained.text)
        XCTAssertTrue(retained.text.contains("FixtureTests.LeakyViewModel at 0x"), retained.text)
        XCTAssertTrue(retained.text.contains("is still alive"), retained.text)
        XCTAssertTrue(retained.text.contains("allocated in generation"), retained.text)
        XCTAssertTrue(retained.text.contains("testRetainedObjectFails() (XCTestCases.swift:21)"), retained.text)

        // The object's own closure holds it: the failure shows that cycle.
        XCTAssertTrue(retained.text.contains("\n  cycle: FixtureTests.LeakyViewModel.onUpdate → "), retained.text)

        // Why it is alive: the singleton's static, its stored property, the closure array.
        let held = try XCTUnwrap(cases["RetentionPathTests.testHeldBySingletonClosureFails"], result.transcript)
        XCTAssertEqual(held.state, "failed", held.text)
        XCTAssertTrue(held.text.contains("FixtureTests.ProfileViewModel at 0x"), held.text)
        let heldBy = try XCTUnwrap(held.text.split(separator: "\n").first { $0.contains("held by: ") }, held.text)
        XCTAssertTrue(heldBy.contains("EventBus.shared → FixtureTests.EventBus.subscribers → "), held.text)
        XCTAssertTrue(heldBy.hasSuffix("→ FixtureTests.ProfileViewModel"), held.text)
        XCTAssertFalse(held.text.contains("cycle: "), held.text)

        let pair = try XCTUnwrap(cases["RetentionPathTests.testParentChildCycleFails"], result.transcript)
        XCTAssertEqual(pair.state, "failed", pair.text)
        XCTAssertTrue(pair.text.contains("cycle: FixtureTests.Parent.child → FixtureTests.Child.parent → FixtureTests.Parent"),
                      pair.text)
        // Nothing real reaches the pair; what the conservative scan still finds depends on the
        // run (the test's own stale locals alone, or a stale copy of a reused address in an
        // earlier test's block), so only the line itself is checked.
        XCTAssertTrue(pair.text.contains("\n  held by: "), pair.text)

        let released = try XCTUnwrap(cases["ExpectDeallocationTests.testReleasedObjectPasses"], result.transcript)
        XCTAssertEqual(released.state, "passed", released.text)

        // heapgen's own answer buffer is not the program's memory.
        let text = try String(contentsOfFile: report, encoding: .utf8)
        let liveAtExit = try XCTUnwrap(text.range(of: "Live at exit").map { String(text[$0.lowerBound...]) }, text)
        XCTAssertFalse(liveAtExit.contains("ControlClient"), liveAtExit)
        XCTAssertFalse(liveAtExit.contains("MB in 1 block"), liveAtExit)
    }

    func testWithoutHeapgenEveryCaseIsSkippedWithTheReason() throws {
        let binary = try Self.fixtureBinary()
        var env = ProcessInfo.processInfo.environment
        env["LD_PRELOAD"] = nil
        env["HEAPGEN_SOCK"] = nil
        let result = try Run.run(binary, [], environment: env, timeout: 300)
        XCTAssertEqual(result.status, 0, result.transcript)
        let cases = Self.cases(result.stdout + result.stderr)
        let names = ["ExpectNoGrowthTests.testLeakyCycleFails", "ExpectNoGrowthTests.testCleanCyclePasses",
                     "ExpectDeallocationTests.testRetainedObjectFails", "ExpectDeallocationTests.testReleasedObjectPasses",
                     "ScopeTests.testScopeCleanFirst", "ScopeTests.testScopeLeaks", "ScopeTests.testScopeCleanLast",
                     "RetentionPathTests.testHeldBySingletonClosureFails", "RetentionPathTests.testParentChildCycleFails"]
        for name in names {
            let c = try XCTUnwrap(cases[name], "\(name) did not run\n\(result.transcript)")
            XCTAssertEqual(c.state, "skipped", "\(name)\n\(c.text)")
            XCTAssertTrue(c.text.contains("needs the program to run under heapgen: heapgen run -- "), "\(name)\n\(c.text)")
        }
        XCTAssertTrue(result.stdout.contains("with 9 tests skipped and 0 failures"), result.transcript)
    }

    func testSwiftTestingRecordsIssuesAndSkipsWithoutHeapgen() throws {
        let binary = try Self.fixtureBinary()
        let heapgen = try TestPaths.heapgen()
        let report = TestPaths.scratch + "/fixture-st-report.txt"
        let traced = try Run.run(heapgen, ["run", "--output", report, "--", binary, "--testing-library", "swift-testing"],
                                 timeout: 300)
        XCTAssertNotEqual(traced.status, 0, traced.transcript)
        let out = traced.stdout + traced.stderr
        XCTAssertTrue(out.contains("leakyCycleFailsInSwiftTesting() recorded an issue at SwiftTestingCases.swift:7"), traced.transcript)
        XCTAssertTrue(out.contains("FixtureTests.LeakyViewModel: +1 objects / +"), traced.transcript)
        XCTAssertTrue(out.contains("releasedObjectPassesInSwiftTesting() passed"), traced.transcript)
        XCTAssertTrue(out.contains("withoutTheTraitTheTestIsCancelled() passed"), traced.transcript)

        var env = ProcessInfo.processInfo.environment
        env["LD_PRELOAD"] = nil
        env["HEAPGEN_SOCK"] = nil
        let plain = try Run.run(binary, ["--testing-library", "swift-testing"], environment: env, timeout: 300)
        let text = plain.stdout + plain.stderr
        // With .requiresHeapgen: skipped, with the command that would run them.
        for name in ["leakyCycleFailsInSwiftTesting()", "releasedObjectPassesInSwiftTesting()"] {
            XCTAssertTrue(text.contains("Test \(name) skipped"), "\(name)\n\(plain.transcript)")
            XCTAssertFalse(text.contains("Test \(name) passed"), "\(name)\n\(plain.transcript)")
        }
        XCTAssertTrue(text.contains("needs the program to run under heapgen: heapgen run -- "), plain.transcript)
        // Without it, the library can only cancel the test, never pass it.
        XCTAssertTrue(text.contains("Test withoutTheTraitTheTestIsCancelled() was cancelled"), plain.transcript)
        XCTAssertFalse(text.contains("withoutTheTraitTheTestIsCancelled() passed"), plain.transcript)
    }
}
