import Foundation
import HeapGenTestSupport
import XCTest
@testable import HeapGenTrace

/// Compressed chunks and compact events (minor version 5): round trips through the real
/// writer and reader, old encodings still read, and damaged compressed chunks are corrupt.
final class CompressionTests: XCTestCase {
    /// Writes `body` with `level` (nil: plain) and returns the file's bytes.
    private func write(level: Int32?, _ body: (TraceWriter) throws -> Void) throws -> [UInt8] {
        try traceBytes(level: level, end: EndRecord(reason: .exited, freeNullCalls: 3), body)
    }

    /// (file offset, length word) of every chunk.
    private func chunks(_ bytes: [UInt8]) -> [(offset: Int, word: UInt32)] {
        var out: [(Int, UInt32)] = []
        var o = TraceFormat.headerSize
        while o + 8 <= bytes.count {
            let word = UInt32(bytes[o]) | UInt32(bytes[o + 1]) << 8 | UInt32(bytes[o + 2]) << 16 | UInt32(bytes[o + 3]) << 24
            out.append((o, word))
            o += 8 + Int(word & 0x7FFF_FFFF)
        }
        return out
    }

    /// (length, stored length) of each stream, when the chunk at `chunk` is a column chunk.
    private func columnStreams(_ bytes: [UInt8], _ chunk: (offset: Int, word: UInt32)) -> [(length: Int, stored: Int)]? {
        let o = chunk.offset + 8
        guard chunk.word & ChunkCompression.flag != 0, bytes[o + 3] & 0x80 != 0 else { return nil }
        var i = o + 4
        func varint() -> Int {
            var v = 0, shift = 0
            while true {
                let b = bytes[i]; i += 1
                v |= Int(b & 0x7F) << shift
                if b < 0x80 { return v }
                shift += 7
            }
        }
        return (0..<ColumnChunk.streamCount).map { _ in (varint(), varint()) }
    }

