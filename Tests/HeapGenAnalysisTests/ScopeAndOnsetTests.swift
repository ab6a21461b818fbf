// Scopes (expectNoGrowth / HeapGen.cycles calls judged apart) and leaks that start mid-run,
// on synthetic traces with known answers.

import HeapGenAnalysis
import HeapGenTrace
import XCTest

final class ScopeAndOnsetTests: XCTestCase {
    /// Marks one scope of `cycles` cycles (the first `warmUp` labelled warm-up) around `body`.
    private func scope(_ t: TraceBuilder, _ name: String, cycles: Int, warmUp: Int = 1, _ body: (Int) -> Void) {
        t.mark("expectNoGrowth \(name) start")
        for i in 1...cycles {
            body(i)
            t.mark(i <= warmUp ? "expectNoGrowth \(name) warm-up \(i)/\(cycles)" : "expectNoGrowth \(name) cycle \(i)/\(cycles)")
        }
    }

    func testLabelsParse() {
        XCTAssertEqual(CycleScope.parse("expectNoGrowth testA() (A.swift:3) cycle 3/10"),
                       CycleScope.Label(kind: "expectNoGrowth", name: "testA() (A.swift:3)", cycle: 3, isWarmUp: false))
        XCTAssertEqual(CycleScope.parse("HeapGen.cycles main (main.swift:9) warm-up 1/5"),
                       CycleScope.Label(kind: "HeapGen.cycles", name: "main (main.swift:9)", cycle: 1, isWarmUp: true))
        XCTAssertEqual(CycleScope.parse("expectNoGrowth x start")?.cycle, 0)
        XCTAssertNil(CycleScope.parse("cycle 3"))
        XCTAssertNil(CycleScope.parse("expectNoGrowth x cycle"))
        XCTAssertNil(CycleScope.parse("heapgen.start"))
    }

    /// Three tests in one binary, one leaking: each scope judged on its own cycles; the
    /// leaking one is abandoned and named; the clean ones have no growth findings; a cache
    /// filled in a scope's warm-up is that scope's cache.
    func testEachScopeIsJudgedOnItsOwnCycles() throws {
        let t = try TraceBuilder()
        t.mark("XCTest started")        // outside any scope
        var kept: [UInt64] = []
        scope(t, "testCleanA() (T.swift:3)", cycles: 6) { _ in
            let b = t.alloc(size: 64, stack: 1, type: 1)
            t.free(b)
        }
        scope(t, "testLeaky() (T.swift:9)", cycles: 8, warmUp: 2) { _ in
            kept.append(t.alloc(size: 48, stack: 2, type: 2))
        }
        scope(t, "testCleanB() (T.swift:15)", cycles: 6) { i in
            // A cache filled in the warm-up: not a failure.
            if i == 1 { kept.append(t.alloc(size: 100, stack: 3, type: 3)) }
        }
        let a = try t.analyze()
        XCTAssertEqual(a.scopes.map(\.title), ["expectNoGrowth testCleanA() (T.swift:3)",
                                              "expectNoGrowth testLeaky() (T.swift:9)",
                                              "expectNoGrowth testCleanB() (T.swift:15)"])
        XCTAssertEqual(a.scopes.map(\.cycles), [6, 8, 6])
        XCTAssertEqual(a.scopes.map(\.warmUp), [1, 2, 1])
        XCTAssertEqual(a.findings.map(\.kind), [.abandoned, .cache], "\(a.findings)")
        let cache = try XCTUnwrap(a.findings.last)
        XCTAssertEqual(cache.scope, "expectNoGrowth testCleanB() (T.swift:15)")
        XCTAssertEqual(cache.typeID, 3)
        XCTAssertEqual(cache.objectsPerCycle, [1, 0, 0, 0, 0, 0])
        let f = try XCTUnwrap(a.findings.first)
        XCTAssertEqual(f.kind, .abandoned)
        XCTAssertEqual(f.scope, "expectNoGrowth testLeaky() (T.swift:9)")
        XCTAssertEqual(f.typeID, 2)
        XCTAssertEqual(f.objectsPerCycle, [1, 1, 1, 1, 1, 1, 1, 1])
        XCTAssertEqual(f.bytesPerCycle, Array(repeating: 48, count: 8))
        XCTAssertEqual(f.cycles, 6)
        XCTAssertEqual(f.cyclesWithGrowth, 6)
        XCTAssertEqual(f.averageBytesPerCycle, 48)
        XCTAssertNil(f.onsetCycle)
        // Allocated in the scope's judged cycles 3…8, live at the end.
        XCTAssertEqual(f.survivingObjects, 6)
        XCTAssertEqual(f.survivingBytes, 6 * 48)
        XCTAssertEqual(a.site(stackID: 2, typeID: 2)?.behavior, .abandoned)
        // Regrouping keeps the scope's verdict.
        let grouped = a.regrouped { stack, type in stack == 2 ? 1 : nil }
        XCTAssertEqual(grouped.map(\.finding), a.findings)
    }

