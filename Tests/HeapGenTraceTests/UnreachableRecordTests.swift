// The `unreachable` record (0x17): round trip, splitting, and the reader's checks.

import Foundation
@testable import HeapGenTrace
import XCTest

final class UnreachableRecordTests: XCTestCase {
    private func path() -> String {
        NSTemporaryDirectory() + "/heapgen-unreachable-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).trace"
    }

    private func process() -> ProcessRecord {
        ProcessRecord(pid: 42, ppid: 1, origin: .root, executable: "/bin/x", arguments: ["x"], startUnixNanoseconds: 7)
    }

    /// Writes a trace with two allocations and `unreachable` records for `addresses`.
    private func write(_ addresses: [UInt64]) throws -> String {
        let file = path()
        let w = try TraceWriter(path: file, process: process())
        w.appendAllocation(.malloc, address: 0x5000, size: 64, stack: 0, type: 0)
        w.appendAllocation(.malloc, address: 0x4000, size: 32, stack: 0, type: 0)
        w.unreachable(addresses)
        w.appendFree(.free, address: 0x4000)
        var end = EndRecord(reason: .exited, status: 0)
        end.eventCount = 3
        try w.finish(end)
        return file
    }

    private func records(_ file: String) throws -> [TraceRecord] {
        var reader = try TraceReader(path: file, strict: true)
        var out: [TraceRecord] = []
        try reader.forEach { out.append($0) }
        return out
    }

    func testRoundTripSortsAndKeepsEventDeltasApart() throws {
        let file = try write([0x5000, 0x4000, UInt64.max - 15, 0x10])
        defer { unlink(file) }
        let all = try records(file)
        XCTAssertEqual(all.count, 6)
        XCTAssertEqual(all[3], .unreachable([0x10, 0x4000, 0x5000, UInt64.max - 15]))
        // The event after it is still delta-encoded against the previous event.
        XCTAssertEqual(all[4], .free(function: .free, address: 0x4000))
        var reader = try TraceReader(path: file)
        XCTAssertGreaterThanOrEqual(reader.minorVersion, 3)   // minor 3: symbols records
        try reader.forEach { _ in }
    }

    func testEmptyListIsOneEmptyRecordAndLongListsAreSplit() throws {
        let none = try write([])
        defer { unlink(none) }
        XCTAssertEqual(try records(none)[3], .unreachable([]), "a scan that found nothing says so")

        let many = (0..<UInt64(TraceFormat.maxUnreachable + 10)).map { 0x10_0000 + $0 * 16 }
        let file = try write(many.reversed())
        defer { unlink(file) }
        let lists: [[UInt64]] = try records(file).compactMap { if case .unreachable(let a) = $0 { return a } else { return nil } }
        XCTAssertEqual(lists.map(\.count), [TraceFormat.maxUnreachable, 10])
        XCTAssertEqual(lists.flatMap { $0 }, many)
    }

    func testTruncationAndCorruptionAreRejected() throws {
        let file = try write([0x4000, 0x5000, 0x6000])
        defer { unlink(file) }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        // Cut anywhere after the header: truncated (or corrupt), never accepted.
        for cut in stride(from: 16, to: bytes.count, by: 1) {
            let damaged = path()
            defer { unlink(damaged) }
            try bytes.prefix(cut).write(to: URL(fileURLWithPath: damaged))
            XCTAssertThrowsError(try records(damaged), "cut at \(cut)")
        }
        // Flip each payload byte: the CRC catches it.
        for offset in 24..<bytes.count {
            var flipped = bytes
            flipped[offset] ^= 0x40
            let damaged = path()
            defer { unlink(damaged) }
            try flipped.write(to: URL(fileURLWithPath: damaged))
            XCTAssertThrowsError(try records(damaged), "flipped byte \(offset)")
        }
    }

    func testBadPayloadsAreCorrupt() throws {
        // A count over the limit, and a count larger than what follows.
        for payload: [UInt8] in [[0x17, 0x81, 0x80, 0x08], [0x17, 0x05, 0x02]] {
            let file = path()
            defer { unlink(file) }
            try rawTrace(payload).write(to: URL(fileURLWithPath: file))
            XCTAssertThrowsError(try records(file)) { error in
                XCTAssertTrue("\(error)".contains("unreachable") || "\(error)".contains("chunk"), "\(error)")
            }
        }
    }

    /// A header, one chunk with a process record and `payload`, and no end record.
    private func rawTrace(_ payload: [UInt8]) -> Data {
        var chunk: [UInt8] = [0x20, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00]   // process: pid 2, ppid 0, root, "", no args, start 0
        chunk += payload
        var data = Data(TraceFormat.magic)
        data += [1, 0, 1, 0, 0, 0, 0, 0]
        var length = UInt32(chunk.count).littleEndian
        var crc = CRC32C.checksum(chunk).littleEndian
        data += withUnsafeBytes(of: &length) { Data($0) }
        data += withUnsafeBytes(of: &crc) { Data($0) }
        data += chunk
        return data
    }
}
