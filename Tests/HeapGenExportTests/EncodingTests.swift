// The protobuf encoder, the gzip writer and CRC-32.

import Foundation
import HeapGenTestSupport
import HeapGenExport
import XCTest

final class ProtobufWriterTests: XCTestCase {
    func bytes(_ body: (inout ProtobufWriter) -> Void) -> [UInt8] {
        var w = ProtobufWriter()
        body(&w)
        return w.bytes
    }

    func testVarints() {
        XCTAssertEqual(bytes { $0.appendVarint(0) }, [0x00])
        XCTAssertEqual(bytes { $0.appendVarint(1) }, [0x01])
        XCTAssertEqual(bytes { $0.appendVarint(127) }, [0x7f])
        XCTAssertEqual(bytes { $0.appendVarint(128) }, [0x80, 0x01])
        XCTAssertEqual(bytes { $0.appendVarint(300) }, [0xac, 0x02])
        XCTAssertEqual(bytes { $0.appendVarint(UInt64.max) }, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])
    }

    func testScalarFields() {
        // The protobuf documentation's examples: field 1 = 150.
        XCTAssertEqual(bytes { $0.int64(1, 150) }, [0x08, 0x96, 0x01])
        // Negative int64: ten bytes, two's complement.
        XCTAssertEqual(bytes { $0.int64(2, -1) }, [0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])
        XCTAssertEqual(bytes { $0.bool(3, true) }, [0x18, 0x01])
        // proto3: zero is not written unless asked.
        XCTAssertEqual(bytes { $0.int64(1, 0); $0.uint64(2, 0); $0.bool(3, false); $0.string(4, "") }, [])
        XCTAssertEqual(bytes { $0.uint64(1, 0, always: true) }, [0x08, 0x00])
        // Large field numbers take a multi-byte key.
        XCTAssertEqual(bytes { $0.uint64(16, 1) }, [0x80, 0x01, 0x01])
    }

    func testLengthDelimited() {
        XCTAssertEqual(bytes { $0.string(2, "testing") }, [0x12, 0x07] + Array("testing".utf8))
        XCTAssertEqual(bytes { $0.string(6, "", always: true) }, [0x32, 0x00])
        XCTAssertEqual(bytes { $0.bytes(1, [1, 2, 3]) }, [0x0a, 0x03, 1, 2, 3])
        // Embedded message: field 3 { field 1 = 150 }.
        XCTAssertEqual(bytes { $0.message(3) { $0.int64(1, 150) } }, [0x1a, 0x03, 0x08, 0x96, 0x01])
        // An empty message is still there (a repeated element).
        XCTAssertEqual(bytes { $0.message(2) { _ in } }, [0x12, 0x00])
        // Packed repeated: field 4 = [3, 270, 86942].
        XCTAssertEqual(bytes { $0.packedUInt64(4, [3, 270, 86942]) }, [0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05])
        XCTAssertEqual(bytes { $0.packedInt64(4, []) }, [])
        XCTAssertEqual(bytes { $0.packedInt64(2, [-1]) }, [0x12, 0x0a] + [UInt8](repeating: 0xff, count: 9) + [0x01])
    }

    /// What the encoder writes decodes back with an independent decoder (below).
    func testRoundTripThroughDecoder() throws {
        let long = String(repeating: "x", count: 300)
        let encoded = bytes { w in
            w.uint64(1, 42)
            w.string(2, long)
            w.message(3) { $0.int64(1, -5); $0.packedUInt64(2, [1, 1 << 40]) }
        }
        let fields = try decode(encoded)
        XCTAssertEqual(fields.count, 3)
        XCTAssertEqual(fields[0].number, 1)
        XCTAssertEqual(fields[0].varint, 42)
        XCTAssertEqual(fields[1].bytes.map { String(decoding: $0, as: UTF8.self) }, long)
        let inner = try decode(try XCTUnwrap(fields[2].bytes))
        XCTAssertEqual(inner[0].varint.map { Int64(bitPattern: $0) }, -5)
        let packed = try XCTUnwrap(inner[1].bytes)
        var cursor = 0
        XCTAssertEqual(try readVarint(packed, &cursor), 1)
        XCTAssertEqual(try readVarint(packed, &cursor), 1 << 40)
        XCTAssertEqual(cursor, packed.count)
    }
}