    /// Without scope labels, one run across all marks: growth in 8 of 20 cycles in the middle
    /// is neither abandoned nor a cache.
    func testWithoutScopeLabelsTheMarksAreOneRun() throws {
        let t = try TraceBuilder()
        t.mark("start")
        for i in 1...20 {
            if i > 6 && i <= 14 { t.alloc(size: 48, stack: 2, type: 2) }
            t.mark("cycle \(i)")
        }
        let a = try t.analyze()
        XCTAssertTrue(a.scopes.isEmpty)
        XCTAssertEqual(a.findings, [], "\(a.findings)")
    }

    /// A leak that starts at cycle 9 of 16: abandoned from cycle 9 on.
    func testLeakThatStartsMidRunIsAbandonedWithItsOnset() throws {
        let t = try TraceBuilder()
        t.mark("start")
        for i in 1...16 {
            let b = t.alloc(size: 64, stack: 1)   // request churn
            t.free(b)
            if i >= 9 { for _ in 0..<3 { t.alloc(size: 200, stack: 2) } }
            t.mark("batch \(i)")
        }
        let a = try t.analyze()
        XCTAssertEqual(a.findings.count, 1, "\(a.findings)")
        let f = try XCTUnwrap(a.finding(stack: 2))
        XCTAssertEqual(f.kind, .abandoned)
        XCTAssertEqual(f.onsetCycle, 9)
        XCTAssertEqual(f.cyclesWithGrowthSinceOnset, 8)
        XCTAssertEqual(f.cycles, 15)
        XCTAssertEqual(f.cyclesWithGrowth, 8)
        XCTAssertEqual(f.objectsPerCycle, Array(repeating: 0, count: 8) + Array(repeating: 3, count: 8))
        XCTAssertEqual(f.bytesPerCycle, Array(repeating: 0, count: 8) + Array(repeating: 600, count: 8))
        XCTAssertEqual(f.averageBytesPerCycle, 600)
        XCTAssertEqual(f.averageObjectsPerCycle, 3)
        XCTAssertEqual(f.survivingObjects, 24)
        XCTAssertEqual(f.firstCycleWithGrowth, 9)
    }

    /// Three growing cycles at the end are too few; growth that was there all along with two
    /// misses is not a late leak; a miss within the late run is tolerated.
    func testOnsetNeedsFourCyclesAndAQuietStart() throws {
        func analyze(_ grows: (Int) -> Bool) throws -> Finding? {
            let t = try TraceBuilder()
            t.mark("start")
            for i in 1...12 {
                if grows(i) { t.alloc(size: 10, stack: 5) }
                t.mark()
            }
            return try t.analyze().finding(stack: 5)
        }
        XCTAssertNil(try analyze { $0 >= 10 }, "3 cycles")
        let four = try XCTUnwrap(try analyze { $0 >= 9 })
        XCTAssertEqual(four.onsetCycle, 9)
        XCTAssertEqual(four.cyclesWithGrowthSinceOnset, 4)
        let missed = try XCTUnwrap(try analyze { $0 >= 6 && $0 != 10 })
        XCTAssertEqual(missed.onsetCycle, 6)
        XCTAssertEqual(missed.cyclesWithGrowthSinceOnset, 6)
        XCTAssertEqual(missed.averageObjectsPerCycle, 6.0 / 7.0)
        XCTAssertNil(try analyze { $0 != 4 && $0 != 6 }.flatMap { $0.kind == .abandoned ? $0 : nil },
                     "grew all along but twice: not abandoned")
    }
}
