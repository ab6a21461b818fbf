import Foundation
import HeapGenTestSupport
import XCTest
@testable import HeapGenTrace

final class SummaryTests: XCTestCase {
    func handBuiltTrace() throws -> [UInt8] {
        try writeTrace(end: EndRecord(reason: .exited, status: 0, freeNullCalls: 3)) { w in
            w.threadStart(tid: 1)
            w.threadStart(tid: 2)
            w.moduleLoad(ModuleRecord(loadBias: 0x40_0000, path: "/usr/bin/app", buildID: [1], segments: []))
            w.moduleLoad(ModuleRecord(loadBias: 0x7F00_0000_0000, path: "/lib/libc.so.6", buildID: [2], segments: []))
            w.defineStack(id: 1, frames: [0x40_1000])
            w.defineStack(id: 2, frames: [0x40_2000, 0x40_1000])
            w.defineType(id: 5, metadata: 0xABC, name: "App.Node")
            w.appendAllocation(.malloc, address: 0x1000, size: 100, stack: 1, type: 5)   // 0: A
            w.appendAllocation(.calloc, address: 0x2000, size: 50, stack: 2, type: 0)    // 1: B
            w.appendFree(.free, address: 0x2000)                                       // 2
            // realloc that moves A to C.
            w.appendFree(.realloc, address: 0x1000)                                    // 3
            w.appendAllocation(.realloc, address: 0x3000, size: 200, stack: 1, type: 0)  // 4
            // realloc in place.
            w.appendFree(.realloc, address: 0x3000)                                    // 5
            w.appendAllocation(.realloc, address: 0x3000, size: 300, stack: 2, type: 0)  // 6
            // realloc that fails: C is live again with its old size and stack.
            w.appendFree(.realloc, address: 0x3000)                                    // 7
            w.appendReallocUndo(address: 0x3000)                                       // 8
            // realloc(D, 0).
            w.appendAllocation(.malloc, address: 0x4000, size: 10, stack: 0, type: 0)    // 9
            w.appendFree(.realloc, address: 0x4000)                                    // 10
            w.mark(label: "gen 1", timeNanoseconds: 77, origin: .program)              // 11
            // Problems.
            w.appendFree(.free, address: 0x9999)                                       // 12: unknown free
            w.appendAllocation(.malloc, address: 0x5000, size: 5, stack: 0, type: 0)     // 13
            w.appendAllocation(.malloc, address: 0x5000, size: 7, stack: 0, type: 0)     // 14: double allocation
            w.appendReallocUndo(address: 0x7777)                                       // 15: bad undo
            w.moduleUnload(loadBias: 0x7F00_0000_0000)
            w.lost(count: 4)
            w.lost(count: 1)
        }
    }

    func testSummaryOfHandBuiltTrace() throws {
        let s = try TraceSummary(reader: TraceReader(bytes: try handBuiltTrace(), name: "hand.trace"))
        XCTAssertEqual(s.file, "hand.trace")
        XCTAssertEqual(s.process, sampleProcess)
        XCTAssertEqual(s.end.reason, .exited)
        XCTAssertEqual(s.end.eventCount, 16)
        XCTAssertEqual(s.allocations, [
            "malloc": .init(calls: 4, bytes: 122),
            "calloc": .init(calls: 1, bytes: 50),
            "realloc": .init(calls: 2, bytes: 500),
        ])
        // The realloc that failed freed nothing: 4 realloc frees recorded, 3 made.
        XCTAssertEqual(s.frees, ["free": 2, "realloc": 3])
        XCTAssertEqual(s.freeNullCalls, 3)
        XCTAssertEqual(s.allocationCount, 7)
        XCTAssertEqual(s.freeCount, 5)
        XCTAssertEqual(s.reallocUndoCount, 2)
        XCTAssertEqual(s.eventCount, 16)
        XCTAssertEqual(s.liveObjects, 2, "C (300 bytes, restored by the undo) and E (7 bytes)")
        XCTAssertEqual(s.liveBytes, 307)
        XCTAssertEqual(s.peakLiveBytes, 310)
        XCTAssertEqual(s.peakEventPosition, 9)
        XCTAssertEqual(s.stackCount, 2)
        XCTAssertEqual(s.types, [5: "App.Node"])
        XCTAssertEqual(s.modules, ["/usr/bin/app", "/lib/libc.so.6"])
        XCTAssertEqual(s.moduleUnloads, 1)
        XCTAssertEqual(s.marks, [.init(label: "gen 1", index: 0, eventPosition: 11, timeNanoseconds: 77, origin: .program,
                                       liveObjects: 1, liveBytes: 300)])
        XCTAssertEqual(s.threadCount, 2)
        XCTAssertEqual(s.lostEvents, 5)
        XCTAssertEqual(s.pendingReallocsAtEnd, 2, "A (moved, never reused) and D (realloc(p, 0))")
        XCTAssertEqual(s.unknownFrees, 1)
        XCTAssertEqual(s.doubleAllocations, 1)
        XCTAssertEqual(s.badUndos, 1)
        XCTAssertFalse(s.isConsistent)
        XCTAssertEqual(s.problems, [
            "event 12: free of 0x9999, which is not live",
            "event 14: malloc returned 0x5000, which is already live (5 bytes)",
            "event 15: reallocUndo of 0x7777, which no realloc freed",
        ])
    }

