import XCTest
@testable import HeapGenTrace

final class ValidationTests: XCTestCase {
    func testTruncationAtEveryOffsetIsRejected() throws {
        let bytes = try smallTrace()
        XCTAssertNoThrow(try readAll(bytes))
        for cut in 0..<bytes.count {
            let error = readError(Array(bytes.prefix(cut)))
            XCTAssertEqual(error?.kind, .truncated, "cut at \(cut): \(String(describing: error))")
            XCTAssertEqual(error?.offset, UInt64(cut), "cut at \(cut): \(String(describing: error))")
        }
    }

    func testTruncatedFileOnDisk() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("app.trace")
        let writer = try TraceWriter(path: path, process: sampleProcess)
        writer.appendAllocation(.malloc, address: 1, size: 1, stack: 0, type: 0)
        try writer.flush()
        // The collector was killed here: no end record.
        var reader = try TraceReader(path: path, strict: true)
        var seen: [TraceRecord] = []
        XCTAssertThrowsError(try reader.forEach { seen.append($0) }) { error in
            let e = error as? TraceError
            XCTAssertEqual(e?.kind, .truncated)
            XCTAssertEqual(e?.offset, writer.bytesWritten)
            XCTAssertEqual(e?.description,
                           "\(path): truncated at byte \(writer.bytesWritten): no end record (the collector was stopped or killed before it finished)")
        }
        XCTAssertEqual(seen.count, 2, "records before the problem are delivered")
        try writer.finish(EndRecord(reason: .exited))
    }

    func testCRCCorruptionIsDetected() throws {
        let bytes = try smallTrace()
        // Flip every bit of every payload byte of the first chunk (the process chunk) and of the last.
        let firstChunkLength = Int(bytes[16]) | Int(bytes[17]) << 8
        for i in 24..<(24 + firstChunkLength) {
            for bit in 0..<8 {
                var b = bytes
                b[i] ^= 1 << bit
                let error = readError(b)
                XCTAssertEqual(error?.kind, .corrupt, "byte \(i) bit \(bit)")
                XCTAssertEqual(error?.offset, 16)
                XCTAssertTrue(error?.message.contains("CRC mismatch") ?? false)
            }
        }
        var b = bytes
        b[b.count - 1] ^= 0x40
        XCTAssertEqual(readError(b)?.kind, .corrupt)
        // The stored CRC itself.
        b = bytes
        b[20] ^= 1
        XCTAssertEqual(readError(b)?.kind, .corrupt)
    }

    func testChunkLengthOutOfRange() {
        var raw = RawTrace()
        raw.chunk([])
        XCTAssertEqual(readError(raw.bytes)?.kind, .corrupt)
        raw = RawTrace()
        raw.bytes += [0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0] // 16 MiB + 1
        let e = readError(raw.bytes)
        XCTAssertEqual(e?.kind, .corrupt)
        XCTAssertEqual(e?.offset, 16)
        XCTAssertEqual(e?.description, "t.trace: corrupt at byte 16: chunk length 16777217 is outside 1…16777216")
        // Exactly 16 MiB is allowed (here: the file just ends inside it).
        raw = RawTrace()
        raw.bytes += [0x00, 0x00, 0x00, 0x01, 0, 0, 0, 0]
        XCTAssertEqual(readError(raw.bytes)?.kind, .truncated)
    }

    func testVersions() throws {
        let bytes = try smallTrace()
        var b = bytes
        b[8] = 2
        let e = readError(b)
        XCTAssertEqual(e?.kind, .unsupportedVersion)
        XCTAssertEqual(e?.description, "t.trace: unsupported trace version at byte 8: format version 2.8; this heapgen reads version 1.x")
        b = bytes
        b[9] = 1 // major 257
        XCTAssertEqual(readError(b)?.kind, .unsupportedVersion)
        b = bytes
        b[8] = 0
        XCTAssertEqual(readError(b)?.kind, .unsupportedVersion)
        // A higher minor is accepted.
        b = bytes
        b[10] = 9
        XCTAssertEqual(try readAll(b), try readAll(bytes))
        XCTAssertEqual(try TraceReader(bytes: b).minorVersion, 9)
    }

    func testExtensionRecordsAreSkipped() throws {
        var raw = RawTrace(minor: 3)
        raw.chunk(Encode.process() + [0x7F] + Encode.varint(5) + [1, 2, 3, 4, 5] + [0x7F, 0] + Encode.end(events: 0))
        XCTAssertEqual(try readAll(raw.bytes).count, 2)
        raw = RawTrace()
        raw.chunk(Encode.process() + [0x7F] + Encode.varint(6) + [1, 2, 3, 4, 5])
        XCTAssertEqual(readError(raw.bytes)?.kind, .corrupt)
    }

    func testNotATrace() throws {
        let e = readError(Array("#!/bin/sh\necho hello, this is not a trace\n".utf8), name: "script.sh")
        XCTAssertEqual(e?.kind, .notATrace)
        XCTAssertEqual(e?.description, "script.sh: not a heapgen trace at byte 0: does not start with the heapgen trace magic \"HGTRACE\"")
        XCTAssertEqual(readError([0x7F, 0x45, 0x4C, 0x46, 2, 1, 1, 0] + Array(repeating: 0, count: 100))?.kind, .notATrace)
        XCTAssertEqual(readError(Array("HGTRACX\0".utf8) + Array(repeating: 0, count: 100))?.kind, .notATrace)
        XCTAssertEqual(readError([0x48])?.kind, .truncated, "a prefix of the magic is a truncated trace")
        XCTAssertEqual(readError([0x49])?.kind, .notATrace)
        XCTAssertEqual(readError([])?.kind, .truncated)

        let dir = try TemporaryDirectory()
        XCTAssertThrowsError(try TraceReader(path: dir.path("missing.trace"))) { error in
            XCTAssertEqual((error as? TraceError)?.kind, .io)
            XCTAssertTrue("\(error)".hasPrefix("\(dir.path("missing.trace")): I/O error: cannot open: No such file or directory"), "\(error)")
        }
        var dirReader: TraceReader?
        XCTAssertThrowsError(dirReader = try TraceReader(path: dir.url.path)) { error in
            XCTAssertEqual((error as? TraceError)?.kind, .io, "\(error)")
        }
        XCTAssertNil(dirReader)
    }

    func testStructuralRules() {
        func expectCorrupt(_ bytes: [UInt8], _ fragment: String, line: UInt = #line) {
            let e = readError(bytes, line: line)
            XCTAssertEqual(e?.kind, .corrupt, "\(String(describing: e))", line: line)
            XCTAssertTrue(e?.message.contains(fragment) ?? false, "\(String(describing: e)) lacks \(fragment)", line: line)
        }
        // Valid baseline.
        XCTAssertNoThrow(try readAll(singleChunkTrace(Encode.stack(id: 1, frames: [5]) + Encode.alloc(delta: 16, size: 1, stack: 1), events: 1)))

        expectCorrupt(singleChunkTrace(Encode.alloc(delta: 16, size: 1, stack: 1), events: 1), "stack 1, which is not defined")
        expectCorrupt(singleChunkTrace(Encode.alloc(delta: 16, size: 1, type: 3), events: 1), "type 3, which is not defined")
        expectCorrupt(singleChunkTrace(Encode.stack(id: 1, frames: [5]) + Encode.stack(id: 1, frames: [5]), events: 0), "defined twice")
        expectCorrupt(singleChunkTrace(Encode.stack(id: 0, frames: [5]), events: 0), "reserved")
        expectCorrupt(singleChunkTrace([0x11, 0, 0, 0], events: 0), "reserved")
        expectCorrupt(singleChunkTrace([0x11, 1, 0, 0, 0x11, 1, 0, 0], events: 0), "defined twice")
        expectCorrupt(singleChunkTrace(Encode.stack(id: 1, frames: []), events: 0), "no frames")
        expectCorrupt(singleChunkTrace(Encode.stack(id: 1, frames: Array(repeating: 1, count: 1025)), events: 0), "over the limit")
        expectCorrupt(singleChunkTrace(Encode.alloc(0, delta: 0, size: 0), events: 1), "unknown allocation function 0")
        expectCorrupt(singleChunkTrace(Encode.alloc(11, delta: 0, size: 0), events: 1), "unknown allocation function 11")
        expectCorrupt(singleChunkTrace(Encode.free(18, delta: 0), events: 1), "unknown free function 18")
        expectCorrupt(singleChunkTrace([0x14, 0, 3, 0], events: 1), "unknown mark origin 3")
        expectCorrupt(singleChunkTrace([0x08], events: 0), "unknown record tag 0x08")
        expectCorrupt(singleChunkTrace([0x00], events: 0), "unknown record tag 0x00")
        expectCorrupt(singleChunkTrace(Encode.free(delta: 0), events: 0), "end record counts 0 events but the file has 1")
        expectCorrupt(singleChunkTrace(Encode.process(), events: 0), "second process record")
        expectCorrupt(singleChunkTrace([0x15] + Encode.varint(1 << 32), events: 0), "does not fit in 32 bits")
        expectCorrupt(singleChunkTrace([0x16] + Array(repeating: 0xFF, count: 10) + [0x01], events: 0), "does not fit in 64 bits")
        expectCorrupt(singleChunkTrace([0x16] + Array(repeating: 0xFF, count: 9) + [0x02], events: 0), "does not fit in 64 bits")
        // A 10-byte varint with top byte 1 is UInt64.max: fine.
        XCTAssertNoThrow(try readAll(singleChunkTrace([0x16] + Array(repeating: 0xFF, count: 9) + [0x01], events: 0)))
        expectCorrupt(singleChunkTrace([0x11, 1, 0] + Encode.varint(65_537) + Array(repeating: 0x61, count: 65_537), events: 0), "over the limit of 65536")
        XCTAssertNoThrow(try readAll(singleChunkTrace([0x11, 1, 0] + Encode.varint(65_536) + Array(repeating: 0x61, count: 65_536), events: 0)))
        expectCorrupt(singleChunkTrace([0x11, 1, 0, 2, 0xC3, 0x28], events: 0), "not valid UTF-8")
        expectCorrupt(singleChunkTrace([0x11, 1, 0, 50, 0x41], events: 0), "bytes left in the chunk")
        expectCorrupt(singleChunkTrace([0x12, 0, 0, 0] + Encode.varint(65), events: 0), "segment count 65")

        // Record order.
        var raw = RawTrace()
        raw.chunk(Encode.free(delta: 0) + Encode.process() + Encode.end(events: 1))
        expectCorrupt(raw.bytes, "not process")
        raw = RawTrace()
        raw.chunk(Encode.process() + Encode.end(events: 0) + [0x15, 1])
        expectCorrupt(raw.bytes, "record after the end record")
        raw = RawTrace()
        raw.chunk(Encode.process() + Encode.end(events: 0))
        raw.chunk([0x15, 1])
        expectCorrupt(raw.bytes, "data after the chunk holding the end record")
        raw = RawTrace()
        raw.chunk(Encode.process() + Encode.end(events: 0))
        raw.bytes.append(0)
        expectCorrupt(raw.bytes, "data after the chunk holding the end record")
        // A record may not straddle chunks.
        raw = RawTrace()
        let stack = Encode.stack(id: 1, frames: [1, 2, 3])
        raw.chunk(Encode.process() + stack.prefix(3))
        raw.chunk(Array(stack.dropFirst(3)) + Encode.end(events: 0))
        expectCorrupt(raw.bytes, "frame count 3 is more than the 0 bytes left in the chunk")
        raw = RawTrace()
        raw.chunk(Encode.process() + [0x01, 0x01])
        raw.chunk([0x00, 0x00, 0x00, 0x00] + Encode.end(events: 1))
        expectCorrupt(raw.bytes, "past the end of its chunk")
        // Records over several chunks, delta base carried across.
        raw = RawTrace()
        raw.chunk(Encode.process() + Encode.alloc(delta: 100, size: 1))
        raw.chunk(Encode.free(delta: 0) + Encode.end(events: 2))
        XCTAssertEqual(try? readAll(raw.bytes)[2], .free(function: .free, address: 100))
        // Chunk with only the process record, no end: truncated, not corrupt.
        raw = RawTrace()
        raw.chunk(Encode.process())
        XCTAssertEqual(readError(raw.bytes)?.kind, .truncated)
        // Header only.
        XCTAssertEqual(readError(RawTrace().bytes)?.message, "no records (the collector was stopped or killed before it finished)")
    }

    func testErrorOffsetsPointAtTheProblem() {
        let records = Encode.alloc(delta: 16, size: 1, stack: 1)
        let bytes = singleChunkTrace(records, events: 1)
        let e = readError(bytes)
        // header 16 + chunk header 8 + process record + tag, function, delta, size → the stack field.
        let expected = 16 + 8 + Encode.process().count + 4
        XCTAssertEqual(e?.offset, UInt64(expected), "\(String(describing: e))")
        XCTAssertEqual(e?.description, "t.trace: corrupt at byte \(expected): alloc uses stack 1, which is not defined")
    }

    func testBodyErrorsPropagateUnchanged() throws {
        struct Stop: Error {}
        var reader = try TraceReader(bytes: try smallTrace())
        var count = 0
        XCTAssertThrowsError(try reader.forEach { _ in
            count += 1
            if count == 3 { throw Stop() }
        }) { XCTAssertTrue($0 is Stop) }
        XCTAssertEqual(count, 3)
    }
}
