import Foundation
import XCTest
@testable import HeapGenTrace

/// A scratch directory removed at the end of the test.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("heapgen-trace-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }
}

let sampleProcess = ProcessRecord(pid: 4242, ppid: 1, origin: .root, executable: "/usr/bin/app",
                                  arguments: ["app", "--flag", "ünïcødé 🚀"], startUnixNanoseconds: 1_700_000_000_123_456_789)

/// Writes a trace to a temporary file with `body` and returns its bytes.
func writeTrace(process: ProcessRecord = sampleProcess, end: EndRecord = EndRecord(reason: .exited),
                _ body: (TraceWriter) throws -> Void) throws -> [UInt8] {
    let dir = try TemporaryDirectory()
    let path = dir.path("t.trace")
    let writer = try TraceWriter(path: path, process: process)
    try body(writer)
    try writer.finish(end)
    return try Array(Data(contentsOf: URL(fileURLWithPath: path)))
}

/// Reads all records of an in-memory trace (strictly by default: a trace cut short is an
/// error, not salvaged; see SalvageTests for salvage).
func readAll(_ bytes: [UInt8], name: String = "t.trace", strict: Bool = true) throws -> [TraceRecord] {
    var reader = try TraceReader(bytes: bytes, name: name, strict: strict)
    var records: [TraceRecord] = []
    try reader.forEach { records.append($0) }
    return records
}

/// The TraceError thrown by reading `bytes` fully, or nil if it reads fine.
/// Fails the test if anything other than a TraceError is thrown.
func readError(_ bytes: [UInt8], name: String = "t.trace", strict: Bool = true,
               file: StaticString = #filePath, line: UInt = #line) -> TraceError? {
    do {
        _ = try readAll(bytes, name: name, strict: strict)
        return nil
    } catch let error as TraceError {
        return error
    } catch {
        XCTFail("unexpected error type \(type(of: error)): \(error)", file: file, line: line)
        return nil
    }
}

/// Builds raw traces byte by byte, for inputs the writer would never produce.
struct RawTrace {
    var bytes: [UInt8]

    init(major: UInt16 = 1, minor: UInt16 = 0, flags: UInt32 = 0) {
        bytes = Array("HGTRACE".utf8) + [0]
        bytes += [UInt8(major & 0xFF), UInt8(major >> 8), UInt8(minor & 0xFF), UInt8(minor >> 8)]
        bytes += [UInt8(flags & 0xFF), UInt8((flags >> 8) & 0xFF), UInt8((flags >> 16) & 0xFF), UInt8(flags >> 24)]
    }

    /// Appends a chunk with a correct CRC (or `crc` if given).
    mutating func chunk(_ payload: [UInt8], crc: UInt32? = nil) {
        let n = UInt32(payload.count)
        let c = crc ?? CRC32C.checksum(payload)
        bytes += [UInt8(n & 0xFF), UInt8((n >> 8) & 0xFF), UInt8((n >> 16) & 0xFF), UInt8(n >> 24)]
        bytes += [UInt8(c & 0xFF), UInt8((c >> 8) & 0xFF), UInt8((c >> 16) & 0xFF), UInt8(c >> 24)]
        bytes += payload
    }

    /// Appends a compressed chunk (bit 31 of the length word) holding `stored` as is
    /// (u32 decompressed length, then zstd frames), with a correct CRC.
    mutating func compressedChunk(_ stored: [UInt8]) {
        let n = UInt32(stored.count) | 1 << 31
        let c = CRC32C.checksum(stored)
        bytes += [UInt8(n & 0xFF), UInt8((n >> 8) & 0xFF), UInt8((n >> 16) & 0xFF), UInt8(n >> 24)]
        bytes += [UInt8(c & 0xFF), UInt8((c >> 8) & 0xFF), UInt8((c >> 16) & 0xFF), UInt8(c >> 24)]
        bytes += stored
    }
}

/// Payload encoders for hand-made records.
enum Encode {
    static func varint(_ v: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        var v = v
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
        return out
    }

    static func svarint(_ delta: Int64) -> [UInt8] {
        varint(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)))
    }

    static func string(_ s: String) -> [UInt8] {
        varint(UInt64(s.utf8.count)) + Array(s.utf8)
    }

    static func process(pid: UInt64 = 7, arguments: [String] = ["a"]) -> [UInt8] {
        var r: [UInt8] = [0x20] + varint(pid) + varint(1) + [0] + string("/bin/a")
        r += varint(UInt64(arguments.count))
        for a in arguments { r += string(a) }
        return r + varint(99)
    }

    static func end(events: UInt64) -> [UInt8] {
        [0x21, 0] + varint(0) + Array(repeating: 0, count: 7) + varint(events)
    }

    static func alloc(_ function: UInt8 = 1, delta: Int64, size: UInt64, stack: UInt64 = 0, type: UInt64 = 0) -> [UInt8] {
        [0x01, function] + svarint(delta) + varint(size) + varint(stack) + varint(type)
    }

    static func free(_ function: UInt8 = 16, delta: Int64) -> [UInt8] {
        [0x02, function] + svarint(delta)
    }

    static func stack(id: UInt64, frames: [Int64]) -> [UInt8] {
        [0x10] + varint(id) + varint(UInt64(frames.count)) + frames.flatMap { svarint($0) }
    }
}

/// A single-chunk trace: process, `records`, end (with `events` events).
func singleChunkTrace(_ records: [UInt8], events: UInt64) -> [UInt8] {
    var raw = RawTrace()
    raw.chunk(Encode.process() + records + Encode.end(events: events))
    return raw.bytes
}

/// A small valid trace with every record type (seed for validation and fuzzing).
func smallTrace() throws -> [UInt8] {
    try writeTrace { w in
        w.threadStart(tid: 1)
        w.moduleLoad(ModuleRecord(loadBias: 0x1000, path: "/lib/x.so", buildID: [1, 2, 3], segments: [.init(vaddr: 0, memsz: 64, flags: 5)]))
        w.defineStack(id: 1, frames: [0x1000, 0x2000])
        w.defineType(id: 1, metadata: 0x99, name: "T")
        w.appendAllocation(.malloc, address: 0x10, size: 8, stack: 1, type: 1)
        w.mark(label: "m", timeNanoseconds: 5, origin: .timer)
        w.appendFree(.realloc, address: 0x10)
        w.appendReallocUndo(address: 0x10)
        w.appendFree(.free, address: 0x10)
        w.lost(count: 2)
        w.moduleUnload(loadBias: 0x1000)
    }
}

/// The bytes of a trace of ``sampleProcess`` written with zstd `level` (nil: plain) by
/// `body`, finished with `end`.
func traceBytes(level: Int32?, end: EndRecord, _ body: (TraceWriter) throws -> Void) throws -> [UInt8] {
    let dir = try TemporaryDirectory()
    let path = dir.path("c.trace")
    let writer = try TraceWriter(path: path, process: sampleProcess, compressionLevel: level)
    try body(writer)
    try writer.finish(end)
    return try Array(Data(contentsOf: URL(fileURLWithPath: path)))
}
