import Foundation
import XCTest
@testable import HeapGenTrace

/// A trace whose collector was killed (issue 7, item 16): the reader keeps every whole chunk
/// and makes up the end record; and traces that are not regular files are refused without
/// blocking (item 9).
final class SalvageTests: XCTestCase {
    /// A trace of 3 chunks after the process chunk: each mark flushes the chunk it ends.
    /// Returns the bytes (without an end record: the writer was never finished) and, per
    /// chunk boundary, the events before it.
    private func killedTrace() throws -> (bytes: [UInt8], boundaries: [(offset: Int, events: UInt64)]) {
        let dir = try TemporaryDirectory()
        let path = dir.path("killed.trace")
        let writer = try TraceWriter(path: path, process: sampleProcess)
        var boundaries: [(Int, UInt64)] = [(Int(writer.bytesWritten), 0)]
        var events: UInt64 = 0
        for round in 0..<3 {
            for i in 0..<10 {
                writer.appendAllocation(.malloc, address: UInt64(0x1000 * (round * 10 + i + 1)), size: 16, stack: 0, type: 0)
                events += 1
            }
            writer.mark(label: "round \(round)", timeNanoseconds: UInt64(round), origin: .program)
            events += 1
            boundaries.append((Int(writer.bytesWritten), events))
        }
        XCTAssertEqual(writer.pendingBytes, 0, "every mark flushed its chunk")
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        XCTAssertEqual(bytes.count, boundaries.last!.0)
        // The writer is dropped without finish(): like a killed collector.
        return (bytes, boundaries)
    }

    func testEveryCutAfterTheProcessChunkIsSalvaged() throws {
        let (bytes, boundaries) = try killedTrace()
        let first = boundaries[0].offset
        for cut in 0...bytes.count {
            let prefix = Array(bytes.prefix(cut))
            if cut < first {
                // Not even the process record is whole: nothing to salvage.
                XCTAssertEqual(readError(prefix, strict: false)?.kind, .truncated, "cut at \(cut)")
                continue
            }
            let whole = boundaries.last { $0.offset <= cut }!
            let records = try readAll(prefix, name: "cut.trace", strict: false)
            XCTAssertEqual(records.first, .process(sampleProcess), "cut at \(cut)")
            let allocations = records.filter { if case .allocation = $0 { true } else { false } }.count
            let marks = records.filter { if case .mark = $0 { true } else { false } }.count
            XCTAssertEqual(UInt64(allocations + marks), whole.events, "cut at \(cut): the events of whole chunks")
            guard case let .end(end)? = records.last else {
                XCTFail("cut at \(cut): no end record delivered")
                continue
            }
            XCTAssertEqual(end.reason, .unknown)
            XCTAssertEqual(end.eventCount, whole.events)
            XCTAssertEqual(end.salvage, TraceSalvage(file: "cut.trace", readBytes: UInt64(whole.offset),
                                                     ignoredBytes: UInt64(cut - whole.offset)), "cut at \(cut)")
            // Strict reading still calls it truncated.
            XCTAssertEqual(readError(prefix, strict: true)?.kind, .truncated, "cut at \(cut)")
        }
    }

    func testNotices() {
        XCTAssertEqual(TraceSalvage(file: "a", readBytes: 100, ignoredBytes: 0).notice,
                       "no end record: the collector was killed or is still recording")
        XCTAssertEqual(TraceSalvage(file: "a", readBytes: 100, ignoredBytes: 1).notice,
                       "truncated: 1 byte at the end ignored; no end record: the collector was killed or is still recording")
        XCTAssertEqual(TraceSalvage(file: "a", readBytes: 100, ignoredBytes: 1_234_567).notice,
                       "truncated: 1,234,567 bytes at the end ignored; no end record: the collector was killed or is still recording")
    }

    func testSummaryOfAKilledTraceOnDiskAndOneNotice() throws {
        let (bytes, boundaries) = try killedTrace()
        let dir = try TemporaryDirectory()
        let path = dir.path("partial.trace")
        let cut = boundaries[2].offset + 5 // two whole chunks of events, then 5 bytes of the third
        try Data(bytes.prefix(cut)).write(to: URL(fileURLWithPath: path))
        _ = TraceSalvageLog.take()
        // Read twice (as `diff` does): noted once.
        let summary = try TraceSummary.load(path: path)
        _ = try TraceSummary.load(path: path)
        XCTAssertEqual(summary.allocationCount, 20)
        XCTAssertEqual(summary.marks.map(\.label), ["round 0", "round 1"])
        XCTAssertEqual(summary.liveObjects, 20)
        XCTAssertEqual(summary.end.salvage?.ignoredBytes, 5)
        XCTAssertEqual(TraceSalvageLog.take().map(\.file), [path])
        XCTAssertEqual(TraceSalvageLog.take().count, 0)
        XCTAssertTrue(TraceSalvageLog.wasSalvaged(path))
        // A complete trace is never noted.
        let complete = dir.path("complete.trace")
        try Data(try smallTrace()).write(to: URL(fileURLWithPath: complete))
        XCTAssertNil(try TraceSummary.load(path: complete).end.salvage)
        XCTAssertFalse(TraceSalvageLog.wasSalvaged(complete))
    }

    func testDamageBeforeTheCutIsStillCorrupt() throws {
        let (bytes, boundaries) = try killedTrace()
        var damaged = Array(bytes.prefix(boundaries[2].offset + 3))
        damaged[boundaries[1].offset + 10] ^= 0x20 // inside the second chunk's payload
        XCTAssertEqual(readError(damaged, strict: false)?.kind, .corrupt)
    }

    func testNonRegularFilesAreRefusedAtOnce() throws {
        let dir = try TemporaryDirectory()
        let fifo = dir.path("fifo.trace")
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        for (path, kind) in [(fifo, "a FIFO"), (dir.url.path, "a directory"), ("/dev/zero", "a character device")] {
            let start = Date()
            XCTAssertThrowsError(try TraceReader(path: path)) { error in
                let e = error as? TraceError
                XCTAssertEqual(e?.kind, .io)
                XCTAssertEqual(e?.description, "\(path): I/O error: \(kind), not a trace file (traces are regular files)")
            }
            XCTAssertLessThan(Date().timeIntervalSince(start), 5, "\(path) must not block")
        }
    }
}
