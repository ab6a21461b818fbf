// A gate over a whole test binary: three expectNoGrowth tests in one XCTest class
// (Fixtures/FixturePackage/Tests/FixtureTests/ScopeCases.swift), one leaking. Each call is
// one scope, judged on its own cycles and warm-up; the gate fails (23) naming the test.

import Foundation
import HeapGenTestSupport
import XCTest

final class ScopeGateTests: XCTestCase {
    /// Line of the `expectNoGrowth` call in `test` in ScopeCases.swift.
    private func callLine(_ test: String) throws -> Int {
        let text = try String(contentsOfFile: TestPaths.fixtures(for: #filePath)
            + "/FixturePackage/Tests/FixtureTests/ScopeCases.swift", encoding: .utf8)
        let lines = text.components(separatedBy: "\n")
        let start = try XCTUnwrap(lines.firstIndex { $0.contains("func \(test)()") })
        let call = try XCTUnwrap(lines[start...].firstIndex { $0.contains("HeapGen.expectNoGrowth") })
        return call + 1
    }

    func testGateJudgesEachTestOnItsOwnAndNamesTheLeakingOne() throws {
        let binary = try FixturePackageTests.fixtureBinary()
        let heapgen = try TestPaths.heapgen()
        let dir = try TestPaths.freshDirectory("scopes")
        let json = dir + "/report.json", trace = dir + "/x.trace"
        let result = try Run.run(heapgen, ["run", "--fail-on", "abandoned", "--format", "json", "--output", json,
                                           "--trace", trace, "--", binary, "FixtureTests.ScopeTests"], timeout: 300)
        XCTAssertEqual(result.status, 23, "the gate fails\n\(result.transcript)")
        let leaky = "expectNoGrowth testScopeLeaks() (ScopeCases.swift:\(try callLine("testScopeLeaks")))"
        let cleanFirst = "expectNoGrowth testScopeCleanFirst() (ScopeCases.swift:\(try callLine("testScopeCleanFirst")))"
        let cleanLast = "expectNoGrowth testScopeCleanLast() (ScopeCases.swift:\(try callLine("testScopeCleanLast")))"

        // The verdict names the type and the test.
        let failed = result.stderr.components(separatedBy: "\n").filter { $0.hasPrefix("heapgen: gate failed: ") }
        XCTAssertEqual(failed.count, 1, result.transcript)
        XCTAssertTrue(failed.first?.contains("FixtureTests.ScopeLeakyModel at ") == true, result.transcript)
        XCTAssertTrue(failed.first?.contains(" in " + leaky) == true, result.transcript)
        XCTAssertFalse(result.stderr.contains("gate passed"), result.transcript)

        // The findings: the leaking test's model, judged on its 8 cycles with its warm-up of 2.
        let data = try XCTUnwrap(FileManager.default.contents(atPath: json), result.transcript)
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        let findings = try XCTUnwrap(report["findings"] as? [[String: Any]])
        let model = findings.filter { $0["typeName"] as? String == "FixtureTests.ScopeLeakyModel" }
        XCTAssertEqual(model.count, 1, "\(findings)")
        let f = try XCTUnwrap(model.first)
        XCTAssertEqual(f["kind"] as? String, "abandoned")
        XCTAssertEqual(f["scope"] as? String, leaky)
        XCTAssertEqual(f["objectsPerCycle"] as? [Int], Array(repeating: 1, count: 8))
        XCTAssertEqual(f["cycles"] as? Int, 6)
        XCTAssertEqual(f["cyclesWithGrowth"] as? Int, 6)
        XCTAssertEqual(f["survivingObjects"] as? Int, 6)
        XCTAssertTrue(f["onsetCycle"] is NSNull)
        // The clean tests have no growth findings; no fixture type is called a cache.
        for g in findings {
            let scope = g["scope"] as? String
            if g["kind"] as? String == "abandoned" { XCTAssertEqual(scope, leaky, "\(g)") }
            XCTAssertFalse(g["kind"] as? String == "cache" && (g["typeName"] as? String)?.hasPrefix("FixtureTests.") == true, "\(g)")
        }

        // The text report: the scope that grew with its findings, the clean ones on one line, and
        // distinct labels in the generation table.
        let text = try Run.run(heapgen, ["report", trace], timeout: 120)
        XCTAssertEqual(text.status, 0, text.transcript)
        let out = text.stdout
        XCTAssertTrue(out.contains("Abandoned memory in \(leaky): "), out)
        XCTAssertTrue(out.contains("grew in 6 of 6 judged cycles"), out)
        XCTAssertTrue(out.contains("No growth in 2 scopes, each judged on its own cycles: \(cleanFirst); \(cleanLast)"), out)
        XCTAssertFalse(out.contains("expectNoGrowth cy…"), out)
    }
}
