import HeapGenTestSupport
import XCTest
@testable import HeapGenTrace

final class RoundTripTests: XCTestCase {
    func testEveryRecordTypeRoundTrips() throws {
        let module = ModuleRecord(loadBias: 0x7F00_1234_0000, path: "/usr/lib/libfoo.so.1",
                                  buildID: [0xDE, 0xAD, 0xBE, 0xEF, 0x01],
                                  segments: [.init(vaddr: 0, memsz: 0x1000, flags: 5), .init(vaddr: 0x2000, memsz: 0x800, flags: 6)])
        let end = EndRecord(reason: .signaled, status: 11, producerWaits: 1, producerWaitNanoseconds: 2, lostEvents: 3,
                            tornEvents: 4, arenaFull: 5, freeNullCalls: 6, unwindFallbacks: 7, eventCount: 0)
        let bytes = try writeTrace(end: end) { w in
            w.threadStart(tid: 100)
            w.moduleLoad(module)
            w.defineStack(id: 1, frames: [0x401000, 0x7F00_1234_5678, 0x401000])
            w.defineType(id: 9, metadata: 0x5555_0000, name: "MyApp.Node<Swift.Int>")
            w.appendAllocation(.malloc, address: 0x5000_0010, size: 24, stack: 1, type: 9)
            w.appendAllocation(.calloc, address: 0x5000_0000, size: 0, stack: 0, type: 0)
            w.appendFree(.realloc, address: 0x5000_0010)
            w.appendReallocUndo(address: 0x5000_0010)
            w.mark(label: "gen 1", timeNanoseconds: 123_456, origin: .program)
            w.lost(count: 17)
            w.appendFree(.free, address: 0x5000_0000)
            w.moduleUnload(loadBias: 0x7F00_1234_0000)
            XCTAssertEqual(w.eventCount, 6)
        }
        var expectedEnd = end
        expectedEnd.eventCount = 6
        let expected: [TraceRecord] = [
            .process(sampleProcess),
            .threadStart(tid: 100),
            .moduleLoad(module),
            .stack(id: 1, frames: [0x401000, 0x7F00_1234_5678, 0x401000]),
            .type(id: 9, metadata: 0x5555_0000, name: "MyApp.Node<Swift.Int>"),
            .allocation(function: .malloc, address: 0x5000_0010, size: 24, stack: 1, type: 9),
            .allocation(function: .calloc, address: 0x5000_0000, size: 0, stack: 0, type: 0),
            .free(function: .realloc, address: 0x5000_0010),
            .reallocUndo(address: 0x5000_0010),
            .mark(label: "gen 1", timeNanoseconds: 123_456, origin: .program),
            .lost(count: 17),
            .free(function: .free, address: 0x5000_0000),
            .moduleUnload(loadBias: 0x7F00_1234_0000),
            .end(expectedEnd),
        ]
        XCTAssertEqual(try readAll(bytes), expected)
    }

    func testEveryFunctionAndEnumValueRoundTrips() throws {
        let bytes = try writeTrace { w in
            for (i, f) in AllocationFunction.allCases.enumerated() {
                w.appendAllocation(f, address: UInt64(i) * 16, size: UInt64(i), stack: 0, type: 0)
            }
            for f in FreeFunction.allCases { w.appendFree(f, address: 0) }
            for o in MarkOrigin.allCases { w.mark(label: "\(o)", timeNanoseconds: 1, origin: o) }
        }
        let records = try readAll(bytes)
        XCTAssertEqual(records.count, 1 + 10 + 2 + 3 + 1)
        XCTAssertEqual(records[9], .allocation(function: .pvalloc, address: 128, size: 8, stack: 0, type: 0))
        XCTAssertEqual(records[10], .allocation(function: .inherited, address: 144, size: 9, stack: 0, type: 0))
        XCTAssertEqual(records[15], .mark(label: "external", timeNanoseconds: 1, origin: .external))
        for origin in ProcessOrigin.allCases {
            var p = sampleProcess
            p.origin = origin
            XCTAssertEqual(try readAll(try writeTrace(process: p) { _ in }).first, .process(p))
        }
        for reason in EndReason.allCases {
            let end = EndRecord(reason: reason, status: -1)
            XCTAssertEqual(try readAll(try writeTrace(end: end) { _ in }).last, .end(end))
        }
    }

    func testNamesOfFunctions() {
        XCTAssertEqual(AllocationFunction.allCases.map(\.name),
                       ["malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc", "inherited"])
        XCTAssertEqual(FreeFunction.allCases.map(\.name), ["free", "realloc"])
    }

