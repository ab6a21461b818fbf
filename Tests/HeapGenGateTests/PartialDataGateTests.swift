// A gate never passes on partial data: a report whose trace lost stacks (the shim's stack
// store was full) fails every gate that has criteria, with one clear line.

@testable import HeapGenGate
import HeapGenReport
import XCTest

final class PartialDataGateTests: XCTestCase {
    private func report(stacksLost: UInt64) -> Report {
        var r = Synthetic.report([Synthetic.finding(function: "small", perCycle: 10)])
        r.totals.stacksLost = stacksLost
        return r
    }

    func testLostStacksFailAGateThatWouldPass() {
        let policy = GatePolicy(failOn: [.abandoned], maxBytesPerCycle: 1000)
        XCTAssertFalse(Gate.evaluate(report(stacksLost: 0), policy: policy).failed, "below the limit: passes")

        let v = Gate.evaluate(report(stacksLost: 1_234), policy: policy)
        XCTAssertTrue(v.failed)
        XCTAssertEqual(v.stacksLost, 1_234)
        let lines = GateMessages.verdictLines(v)
        XCTAssertEqual(lines.filter { $0.hasPrefix("heapgen: gate failed:") },
                       ["heapgen: gate failed: the trace is incomplete: 1,234 allocations recorded without a stack: the stack store was full (the collector fell behind; HEAPGEN_ARENA_MB gives it more room), so their sites are unknown and findings may be incomplete"])
        XCTAssertEqual(lines.last, "SUMMARY: heapgen: gate failed: 1,234 allocations without a stack (incomplete trace).")
    }

    func testLiveAtExitLimitAloneAlsoFails() {
        let v = Gate.evaluate(report(stacksLost: 1), policy: GatePolicy(maxLiveAtExit: 1 << 30))
        XCTAssertTrue(v.failed)
    }

    func testNoCriteriaNoVerdict() {
        let v = Gate.evaluate(report(stacksLost: 7), policy: GatePolicy())
        XCTAssertFalse(v.failed, "nothing asked, nothing failed")
        XCTAssertEqual(v.stacksLost, 0)
    }
}
