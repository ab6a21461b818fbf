// A real recording under the shim is written with compact events in column chunks
// (trace minor version 6), and reads back exactly: the same records as when the same
// events are written uncompressed.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class CompactTraceTests: XCTestCase {
    func testRealRecordingReadsBackTheSameCompressedAndPlain() throws {
        let exe = try Fixture.build("stress.c")
        let rec = try HeapGenCLI.recording(exe, ["8", "20000"], timeout: 300)
        XCTAssertStatus(rec.result, 0)
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: rec.trace)))
        XCTAssertEqual(bytes[10], 8, "minor version")
        // Some chunk is a column chunk (bit 31 of its length word, and of its u32 prefix).
        var o = 16
        var columns = 0
        while o + 8 <= bytes.count {
            let word = UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o + 2]) << 16 | UInt32(bytes[o + 3]) << 24
            if word & 0x8000_0000 != 0 && bytes[o + 11] & 0x80 != 0 { columns += 1 }
            o += 8 + Int(word & 0x7FFF_FFFF)
        }
        XCTAssertEqual(o, bytes.count)
        XCTAssertGreaterThan(columns, 0)

        var reader = try TraceReader(path: rec.trace, strict: true)
        var records: [TraceRecord] = []
        try reader.forEach { records.append($0) }
        // stress.c: 8 threads × 20,000 mallocs of 8 + ((id * 7919 + i * 31) % 2048) bytes, all freed.
        let mallocs = records.filter { if case .allocation(.malloc, _, _, _, _) = $0 { return true } else { return false } }
        XCTAssertEqual(mallocs.count, 8 * 20_000)
        let summary = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(summary.unknownFrees, 0, "\(summary.problems.prefix(5))")
        XCTAssertEqual(summary.doubleAllocations, 0, "\(summary.problems.prefix(5))")

        // The same records written plain (no compression) read back identical.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("compact-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let plainPath = dir.appendingPathComponent("plain.trace").path
        guard case .process(let process) = records.first, case .end(let end) = records.last else {
            return XCTFail("no process or end record")
        }
        let writer = try TraceWriter(path: plainPath, process: process, compressionLevel: nil)
        for record in records.dropFirst().dropLast() {
            switch record {
            case .allocation(let f, let a, let s, let st, let t): writer.appendAllocation(f, address: a, size: s, stack: st, type: t)
            case .free(let f, let a): writer.appendFree(f, address: a)
            case .reallocUndo(let a): writer.appendReallocUndo(address: a)
            case .stack(let id, let frames): writer.defineStack(id: id, frames: frames)
            case .stackTruncated(let id): writer.stackTruncated(id: id)
            case .type(let id, let m, let n): writer.defineType(id: id, metadata: m, name: n)
            case .moduleLoad(let m): writer.moduleLoad(m)
            case .moduleUnload(let b): writer.moduleUnload(loadBias: b)
            case .mark(let l, let t, let origin): writer.mark(label: l, timeNanoseconds: t, origin: origin)
            case .threadStart(let t): writer.threadStart(tid: t)
            case .lost(let n): writer.lost(count: n)
            default: return XCTFail("unexpected record \(record)")
            }
        }
        try writer.finish(end)
        var plain = try TraceReader(path: plainPath, strict: true)
        var again: [TraceRecord] = []
        try plain.forEach { again.append($0) }
        XCTAssertEqual(again.count, records.count)
        XCTAssertTrue(again == records, "plain and compressed traces differ")
    }
}