    func testBoundaryValues() throws {
        let frames: [UInt64] = (0..<1024).map { (i: Int) -> UInt64 in
            switch i % 3 {
            case 0: return UInt64.max
            case 1: return 0
            default: return UInt64(i) << 40
            }
        }
        let process = ProcessRecord(pid: .min, ppid: .max, origin: .fork, executable: "", arguments: ["", ""],
                                    startUnixNanoseconds: .max)
        let end = EndRecord(reason: .exited, status: .min, producerWaits: .max, producerWaitNanoseconds: .max, lostEvents: .max,
                            tornEvents: .max, arenaFull: .max, freeNullCalls: .max, unwindFallbacks: .max)
        let module = ModuleRecord(loadBias: .max, path: "", buildID: [], segments: [])
        let bytes = try writeTrace(process: process, end: end) { w in
            w.defineStack(id: .max, frames: frames)
            w.defineType(id: .max, metadata: .max, name: "")
            w.appendAllocation(.malloc, address: .max, size: 0, stack: .max, type: .max)
            w.appendAllocation(.malloc, address: 0, size: .max, stack: 0, type: 0)
            w.appendAllocation(.malloc, address: .max, size: .max, stack: 0, type: 0)
            w.appendFree(.free, address: 1 << 63)
            w.appendReallocUndo(address: (1 << 63) - 1)
            w.moduleLoad(module)
            w.moduleUnload(loadBias: 0)
            w.threadStart(tid: .max)
            w.lost(count: .max)
            w.mark(label: "", timeNanoseconds: .max, origin: .timer)
        }
        var expectedEnd = end
        expectedEnd.eventCount = 6
        XCTAssertEqual(try readAll(bytes), [
            .process(process),
            .stack(id: .max, frames: frames),
            .type(id: .max, metadata: .max, name: ""),
            .allocation(function: .malloc, address: .max, size: 0, stack: .max, type: .max),
            .allocation(function: .malloc, address: 0, size: .max, stack: 0, type: 0),
            .allocation(function: .malloc, address: .max, size: .max, stack: 0, type: 0),
            .free(function: .free, address: 1 << 63),
            .reallocUndo(address: (1 << 63) - 1),
            .moduleLoad(module),
            .moduleUnload(loadBias: 0),
            .threadStart(tid: .max),
            .lost(count: .max),
            .mark(label: "", timeNanoseconds: .max, origin: .timer),
            .end(expectedEnd),
        ])
    }

    func testWriterCapsOversizedFields() throws {
        // 64 KiB + a bit, ending in multi-byte characters so the cut must back off.
        let long = String(repeating: "a", count: 65_535) + String(repeating: "é", count: 10)
        let frames = (0..<1500).map { UInt64($0) }
        let segments = (0..<70).map { ModuleRecord.Segment(vaddr: UInt64($0), memsz: 1, flags: 4) }
        let bytes = try writeTrace { w in
            w.defineStack(id: 1, frames: frames)
            w.defineStack(id: 2, frames: [])
            w.defineStack(id: 0, frames: [1, 2]) // ignored: id 0 means none
            w.defineType(id: 0, metadata: 1, name: "ignored")
            w.defineType(id: 3, metadata: 1, name: long)
            w.moduleLoad(ModuleRecord(loadBias: 1, path: long, buildID: Array(repeating: 7, count: 70_000), segments: segments))
            w.mark(label: long, timeNanoseconds: 0, origin: .program)
        }
        let records = try readAll(bytes)
        let cut = String(repeating: "a", count: 65_535)
        XCTAssertEqual(records[1], .stack(id: 1, frames: Array(frames.prefix(1024))))
        XCTAssertEqual(records[2], .stack(id: 2, frames: [0]))
        XCTAssertEqual(records[3], .type(id: 3, metadata: 1, name: cut))
        guard case let .moduleLoad(module) = records[4] else { return XCTFail("\(records[4])") }
        XCTAssertEqual(module.path, cut)
        XCTAssertEqual(module.buildID.count, 65_536)
        XCTAssertEqual(module.segments, Array(segments.prefix(64)))
        XCTAssertEqual(records[5], .mark(label: cut, timeNanoseconds: 0, origin: .program))
        // Exactly 64 KiB of two-byte characters fits as is.
        let exact = String(repeating: "é", count: 32_768)
        XCTAssertEqual(try readAll(try writeTrace { $0.mark(label: exact, timeNanoseconds: 0, origin: .timer) })[1],
                       .mark(label: exact, timeNanoseconds: 0, origin: .timer))
    }

    func testManyRecordsSpanManyChunks() throws {
        var rng = SeededRandom(seed: 7)
        var expected: [TraceRecord] = [.process(sampleProcess)]
        let bytes = try writeTrace { w in
            w.defineStack(id: 1, frames: [1, 2, 3])
            expected.append(.stack(id: 1, frames: [1, 2, 3]))
            for i in 0..<100_000 {
                let address = rng.next()
                if i % 3 == 0 {
                    w.appendFree(.free, address: address)
                    expected.append(.free(function: .free, address: address))
                } else {
                    let size = rng.next() >> (rng.next() % 64)
                    w.appendAllocation(.malloc, address: address, size: size, stack: 1, type: 0)
                    expected.append(.allocation(function: .malloc, address: address, size: size, stack: 1, type: 0))
                }
            }
        }
        var records = try readAll(bytes)
        guard case .end(let end)? = records.popLast() else { return XCTFail("no end") }
        XCTAssertEqual(end.eventCount, 100_000)
        XCTAssertEqual(records, expected)
        XCTAssertGreaterThan(bytes.count, 10 * 65_536, "expected many chunks")
    }

    func testReadsFromFileAndMemoryAlike() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("f.trace")
        let writer = try TraceWriter(path: path, process: sampleProcess)
        for i in 0..<300_000 { writer.appendAllocation(.malloc, address: UInt64(i) * 32, size: 32, stack: 0, type: 0) }
        try writer.finish(EndRecord(reason: .exited))
        var fromFile: [TraceRecord] = []
        var reader = try TraceReader(path: path)
        try reader.forEach { fromFile.append($0) }
        // forEach can run again from the start.
        var again = 0
        try reader.forEach { _ in again += 1 }
        XCTAssertEqual(again, fromFile.count)
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        XCTAssertEqual(fromFile, try readAll(bytes))
        XCTAssertEqual(fromFile.count, 300_002)
    }
}