/// A minimal protobuf decoder for the tests (varint and length-delimited fields only).
struct DecodedField {
    var number: Int
    var varint: UInt64?
    var bytes: [UInt8]?
}

func readVarint(_ data: [UInt8], _ i: inout Int) throws -> UInt64 {
    var value: UInt64 = 0, shift: UInt64 = 0
    while true {
        guard i < data.count, shift < 64 else { throw TestSupportError("bad varint") }
        let b = data[i]
        i += 1
        value |= UInt64(b & 0x7f) << shift
        if b < 0x80 { return value }
        shift += 7
    }
}

func decode(_ data: [UInt8]) throws -> [DecodedField] {
    var i = 0
    var out: [DecodedField] = []
    while i < data.count {
        let key = try readVarint(data, &i)
        switch key & 7 {
        case 0: out.append(DecodedField(number: Int(key >> 3), varint: try readVarint(data, &i)))
        case 2:
            let n = Int(try readVarint(data, &i))
            guard i + n <= data.count else { throw TestSupportError("truncated field") }
            out.append(DecodedField(number: Int(key >> 3), bytes: Array(data[i..<(i + n)])))
            i += n
        default: throw TestSupportError("unexpected wire type \(key & 7)")
        }
    }
    return out
}

final class GzipTests: XCTestCase {
    func testCRC32CheckValue() {
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8)), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum([]), 0)
        XCTAssertEqual(CRC32.checksum(Array("The quick brown fox jumps over the lazy dog".utf8)), 0x414F_A339)
    }

    func testLayoutOfASmallStream() {
        let out = Gzip.wrap(Array("hi".utf8))
        // Header: magic, deflate; trailer: CRC-32 of "hi", then its size.
        XCTAssertEqual(Array(out.prefix(3)), [0x1f, 0x8b, 8])
        let crc = CRC32.checksum(Array("hi".utf8))
        XCTAssertEqual(Array(out.suffix(8)), [UInt8(crc & 0xff), UInt8((crc >> 8) & 0xff), UInt8((crc >> 16) & 0xff),
                                              UInt8(crc >> 24), 2, 0, 0, 0])
    }

    /// Real deflate, not stored blocks: 64 KiB of one byte is a few hundred bytes at most.
    func testRepetitiveDataIsCompressed() {
        let out = Gzip.wrap([UInt8](repeating: 7, count: 65_536))
        XCTAssertLessThan(out.count, 300, "\(out.count) bytes")
    }

    /// `gzip -dc` reads back exactly what went in: empty, small, one full block, several blocks.
    func testGzipDecompressesWhatWasWritten() throws {
        let gzip = try tool("gzip", hint: "install gzip")
        var random = SystemRandomNumberGenerator()
        let inputs: [[UInt8]] = [
            [],
            Array("hello, pprof\n".utf8),
            [UInt8](repeating: 0xab, count: 65_535),
            [UInt8](repeating: 7, count: 65_536),
            (0..<200_000).map { _ in UInt8.random(in: 0...255, using: &random) },
        ]
        for input in inputs {
            let result = try runProcess(gzip, ["-dc"], stdin: Data(Gzip.wrap(input)))
            XCTAssertEqual(result.status, 0, result.transcript)
            XCTAssertEqual([UInt8](result.stdout), input, "\(input.count) bytes")
            let test = try runProcess(gzip, ["-t"], stdin: Data(Gzip.wrap(input)))
            XCTAssertEqual(test.status, 0, "gzip -t: CRC and size check, \(input.count) bytes:\n\(test.transcript)")
        }
    }
}
