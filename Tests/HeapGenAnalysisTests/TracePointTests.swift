// Command-line spellings of trace points (TracePoint moved here from HeapGenDiff with
// LiveHeapReplay, so that exports need not import diffs).

import HeapGenAnalysis
import XCTest

final class TracePointTests: XCTestCase {
    func testParsing() {
        XCTAssertEqual(TracePoint(parsing: "12"), .mark(12))
        XCTAssertEqual(TracePoint(parsing: "last-mark"), .finalSnapshot)
        XCTAssertEqual(TracePoint(parsing: "cycle 3"), .label("cycle 3"))
        XCTAssertEqual(TracePoint(parsing: "start"), .start)
        XCTAssertEqual(TracePoint(parsing: "end"), .end)
    }
}