    private func setCRC(_ bytes: inout [UInt8], chunkAt o: Int) {
        let n = Int(bytes[o]) | Int(bytes[o + 1]) << 8 | Int(bytes[o + 2]) << 16 | Int(bytes[o + 3] & 0x7F) << 24
        let crc = bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[(o + 8)..<(o + 8 + n)])) }
        for k in 0..<4 { bytes[o + 4 + k] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k))) }
    }

    /// Every event form the writer has: malloc by slot and of a freed address, every other
    /// function (with and without type), frees of recent allocations (short and long form)
    /// and by slot, realloc frees both ways, reallocUndo; two arenas; and the other records.
    private func everyKind(_ w: TraceWriter) -> [TraceRecord] {
        var expected: [TraceRecord] = []
        w.threadStart(tid: 9); expected.append(.threadStart(tid: 9))
        let module = ModuleRecord(loadBias: 0x7F00_0000_0000, path: "/lib/x.so", buildID: [1, 2],
                                  segments: [.init(vaddr: 0, memsz: 0x1000, flags: 5)])
        w.moduleLoad(module); expected.append(.moduleLoad(module))
        w.defineStack(id: 3, frames: [0x40_1000, 0x40_2000]); expected.append(.stack(id: 3, frames: [0x40_1000, 0x40_2000]))
        w.stackTruncated(id: 3); expected.append(.stackTruncated(id: 3))
        w.defineType(id: 5, metadata: 0x5000, name: "App.Node"); expected.append(.type(id: 5, metadata: 0x5000, name: "App.Node"))
        func alloc(_ f: AllocationFunction, _ a: UInt64, _ size: UInt64, _ type: UInt32 = 0) {
            w.appendAllocation(f, address: a, size: size, stack: 3, type: type)
            expected.append(.allocation(function: f, address: a, size: size, stack: 3, type: type))
        }
        func free(_ f: FreeFunction, _ a: UInt64) {
            w.appendFree(f, address: a)
            expected.append(.free(function: f, address: a))
        }
        var random = SeededRandom(seed: 5)
        var live: [UInt64] = []
        for i in 0..<6000 {
            let arena: UInt64 = i % 4 == 0 ? 0x7F11_2000_0000 : 0x5555_0000_0000
            let a = arena + (random.next() % 8192) * 16
            let f = AllocationFunction.allCases[Int(random.next() % 30) % AllocationFunction.allCases.count]
            alloc(i % 7 == 0 ? f : .malloc, a, 16 + random.next() % 241, i % 11 == 0 ? 5 : 0)
            live.append(a)
            switch i % 5 {
            case 0: free(.free, live.removeLast())                     // the latest allocation
            case 1 where live.count > 40: free(.free, live.remove(at: live.count - 30))  // long form
            case 2 where live.count > 3000: free(.free, live.removeFirst())             // by slot
            case 3:
                let old = live.removeLast()
                free(.realloc, old)
                w.appendReallocUndo(address: old); expected.append(.reallocUndo(address: old))
                live.append(old)
            case 4:
                let old = live.removeLast()
                free(.free, old)
                alloc(.malloc, old, 48)                                // of a freed address
                live.append(old)
            default: break
            }
            if i == 3000 {
                w.mark(label: "half", timeNanoseconds: 77, origin: .timer)
                expected.append(.mark(label: "half", timeNanoseconds: 77, origin: .timer))
            }
        }
        // A malloc of the address the latest free of its size class released, 8 frees ago.
        alloc(.malloc, 0x9000_0000, 40)
        free(.free, 0x9000_0000)
        for k in 0..<8 as Range<UInt64> {
            alloc(.malloc, 0x9100_0000 + k * 0x100, 500)
            free(.free, 0x9100_0000 + k * 0x100)
        }
        alloc(.malloc, 0x9000_0000, 33)
        free(.free, 0x9000_0000)
        free(.realloc, live.removeFirst())
        for a in live { free(.free, a) }
        w.lost(count: 2); expected.append(.lost(count: 2))
        w.unreachable([0x10, 0x20]); expected.append(.unreachable([0x10, 0x20]))
        w.moduleUnload(loadBias: 0x7F00_0000_0000); expected.append(.moduleUnload(loadBias: 0x7F00_0000_0000))
        w.recordingWarning("process 7: malloc is defined by the executable itself")
        expected.append(.recordingWarning("process 7: malloc is defined by the executable itself"))
        return expected
    }

    func testEveryRecordKindRoundTripsCompressedAndPlain() throws {
        for level in [TraceWriter.defaultCompressionLevel, 1, nil] as [Int32?] {
            var expected: [TraceRecord] = []
            let bytes = try write(level: level) { expected = everyKind($0) }
            let records = try readAll(bytes)
            guard case .process(sampleProcess) = records.first, case .end(let end) = records.last else {
                return XCTFail("no process or end record")
            }
            XCTAssertEqual(end.freeNullCalls, 3)
            XCTAssertEqual(Array(records.dropFirst().dropLast()), expected, "level \(String(describing: level))")
            XCTAssertEqual(bytes[10], 8, "minor version")
            // Chunks with events are column chunks; without a level none of their streams is a zstd frame.
            let columns = chunks(bytes).compactMap { columnStreams(bytes, $0) }
            XCTAssertGreaterThan(columns.count, 1)
            let frames = columns.joined().filter { $0.stored < $0.length }
            XCTAssertEqual(frames.isEmpty, level == nil, "zstd frames with level \(String(describing: level))")
            // The end chunk is plain (TraceSymbolAppender rewrites it).
            XCTAssertEqual(chunks(bytes).last!.word & ChunkCompression.flag, 0)
        }
    }

    func testCompressionMakesEventChunksSmaller() throws {
        var plain: [TraceRecord] = [], packed: [TraceRecord] = []
        let a = try write(level: nil) { plain = everyKind($0) }
        let b = try write(level: TraceWriter.defaultCompressionLevel) { packed = everyKind($0) }
        XCTAssertEqual(plain, packed)
        XCTAssertLessThan(b.count, a.count * 3 / 4, "compressed \(b.count) bytes, plain \(a.count)")
    }

    /// A minor-4 trace (tags 0x01–0x03, one delta base) still reads, and its allocations
    /// feed the recent-allocation ring like compact ones.
    func testMinorFourEventsStillRead() throws {
        var raw = RawTrace(minor: 4)
        raw.chunk(Encode.process() + Encode.alloc(delta: 0x1000, size: 8) + Encode.free(17, delta: 0)
                  + [0x03] + Encode.svarint(0x10) + Encode.alloc(3, delta: -0x10, size: 16)
                  + Encode.free(delta: 0x30) + Encode.end(events: 5))
        let records = try readAll(raw.bytes)
        XCTAssertEqual(Array(records.dropFirst().dropLast()), [
            .allocation(function: .malloc, address: 0x1000, size: 8, stack: 0, type: 0),
            .free(function: .realloc, address: 0x1000),
            .reallocUndo(address: 0x1010),
            .allocation(function: .realloc, address: 0x1000, size: 16, stack: 0, type: 0),
            .free(function: .free, address: 0x1030),
        ])
    }

    func testDamagedCompressedChunkIsCorrupt() throws {
        let bytes = try write(level: TraceWriter.defaultCompressionLevel) { _ = everyKind($0) }
        guard let chunk = chunks(bytes).first(where: { $0.word & ChunkCompression.flag != 0 }) else {
            return XCTFail("no compressed chunk")
        }
        let stored = Int(chunk.word & 0x7FFF_FFFF)
        // A flipped bit: the CRC says so first.
        var flipped = bytes
        flipped[chunk.offset + 8 + stored / 2] ^= 0x10
        XCTAssertEqual(readError(flipped)?.kind, .corrupt)
        XCTAssertTrue(readError(flipped)!.message.contains("CRC mismatch"))
        // Bit flips with the CRC made right: zstd (or the record decoder) must catch them.
        var random = SeededRandom(seed: 11)
        for _ in 0..<200 {
            var damaged = bytes
            let at = chunk.offset + 8 + 4 + Int(random.next() % UInt64(stored - 4))
            damaged[at] ^= UInt8(1 << (random.next() % 8))
            setCRC(&damaged, chunkAt: chunk.offset)
            if let error = readError(damaged) {
                XCTAssertEqual(error.kind, .corrupt, "\(error)")
            }
        }
        // A stated length that is not what the frame gives, or beyond the chunk limit.
        for claimed: UInt32 in [1, 100, UInt32(TraceFormat.maxChunkPayload) + 1, 0] {
            var wrong = bytes
            for k in 0..<4 { wrong[chunk.offset + 8 + k] = UInt8(truncatingIfNeeded: claimed >> (8 * UInt32(k))) }
            setCRC(&wrong, chunkAt: chunk.offset)
            let error = readError(wrong)
            XCTAssertEqual(error?.kind, .corrupt, "claimed \(claimed)")
            XCTAssertEqual(error?.offset, UInt64(chunk.offset), "claimed \(claimed)")
        }
        // No frame at all.
        var raw = RawTrace(minor: 5)
        raw.chunk(Encode.process())
        raw.compressedChunk([0x10, 0, 0, 0])
        XCTAssertTrue(readError(raw.bytes)!.message.contains("no zstd frame"))
    }

    /// A tiny chunk whose frame expands far beyond its stated length (or the chunk limit)
    /// stops at the stated length: corrupt, not a 64 MiB allocation.
    func testDecompressionBombIsCorrupt() throws {
        let big = [UInt8](repeating: 0, count: 64 << 20)
        let compressor = try XCTUnwrap(ChunkCompressor(level: 1))
        let n = try XCTUnwrap(big.withUnsafeBytes { compressor.compress($0, headerRoom: 0) })
        var stored = Array(UnsafeRawBufferPointer(start: compressor.output, count: n))
        XCTAssertLessThan(stored.count, 64 << 10)
        for claimed in [UInt32(TraceFormat.maxChunkPayload), 4096] {
            for k in 0..<4 { stored[k] = UInt8(truncatingIfNeeded: claimed >> (8 * UInt32(k))) }
            var raw = RawTrace(minor: 5)
            raw.chunk(Encode.process())
            raw.compressedChunk(stored)
            raw.chunk(Encode.end(events: 0))
            let error = readError(raw.bytes)
            XCTAssertEqual(error?.kind, .corrupt)
            XCTAssertTrue(error?.message.contains("zstd") ?? false, "\(String(describing: error))")
        }
    }

    func testCompactEventsNamingWhatDoesNotExistAreCorrupt() {
        let cases: [([UInt8], String)] = [
            ([0x50], "allocations back"),                      // free of an allocation before any
            ([0x60] + Encode.varint(4096), "allocations back"),
            ([0x61, 8, 0], "frees back"),                      // malloc of a freed address before any free
            ([0x68, 8, 0], "size class"),                      // nothing freed in its size class yet
            ([0x68, 0x80, 0x10, 0], "size class"),             // 2048 bytes: no size class
            ([0x05, 8, 0], "slot 8"),
            ([0x04, 0x81, 0, 8, 0, 0], "function and slot"),   // slot 8
            ([0x04, 0x0B, 0, 8, 0, 0], "function and slot"),   // function 11
            ([0x40, 0, 8, 9], "stack 9"),
        ]
        for (records, wanted) in cases {
            let error = readError(singleChunkTrace(records, events: 1))
            XCTAssertEqual(error?.kind, .corrupt, wanted)
            XCTAssertTrue(error?.message.contains(wanted) ?? false, "\(String(describing: error)) lacks \(wanted)")
        }
    }

    func testCompressedTraceCutShortIsSalvaged() throws {
        let bytes = try write(level: TraceWriter.defaultCompressionLevel) { w in
            for i in 0..<200_000 as Range<UInt64> { w.appendAllocation(.malloc, address: 0x1000 + (i % 999) * 16, size: i % 300, stack: 0, type: 0) }
        }
        let all = chunks(bytes)
        XCTAssertGreaterThan(all.filter { $0.word & ChunkCompression.flag != 0 }.count, 1)
        let cut = Array(bytes[..<(all[all.count - 2].offset + 20)])
        XCTAssertEqual(readError(cut, strict: true)?.kind, .truncated)
        let records = try readAll(cut, name: "cut-compressed", strict: false)
        guard case .end(let end) = records.last else { return XCTFail("no end") }
        XCTAssertEqual(end.reason, .unknown)
        XCTAssertEqual(end.salvage?.ignoredBytes, 20)
        XCTAssertEqual(UInt64(records.count - 2), end.eventCount)
    }

    func testSymbolsAppendToACompressedTrace() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("s.trace")
        let writer = try TraceWriter(path: path, process: sampleProcess)
        writer.defineStack(id: 1, frames: [0x40_1000])
        for i in 0..<50_000 as Range<UInt64> { writer.appendAllocation(.malloc, address: 0x1000 + i * 16, size: 8, stack: 1, type: 0) }
        try writer.finish(EndRecord(reason: .exited))
        let symbols = SymbolsRecord(loadBias: 0x40_0000, path: "/bin/app", buildID: [7],
                                    entries: [.init(offset: 0x1000, frames: [StoredFrame(function: "main", shortFunction: "main", file: "a.c", line: 3, column: 1)])])
        try TraceSymbolAppender.append([symbols], to: path)
        var reader = try TraceReader(path: path, strict: true)
        XCTAssertEqual(try reader.storedSymbols(), [symbols])
        var events = 0
        try reader.forEach { if case .allocation = $0 { events += 1 } }
        XCTAssertEqual(events, 50_000)
    }
}
