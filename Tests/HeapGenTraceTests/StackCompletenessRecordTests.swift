// Trace minor version 2: the `stackTruncated` record (0x18) and the end record's
// `stacksLost` field — round trip, older files without them, and the reader's checks.

import Foundation
@testable import HeapGenTrace
import XCTest

final class StackCompletenessRecordTests: XCTestCase {
    func testRoundTrip() throws {
        var end = EndRecord(reason: .exited, status: 3, arenaFull: 9, stacksLost: 1_234_567)
        end.eventCount = 1
        let bytes = try writeTrace(end: end) { w in
            w.defineStack(id: 7, frames: [0x1000, 0x2000, 0x3000])
            w.stackTruncated(id: 7)
            w.appendAllocation(.malloc, address: 0x10, size: 8, stack: 7, type: 0)
        }
        XCTAssertGreaterThanOrEqual(try TraceReader(bytes: bytes).minorVersion, 2)
        let records = try readAll(bytes)
        XCTAssertEqual(records.count, 5)
        XCTAssertEqual(records[1], .stack(id: 7, frames: [0x1000, 0x2000, 0x3000]))
        XCTAssertEqual(records[2], .stackTruncated(id: 7))
        XCTAssertEqual(records[4], .end(end))
    }

    /// A minor-1 end record (no stacksLost) still reads, as 0.
    func testOlderEndRecordReadsAsNoneLost() throws {
        let records = try readAll(singleChunkTrace(Encode.alloc(delta: 16, size: 1), events: 1))
        guard case let .end(end)? = records.last else { return XCTFail("no end record: \(records)") }
        XCTAssertEqual(end.stacksLost, 0)
    }

    func testReaderChecks() throws {
        func expectCorrupt(_ bytes: [UInt8], _ fragment: String, line: UInt = #line) {
            let e = readError(bytes, line: line)
            XCTAssertEqual(e?.kind, .corrupt, "\(String(describing: e))", line: line)
            XCTAssertTrue(e?.message.contains(fragment) ?? false, "\(String(describing: e)) lacks \(fragment)", line: line)
        }
        // Truncation of a stack that is not (yet) defined.
        expectCorrupt(singleChunkTrace([0x18, 5], events: 0), "truncated stack 5 is not defined")
        expectCorrupt(singleChunkTrace([0x18, 0], events: 0), "truncated stack 0 is not defined")
        XCTAssertNoThrow(try readAll(singleChunkTrace(Encode.stack(id: 5, frames: [1]) + [0x18, 5], events: 0)))
        // stacksLost is the last field: anything after it is a record after the end.
        var raw = RawTrace()
        raw.chunk(Encode.process() + Encode.end(events: 0) + Encode.varint(4) + [0x15, 1])
        expectCorrupt(raw.bytes, "record after the end record")
    }

    func testSummaryCountsTruncatedStacksAndLostOnes() throws {
        var end = EndRecord(reason: .exited, stacksLost: 42)
        end.eventCount = 0
        let bytes = try writeTrace(end: end) { w in
            w.defineStack(id: 1, frames: [1])
            w.defineStack(id: 2, frames: [2])
            w.stackTruncated(id: 2)
        }
        let dir = try TemporaryDirectory()
        let path = dir.path("s.trace")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let s = try TraceSummary.load(path: path)
        XCTAssertEqual(s.stackCount, 2)
        XCTAssertEqual(s.truncatedStackCount, 1)
        XCTAssertEqual(s.end.stacksLost, 42)
    }

    /// A stack cut before the default limit is not blamed on the limit (V8's stacks end at
    /// its first generated frame, 5 or 6 frames in); one at the limit is.
    func testTheWordingSaysWhyAStackIsCut() {
        XCTAssertEqual(StackCompleteness.truncated(frames: 128),
                       "stack truncated at 128 frames (its outermost callers are missing; HEAPGEN_MAX_FRAMES raises the limit)")
        XCTAssertTrue(StackCompleteness.truncated(frames: 6).hasPrefix("stack cut short at 6 frames (its outermost callers are missing: the unwinder could not walk on"))
        XCTAssertTrue(StackCompleteness.truncated(frames: 6).hasSuffix("or HEAPGEN_MAX_FRAMES set the limit to 6)"))
        // A cgo call from Go (probe of a Go program: every site blamed HEAPGEN_MAX_FRAMES).
        XCTAssertEqual(StackCompleteness.truncated(frames: 2, outermost: "runtime.asmcgocall.abi0"),
                       "stack cut short at 2 frames, where Go's runtime switched to its system stack to call C "
                       + "(runtime.asmcgocall.abi0): the goroutine's Go callers are on another stack and not shown")
        XCTAssertEqual(StackCompleteness.truncated(frames: 6, outermost: "main"), StackCompleteness.truncated(frames: 6))
    }
}
