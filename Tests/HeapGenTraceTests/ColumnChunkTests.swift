import Foundation
import XCTest
@testable import HeapGenTrace

/// Column chunks (minor version 6): event fields in streams of their own. Round trips through
/// the real writer and reader at every varint width, and hand-made chunks whose streams do
/// not fit their records are corrupt with a clear message.
final class ColumnChunkTests: XCTestCase {
    private func write(level: Int32?, _ body: (TraceWriter) throws -> Void) throws -> [UInt8] {
        try traceBytes(level: level, end: EndRecord(reason: .exited), body)
    }

    /// Values whose varints take 1, 2, … 10 bytes (first byte alone, or with further bytes).
    private let widths: [UInt64] = [0, 1, 0x7F, 0x80, 0xFF, 0x3FFF, 0x4000, 1 << 35, 1 << 56, (1 << 57) - 1,
                                    1 << 57, 1 << 63, UInt64.max]

    func testFieldsOfEveryWidthRoundTrip() throws {
        for level in [TraceWriter.defaultCompressionLevel, nil] as [Int32?] {
            var expected: [TraceRecord] = []
            let bytes = try write(level: level) { w in
                for id in [1, 0x80, UInt32.max] as [UInt32] {
                    w.defineStack(id: id, frames: [0x40_1000]); expected.append(.stack(id: id, frames: [0x40_1000]))
                }
                w.defineType(id: UInt32.max, metadata: 1, name: "T"); expected.append(.type(id: UInt32.max, metadata: 1, name: "T"))
                for (k, v) in widths.enumerated() {
                    // Addresses far apart (deltas of every width, both signs), sizes of every width.
                    let address = v & ~15
                    let stack: UInt32 = [1, 0x80, UInt32.max][k % 3]
                    w.appendAllocation(.malloc, address: address, size: v, stack: stack, type: 0)
                    expected.append(.allocation(function: .malloc, address: address, size: v, stack: stack, type: 0))
                    w.appendAllocation(.calloc, address: address ^ 0x10, size: v, stack: stack, type: UInt32.max)
                    expected.append(.allocation(function: .calloc, address: address ^ 0x10, size: v, stack: stack, type: UInt32.max))
                    w.appendReallocUndo(address: ~address); expected.append(.reallocUndo(address: ~address))
                }
                // Frees naming allocations up to 4095 back (the `back` field's widths).
                var live: [UInt64] = []
                for i in 0..<5000 as Range<UInt64> {
                    let a = 0x5555_0000_0000 + i * 32
                    w.appendAllocation(.malloc, address: a, size: 24, stack: 1, type: 0)
                    expected.append(.allocation(function: .malloc, address: a, size: 24, stack: 1, type: 0))
                    live.append(a)
                }
                for back in [0, 15, 16, 127, 128, 4000] {
                    let a = live.remove(at: live.count - 1 - back)
                    w.appendFree(back % 2 == 0 ? .free : .realloc, address: a)
                    expected.append(.free(function: back % 2 == 0 ? .free : .realloc, address: a))
                }
            }
            XCTAssertEqual(Array(try readAll(bytes).dropFirst().dropLast()), expected, "level \(String(describing: level))")
        }
    }

    // MARK: Hand-made column chunks

    /// Stored bytes of a column chunk: the records stream and the eight field streams, each
    /// stored plain unless `stored` says otherwise; `plain` overrides the prefix's length.
    private func columnChunk(_ records: [UInt8], _ fields: [[UInt8]], plain: Int? = nil,
                             stored: [Int: [UInt8]] = [:], lengths: [Int: Int] = [:], trailing: [UInt8] = []) -> [UInt8] {
        let streams = [records] + fields + Array(repeating: [], count: 8 - fields.count)
        let total = plain ?? streams.reduce(0) { $0 + $1.count }
        let prefix = UInt32(total) | ColumnChunk.flag
        var out = (0..<4).map { UInt8(truncatingIfNeeded: prefix >> (8 * $0)) }
        for (k, s) in streams.enumerated() {
            out += Encode.varint(UInt64(lengths[k] ?? s.count)) + Encode.varint(UInt64((stored[k] ?? s).count))
        }
        for (k, s) in streams.enumerated() { out += stored[k] ?? s }
        return out + trailing
    }