    func testUndoRestoresOldSizeAndStackAfterReuse() throws {
        let bytes = try writeTrace { w in
            w.defineStack(id: 1, frames: [1])
            w.appendAllocation(.malloc, address: 0x100, size: 64, stack: 1, type: 0)
            w.appendFree(.realloc, address: 0x100)
            // Another thread gets 0x100 before the realloc reports: the pending block is gone.
            w.appendAllocation(.malloc, address: 0x100, size: 8, stack: 0, type: 0)
            w.appendReallocUndo(address: 0x100)
        }
        let s = try TraceSummary(reader: TraceReader(bytes: bytes))
        XCTAssertEqual(s.badUndos, 1)
        XCTAssertEqual(s.doubleAllocations, 0)
        XCTAssertEqual(s.liveBytes, 8)
    }

    func testInterleavedReallocsOfTwoThreads() throws {
        let bytes = try writeTrace { w in
            w.appendAllocation(.malloc, address: 0xA0, size: 10, stack: 0, type: 0)
            w.appendAllocation(.malloc, address: 0xB0, size: 20, stack: 0, type: 0)
            w.appendFree(.realloc, address: 0xA0)          // thread 1 starts realloc(A)
            w.appendFree(.realloc, address: 0xB0)          // thread 2 starts realloc(B)
            w.appendAllocation(.realloc, address: 0xC0, size: 30, stack: 0, type: 0) // thread 1 succeeds
            w.appendReallocUndo(address: 0xB0)             // thread 2 fails
        }
        let s = try TraceSummary(reader: TraceReader(bytes: bytes))
        XCTAssertTrue(s.isConsistent, "\(s.problems)")
        XCTAssertEqual(s.liveObjects, 2)
        XCTAssertEqual(s.liveBytes, 50)
    }

    func testPendingReallocsAreBounded() throws {
        let bytes = try writeTrace { w in
            for i in 1...10_000 as ClosedRange<UInt64> {
                w.appendAllocation(.malloc, address: i << 8, size: 16, stack: 0, type: 0)
                w.appendFree(.realloc, address: i << 8) // realloc(p, 0)
            }
            w.appendReallocUndo(address: 10_000 << 8) // the most recent one can still fail
        }
        let s = try TraceSummary(reader: TraceReader(bytes: bytes))
        XCTAssertLessThanOrEqual(s.pendingReallocsAtEnd, TraceSummary.maxPendingReallocs)
        XCTAssertEqual(s.badUndos, 0)
        XCTAssertEqual(s.liveObjects, 1)
        XCTAssertEqual(s.liveBytes, 16)
    }

    func testLiveHeapUnderChurn() throws {
        // Many addresses, including 0 and colliding ones; compare against a dictionary.
        var rng = SeededRandom(seed: 5)
        var model: [UInt64: UInt64] = [:]
        var liveBytes: UInt64 = 0
        let bytes = try writeTrace { w in
            for _ in 0..<50_000 {
                let address = (rng.next() % 3000) << 4
                if let size = model.removeValue(forKey: address) {
                    w.appendFree(.free, address: address)
                    liveBytes -= size
                } else {
                    let size = rng.next() % 1000
                    w.appendAllocation(.malloc, address: address, size: size, stack: 0, type: 0)
                    model[address] = size
                    liveBytes += size
                }
            }
        }
        let s = try TraceSummary(reader: TraceReader(bytes: bytes))
        XCTAssertTrue(s.isConsistent, "\(s.problems)")
        XCTAssertEqual(s.liveObjects, UInt64(model.count))
        XCTAssertEqual(s.liveBytes, liveBytes)
    }

    func testLoadFromPathAndEncode() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("s.trace")
        try Data(handBuiltTrace()).write(to: URL(fileURLWithPath: path))
        let s = try TraceSummary.load(path: path)
        XCTAssertEqual(s.file, path)
        XCTAssertEqual(s.liveBytes, 307)
        let json = try JSONEncoder().encode(s)
        let back = try JSONDecoder().decode(TraceSummary.self, from: json)
        XCTAssertEqual(back.allocations, s.allocations)
        XCTAssertEqual(back.marks, s.marks)
        XCTAssertEqual(back.types, s.types)
    }

    /// `info --format json` prints the type names as an object keyed by id: the same bytes on
    /// every run (a `[UInt32: String]` used to encode as a flat array in hash order).
    func testTypeNamesEncodeAsASortedObject() throws {
        var s = try TraceSummary(reader: TraceReader(bytes: try handBuiltTrace(), strict: true))
        s.types = [10: "App.Ten", 2: "App.Two", 1: "App.One"]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let text = String(decoding: try encoder.encode(s), as: UTF8.self)
        XCTAssertTrue(text.contains(#""types":{"1":"App.One","10":"App.Ten","2":"App.Two"}"#), text)
        XCTAssertEqual(try JSONDecoder().decode(TraceSummary.self, from: Data(text.utf8)).types, s.types)
        let bad = text.replacingOccurrences(of: #""10":"App.Ten""#, with: #""x":"App.Ten""#)
        XCTAssertThrowsError(try JSONDecoder().decode(TraceSummary.self, from: Data(bad.utf8)))
    }

    func testInvalidTraceIsRejected() throws {
        var bytes = try handBuiltTrace()
        bytes.removeLast()
        XCTAssertThrowsError(try TraceSummary(reader: TraceReader(bytes: bytes, strict: true))) {
            XCTAssertEqual(($0 as? TraceError)?.kind, .truncated)
        }
    }
}
