import Foundation
import XCTest
@testable import HeapGenTrace
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

final class WriterTests: XCTestCase {
    func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    func testFileIsOwnerOnlyAndTruncated() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("a.trace")
        try Data(repeating: 0x55, count: 1_000_000).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
        let writer = try TraceWriter(path: path, process: sampleProcess)
        XCTAssertEqual(try mode(path), 0o600)
        try writer.finish(EndRecord(reason: .exited))
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        XCTAssertEqual(UInt64(bytes.count), writer.bytesWritten)
        XCTAssertEqual(try readAll(bytes).count, 2)
    }

    func testRefusesSymlink() throws {
        let dir = try TemporaryDirectory()
        let target = dir.path("target")
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: target))
        let link = dir.path("link.trace")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        XCTAssertThrowsError(try TraceWriter(path: link, process: sampleProcess)) { error in
            XCTAssertEqual((error as? TraceError)?.kind, .io)
            XCTAssertTrue("\(error)".hasPrefix("\(link): I/O error: cannot create trace: "), "\(error)")
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: target)), Data([1, 2, 3]))
        XCTAssertThrowsError(try TraceWriter(path: dir.path("no/such/dir.trace"), process: sampleProcess))
    }

    func testHeaderAndProcessAreOnDiskAfterInit() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("b.trace")
        let writer = try TraceWriter(path: path, process: sampleProcess)
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        XCTAssertEqual(Array(bytes.prefix(16)), Array("HGTRACE".utf8) + [0, 1, 0, 8, 0, 0, 0, 0, 0]) // 1.8: `recordingWarning` (1.7: vector registers in root edges; 1.6: column chunks; 1.5: compressed chunks, compact events, `aggregate`; 1.4: `referenceGraph`; 1.3: `symbols`; 1.2: `inherited`, `stackTruncated`, end reason `corrupt`, `stacksLost`)
        XCTAssertEqual(UInt64(bytes.count), writer.bytesWritten)
        var records: [TraceRecord] = []
        XCTAssertThrowsError(try readAll(bytes)) { XCTAssertEqual(($0 as? TraceError)?.kind, .truncated) }
        var reader = try TraceReader(bytes: bytes, strict: true)
        try? reader.forEach { records.append($0) }
        XCTAssertEqual(records, [.process(sampleProcess)])
        try writer.finish(EndRecord(reason: .exited))
    }

    func testChunkingAndMarkFlush() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("c.trace")
        // Plain chunks (CompressionTests has compressed ones).
        let writer = try TraceWriter(path: path, process: sampleProcess, compressionLevel: nil)
        let start = writer.bytesWritten
        writer.appendAllocation(.malloc, address: 1, size: 1, stack: 0, type: 0)
        XCTAssertEqual(writer.bytesWritten, start, "small records stay in the chunk")
        XCTAssertGreaterThan(writer.pendingBytes, 0)
        writer.mark(label: "x", timeNanoseconds: 1, origin: .external)
        XCTAssertEqual(writer.pendingBytes, 0, "mark flushes")
        XCTAssertGreaterThan(writer.bytesWritten, start)
        for i in 0..<100_000 { writer.appendFree(.free, address: UInt64(i) &* 0x1_0000_0001) }
        XCTAssertLessThan(writer.pendingBytes, 65_536)
        try writer.finish(EndRecord(reason: .exited, eventCount: 12345))
        XCTAssertEqual(writer.eventCount, 100_002)
        // Every chunk holds at most 64 KiB + one record (events: a column chunk, its streams
        // stored plain; its u32 prefix states their length).
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        var o = 16
        var chunks = 0
        while o < bytes.count {
            let word = Int(bytes[o]) | Int(bytes[o + 1]) << 8 | Int(bytes[o + 2]) << 16 | Int(bytes[o + 3]) << 24
            let n = word & 0x7FFF_FFFF
            let plain = word == n ? n
                : (Int(bytes[o + 8]) | Int(bytes[o + 9]) << 8 | Int(bytes[o + 10]) << 16 | Int(bytes[o + 11] & 0x7F) << 24)
            XCTAssertLessThanOrEqual(plain, 65_536 + 32)
            o += 8 + n
            chunks += 1
        }
        XCTAssertEqual(o, bytes.count)
        XCTAssertGreaterThan(chunks, 5)
        guard case .end(let end)? = try readAll(bytes).last else { return XCTFail("no end") }
        XCTAssertEqual(end.eventCount, 100_002, "the writer's own count replaces the caller's")
    }

    func testFinishTwiceAndAppendsAfterFinish() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("d.trace")
        let writer = try TraceWriter(path: path, process: sampleProcess)
        try writer.finish(EndRecord(reason: .collectorStopped))
        let size = writer.bytesWritten
        writer.appendAllocation(.malloc, address: 1, size: 1, stack: 0, type: 0)
        writer.mark(label: "late", timeNanoseconds: 0, origin: .timer)
        XCTAssertThrowsError(try writer.finish(EndRecord(reason: .exited)))
        XCTAssertEqual(writer.bytesWritten, size)
        XCTAssertNil(writer.failure)
        XCTAssertEqual(try readAll(try Array(Data(contentsOf: URL(fileURLWithPath: path)))).count, 2)
    }

    func testUnfinishedWriterLeavesATruncatedTrace() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("e.trace")
        do {
            let writer = try TraceWriter(path: path, process: sampleProcess)
            writer.appendAllocation(.malloc, address: 1, size: 1, stack: 0, type: 0)
        }
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        var reader = try TraceReader(bytes: bytes, strict: true)
        var records: [TraceRecord] = []
        XCTAssertThrowsError(try reader.forEach { records.append($0) }) {
            XCTAssertEqual(($0 as? TraceError)?.kind, .truncated)
        }
        XCTAssertEqual(records.count, 2, "deinit flushed the pending chunk")
    }

    func testWriteFailureIsRecordedAndLaterAppendsDropped() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("f.trace")
        let writer = try TraceWriter(path: path, process: sampleProcess, compressionLevel: nil)
        // Make the disk "full": point the writer's descriptor at /dev/full.
        let full = open("/dev/full", O_WRONLY)
        try XCTSkipIf(full < 0, "no /dev/full")
        XCTAssertEqual(dup2(full, writer.fd), writer.fd)
        close(full)
        let before = writer.bytesWritten
        for i in 0..<20_000 { writer.appendAllocation(.malloc, address: UInt64(i), size: 1, stack: 0, type: 0) }
        XCTAssertNotNil(writer.failure)
        XCTAssertEqual(writer.failure?.kind, .io)
        XCTAssertTrue(writer.failure?.description.contains("No space left on device") ?? false, "\(String(describing: writer.failure))")
        XCTAssertEqual(writer.failure?.offset, before)
        XCTAssertEqual(writer.bytesWritten, before)
        let events = writer.eventCount
        writer.appendFree(.free, address: 1)
        XCTAssertEqual(writer.eventCount, events, "dropped after the failure")
        XCTAssertThrowsError(try writer.flush())
        XCTAssertThrowsError(try writer.finish(EndRecord(reason: .exited))) {
            XCTAssertEqual(($0 as? TraceError)?.kind, .io)
        }
    }

    func testLargeProcessRecordFitsInAChunk() throws {
        // 300 arguments of 64 KiB + 1 would be 19 MiB: the writer keeps what fits in 8 MiB.
        let argument = String(repeating: "x", count: 65_537)
        var process = sampleProcess
        process.arguments = Array(repeating: argument, count: 300)
        let bytes = try writeTrace(process: process) { _ in }
        guard case .process(let read)? = try readAll(bytes).first else { return XCTFail() }
        XCTAssertGreaterThan(read.arguments.count, 100)
        XCTAssertLessThan(read.arguments.count, 300)
        XCTAssertTrue(read.arguments.allSatisfy { $0.utf8.count == 65_536 })
        // 70,000 tiny arguments: capped at 65,536.
        process.arguments = Array(repeating: "a", count: 70_000)
        guard case .process(let many)? = try readAll(try writeTrace(process: process) { _ in }).first else { return XCTFail() }
        XCTAssertEqual(many.arguments.count, 65_536)
    }
}
