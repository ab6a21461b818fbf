// The `symbols` record (0x19, minor version 3): writing, appending to a finished trace,
// reading without the events, and the reader's placement rules.

import Foundation
@testable import HeapGenTrace
import XCTest

final class SymbolsRecordTests: XCTestCase {
    private let exe = SymbolsRecord(loadBias: 0x5555_0000_0000, path: "/bin/app", buildID: [1, 2, 3, 4], entries: [
        .init(offset: 0x1190, frames: [StoredFrame(function: "inlined_helper", shortFunction: "inlined_helper",
                                                   file: "/src/a.c", line: 12, column: 5),
                                       StoredFrame(function: "Demo.Model.init(name: Swift.String) -> Demo.Model",
                                                   shortFunction: "Model.init(name:)", file: "/src/a.swift", line: 40)]),
        .init(offset: 0x2000, frames: [StoredFrame(function: "main", shortFunction: "main", file: "/src/a.c", line: 99)]),
        .init(offset: 0x2004, frames: [StoredFrame(function: nil, shortFunction: nil, file: "/src/b.c", line: nil, column: nil)]),
    ])
    private let lib = SymbolsRecord(loadBias: 0x7f00_0000_0000, path: "/lib/libx.so", buildID: [], entries: [
        .init(offset: 0x10, frames: [StoredFrame(function: "x_alloc", shortFunction: "x_alloc")]),
    ])

    /// Writes two allocations and a stack, then (optionally) symbols, then the end.
    private func trace(symbols: [SymbolsRecord]) throws -> (dir: TemporaryDirectory, path: String) {
        let dir = try TemporaryDirectory()
        let path = dir.path("s.trace")
        let w = try TraceWriter(path: path, process: sampleProcess)
        w.defineStack(id: 1, frames: [0x5555_0000_1190, 0x5555_0000_2000])
        w.appendAllocation(.malloc, address: 0x1000, size: 16, stack: 1, type: 0)
        w.appendAllocation(.malloc, address: 0x2000, size: 32, stack: 1, type: 0)
        for s in symbols { w.appendSymbols(s) }
        try w.finish(EndRecord(reason: .exited))
        return (dir, path)
    }

    func testWrittenSymbolsReadBackWithoutChangingTheEvents() throws {
        let (dir, path) = try trace(symbols: [exe, lib])
        _ = dir
        var reader = try TraceReader(path: path, strict: true)
        XCTAssertGreaterThanOrEqual(reader.minorVersion, 3)
        var records: [TraceRecord] = []
        try reader.forEach { records.append($0) }
        XCTAssertEqual(records.count, 5, "process, stack, 2 allocs, end: symbols are not delivered: \(records)")
        guard case let .end(end)? = records.last else { return XCTFail("no end") }
        XCTAssertEqual(end.eventCount, 2)
        XCTAssertEqual(try reader.storedSymbols(), [exe, lib])
    }

    func testAppenderAddsSymbolsToAFinishedTrace() throws {
        let (dir, path) = try trace(symbols: [])
        _ = dir
        let plain = try Data(contentsOf: URL(fileURLWithPath: path))
        XCTAssertEqual(try TraceReader(path: path).storedSymbols(), [])
        let size = try TraceSymbolAppender.append([exe, lib], to: path)
        let amended = try Data(contentsOf: URL(fileURLWithPath: path))
        XCTAssertEqual(UInt64(amended.count), size)
        XCTAssertGreaterThan(amended.count, plain.count)
        // Everything before the end chunk is unchanged; the file ends with the same end chunk.
        let endChunk = 8 + 12   // the end record of this trace (with stacksLost) in a chunk of its own
        XCTAssertEqual(amended.prefix(plain.count - endChunk), plain.prefix(plain.count - endChunk))
        XCTAssertEqual(amended.suffix(endChunk), plain.suffix(endChunk))
        var reader = try TraceReader(path: path, strict: true)
        var events = 0
        try reader.forEach { if case .allocation = $0 { events += 1 } }
        XCTAssertEqual(events, 2)
        XCTAssertEqual(try reader.storedSymbols(), [exe, lib])
        // The end chunk stays alone: more symbols can follow later.
        try TraceSymbolAppender.append([lib], to: path)
        XCTAssertEqual(try TraceReader(path: path).storedSymbols(), [exe, lib, lib])
        var again = try TraceReader(path: path, strict: true)
        try again.validate()
        // A trace whose last chunk is not a lone end record (an older writer's) is left alone.
        var old = RawTrace(minor: 2)
        old.chunk(Encode.process() + Encode.alloc(delta: 0x10, size: 1) + Encode.end(events: 1))
        let oldPath = dir.path("old.trace")
        try Data(old.bytes).write(to: URL(fileURLWithPath: oldPath))
        XCTAssertThrowsError(try TraceSymbolAppender.append([lib], to: oldPath)) {
            XCTAssertTrue("\($0)".contains("not an end record of its own"), "\($0)")
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: oldPath)), Data(old.bytes))
    }

    func testLongListsAreSplitIntoRecords() throws {
        var big = lib
        big.entries = (0..<70_000).map { SymbolsRecord.Entry(offset: UInt64($0) * 4 + 4, frames: [StoredFrame(function: "f\($0 % 300)", shortFunction: "f\($0 % 300)", line: $0 % 1000 + 1)]) }
        XCTAssertEqual(TraceWriter.symbolRecords(big).count, 2)
        let (dir, path) = try trace(symbols: [big])
        _ = dir
        let back = try TraceReader(path: path).storedSymbols()
        XCTAssertEqual(back.count, 2)
        XCTAssertEqual(back.flatMap(\.entries), big.entries)
        var reader = try TraceReader(path: path, strict: true)
        try reader.validate()
    }

    func testReaderRejectsRecordsAfterSymbolsAndSymbolsInsideAChunk() throws {
        let symbols = exe.encoded()
        // A symbols record after an alloc in the same chunk.
        var a = RawTrace()
        a.chunk(Encode.process() + Encode.alloc(delta: 0x10, size: 1) + symbols + Encode.end(events: 1))
        XCTAssertThrowsError(try readAll(a.bytes)) { XCTAssertTrue("\($0)".contains("does not start its chunk"), "\($0)") }
        // An alloc after the symbols records.
        var b = RawTrace()
        b.chunk(Encode.process())
        b.chunk(symbols)
        b.chunk(Encode.alloc(delta: 0x10, size: 1) + Encode.end(events: 1))
        XCTAssertThrowsError(try readAll(b.bytes)) { XCTAssertTrue("\($0)".contains("after the symbols records"), "\($0)") }
        // Symbols then end in one chunk: fine.
        var c = RawTrace()
        c.chunk(Encode.process() + Encode.alloc(delta: 0x10, size: 1))
        c.chunk(symbols + Encode.end(events: 1))
        XCTAssertEqual(try readAll(c.bytes).count, 3)
        XCTAssertEqual(try TraceReader(bytes: c.bytes).storedSymbols(), [exe])
        // A string index past the table.
        var bad = symbols
        bad[bad.count - 5] = 0x7F   // the last frame's function index
        var d = RawTrace()
        d.chunk(Encode.process())
        d.chunk(bad + Encode.end(events: 0))
        XCTAssertThrowsError(try readAll(d.bytes))
    }
}
