// What matches a site across traces.

@testable import HeapGenDiff
@testable import HeapGenSymbolication
import XCTest

final class MatchKeyTests: XCTestCase {
    /// A stack of `functions` (innermost first), the first two in the program's own source.
    static func stack(_ functions: [String]) -> SymbolicatedStack {
        SymbolicatedStack(addresses: functions.enumerated().map { i, name in
            let own = i < 2
            let frame = SymbolicatedFrame(function: name, file: own ? "/src/main.swift" : nil, line: own ? 20 + i : nil,
                                          module: own ? "/app/bin" : "/usr/lib/libswift_Concurrency.so",
                                          address: UInt64(0x1000 * (i + 1)))
            return SymbolicatedAddress(address: frame.address, module: nil, frames: [frame])
        })
    }

    /// A Swift task's site in one run and the next: one key whichever worker path ran the job
    /// (the frames outside the executor's job entry); other stacks keep their outer frames.
    func testKeyEndsAtTheExecutorsJobEntry() {
        let inner = ["Registry.open(_:)", "closure #1 in main", "swift::runJobInEstablishedExecutorContext(swift::Job*)",
                     "swift_job_run"]
        let a = Self.stack(inner + ["_dispatch_lane_serial_drain", "start_thread"])
        let b = Self.stack(inner + ["_dispatch_continuation_pop", "_dispatch_worker_thread2", "start_thread"])
        XCTAssertEqual(a.userFrame, 0)
        XCTAssertEqual(MatchKey(typeName: "App.Session", stack: a, depth: 8), MatchKey(typeName: "App.Session", stack: b, depth: 8))
        XCTAssertEqual(MatchKey(typeName: nil, stack: a, depth: 8).frames.count, 3)
        let c = Self.stack(["open", "main", "helper_a"]), d = Self.stack(["open", "main", "helper_b"])
        XCTAssertNotEqual(MatchKey(typeName: nil, stack: c, depth: 8), MatchKey(typeName: nil, stack: d, depth: 8))
    }
}