    /// A trace: process (plain chunk), `stored` as a compressed chunk, then end.
    private func trace(_ stored: [UInt8], events: UInt64 = 1) -> [UInt8] {
        var raw = RawTrace(minor: 6)
        raw.chunk(Encode.process())
        raw.compressedChunk(stored)
        raw.chunk(Encode.end(events: events))
        return raw.bytes
    }

    /// malloc by slot 0 at 0x1000 (zigzag 0x2000: first byte 0x80, further bytes 0x40), 8 bytes, no stack.
    private let malloc: ([UInt8], [[UInt8]]) = ([0x40], [[0x80], [0x40], [8], [], [0], []])

    func testHandMadeColumnChunkReads() throws {
        let records = try readAll(trace(columnChunk(malloc.0, malloc.1)))
        XCTAssertEqual(records[1], .allocation(function: .malloc, address: 0x1000, size: 8, stack: 0, type: 0))
        // A stream stored as a zstd frame reads the same (a long one, so the frame is smaller):
        // a malloc, then 1499 times a free of it and a malloc of the freed address.
        let sizes = [UInt8](repeating: 8, count: 1500)
        let compressor = ChunkCompressor(level: 1)
        var output = [UInt8](repeating: 0, count: 4096)
        let n = try XCTUnwrap(sizes.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { compressor.frame(source, into: $0.baseAddress!, capacity: $0.count) }
        })
        XCTAssertLessThan(n, sizes.count)
        let pairs = Array([[UInt8]](repeating: [0x50, 0x61], count: 1499).joined())
        let chunk = columnChunk([0x40] + pairs, [[0x80], [0x40], sizes, [], [UInt8](repeating: 0, count: 1500), []],
                                stored: [3: Array(output[..<n])])
        let many = try readAll(trace(chunk, events: 2999))
        XCTAssertEqual(many.count, 3001)
        XCTAssertEqual(many[2999], .allocation(function: .malloc, address: 0x1000, size: 8, stack: 0, type: 0))
    }

    func testStreamsThatDoNotFitTheirRecordsAreCorrupt() {
        let (r, f) = malloc
        let cases: [([UInt8], String)] = [
            (columnChunk(r, [[0x80], [0x40], [], [], [0], []]), "size stream ends"),
            (columnChunk(r, [[0x80], [], [8], [], [0], []]), "address delta further-bytes stream ends"),
            (columnChunk(r, [[0x80], [0x40], [8], [], [0, 0], []]), "stack and type id stream has 1 bytes no record uses"),
            (columnChunk(r, [[0x80], [0x40, 1], [8], [], [0], []]), "address delta further-bytes stream has 1 bytes"),
            (columnChunk(r, [[0x80], [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02], [8], [], [0], []]), "does not fit in 64 bits"),
            (columnChunk(r, f, plain: 100), "not the 100 the chunk states"),
            (columnChunk(r, f, plain: 3), "more than the 3 the chunk states"),
            (columnChunk(r, f, lengths: [3: 0]), "stored in 1 bytes, more than its 0"),
            (columnChunk(r, f, stored: [3: [8, 8]]), "stored in 2 bytes, more than its 1"),
            (columnChunk(r, f, trailing: [0]), "bytes, but 6 follow"),
            (columnChunk(r, f, stored: [1: []], lengths: [1: 1]), "stream 1 decompresses to 0 bytes, not the 1"),
            (columnChunk(r, f, plain: 6, stored: [1: [0xFF]], lengths: [1: 2]), "stream 1 does not decompress (zstd"),
        ]
        for (stored, wanted) in cases {
            let error = readError(trace(stored))
            XCTAssertEqual(error?.kind, .corrupt, wanted)
            XCTAssertTrue(error?.message.contains(wanted) ?? false, "\(String(describing: error)) lacks \(wanted)")
            XCTAssertEqual(error?.offset, UInt64(TraceFormat.headerSize + 8 + Encode.process().count), "errors name the chunk")
        }
        // Cut anywhere inside the stream table: corrupt, never a crash.
        let whole = columnChunk(r, f)
        for n in 5..<whole.count {
            XCTAssertEqual(readError(trace(Array(whole[..<n])))?.kind, .corrupt, "cut at \(n)")
        }
    }
}
