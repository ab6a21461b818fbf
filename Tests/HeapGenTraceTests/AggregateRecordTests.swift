// The `aggregate` record (0x28, aggregated traces): its expansion into events, the header
// flag, and the reader's checks (a malformed record is a corrupt trace, never a trap).

import Foundation
import HeapGenTestSupport
@testable import HeapGenTrace
import XCTest

final class AggregateRecordTests: XCTestCase {
    /// Epoch 0: site 1 allocates 5 × 48 B (2 freed again), site 2 allocates 1 × 1000 B; one
    /// free of an unknown address. Mark. Epoch 1: 1 of site 1's epoch-0 survivors freed,
    /// 4 × 48 B more allocated, all kept.
    private func sample(_ w: TraceWriter) throws {
        try w.markAggregated()
        w.defineStack(id: 1, frames: [0x1000, 0x2000])
        w.defineStack(id: 2, frames: [0x3000])
        w.aggregate(epoch: 0, untrackedFrees: 1, entries: [
            AggregateEntry(stack: 1, type: 0, size: 48, birth: 0, allocated: 5, freed: 2),
            AggregateEntry(stack: 2, type: 0, size: 1000, birth: 0, allocated: 1, freed: 0),
        ])
        w.mark(label: "cycle", timeNanoseconds: 10, origin: .program)
        w.aggregate(epoch: 1, untrackedFrees: 0, entries: [
            AggregateEntry(stack: 1, type: 0, size: 48, birth: 0, allocated: 0, freed: 1),
            AggregateEntry(stack: 1, type: 0, size: 48, birth: 1, allocated: 4, freed: 0),
        ])
    }

    func testExpandsIntoEventsWithTheRecordedCounts() throws {
        let bytes = try writeTrace { try sample($0) }
        let reader = try TraceReader(bytes: bytes)
        XCTAssertTrue(reader.isAggregated)
        XCTAssertEqual(reader.minorVersion, 8)
        let records = try readAll(bytes)
        var live: [UInt64: (stack: UInt32, size: UInt64)] = [:]
        var untracked = 0, allocations = 0, frees = 0
        var liveAtMark: [UInt32: Int] = [:]
        for record in records {
            switch record {
            case let .allocation(_, address, size, stack, _):
                XCTAssertGreaterThanOrEqual(address, AggregateAddresses.first)
                XCTAssertNil(live[address], "a made-up address is live once")
                live[address] = (stack, size)
                allocations += 1
            case let .free(_, address):
                if live.removeValue(forKey: address) == nil { untracked += 1 }
                frees += 1
            case .mark:
                liveAtMark = Dictionary(grouping: live.values, by: \.stack).mapValues(\.count)
            default: break
            }
        }
        XCTAssertEqual(liveAtMark, [1: 3, 2: 1])
        XCTAssertEqual(Dictionary(grouping: live.values, by: \.stack).mapValues(\.count), [1: 6, 2: 1])
        XCTAssertEqual(live.values.filter { $0.stack == 2 }.map(\.size), [1000])
        XCTAssertEqual(untracked, 1)
        XCTAssertEqual(allocations, 10)
        XCTAssertEqual(frees, 4)
        guard case let .end(end)? = records.last else { return XCTFail("no end record") }
        XCTAssertEqual(end.eventCount, 15, "10 allocations, 4 frees, 1 mark: the expanded events")
    }

    /// `undone` failed reallocs are a realloc's free and its undo on a block of the group,
    /// which stays live.
    func testFailedReallocsExpandIntoFreeAndUndo() throws {
        let bytes = try writeTrace { w in
            w.aggregate(epoch: 0, untrackedFrees: 0, entries: [.init(stack: 0, type: 0, size: 8, birth: 0, allocated: 1, freed: 0)])
            w.mark(label: "m", timeNanoseconds: 1, origin: .program)
            w.aggregate(epoch: 1, untrackedFrees: 0, entries: [.init(stack: 0, type: 0, size: 8, birth: 0, allocated: 0, freed: 0, undone: 2)])
        }
        let events = try readAll(bytes).filter {
            switch $0 { case .allocation, .free, .reallocUndo: true; default: false }
        }
        guard case let .allocation(_, address, _, _, _) = events.first else { return XCTFail("\(events)") }
        XCTAssertEqual(Array(events.dropFirst()), [.free(function: .realloc, address: address), .reallocUndo(address: address),
                                                   .free(function: .realloc, address: address), .reallocUndo(address: address)])
    }

    func testAPlainTraceIsNotAggregated() throws {
        let bytes = try writeTrace { $0.appendAllocation(.malloc, address: 0x10, size: 1, stack: 0, type: 0) }
        XCTAssertFalse(try TraceReader(bytes: bytes).isAggregated)
    }

    /// Counts above 4096 are split by the writer into entries of the same group (and
    /// untracked frees into records); the reader's totals are the counts written.
    func testLargeCountsAreSplitAndAddUp() throws {
        let bytes = try writeTrace { w in
            w.aggregate(epoch: 0, untrackedFrees: 10_000, entries: [
                .init(stack: 0, type: 0, size: 8, birth: 0, allocated: 20_000, freed: 9_000, undone: 13_000),
            ])
        }
        var allocations = 0, frees = 0, undos = 0
        var live = Set<UInt64>()
        for record in try readAll(bytes) {
            switch record {
            case let .allocation(_, address, _, _, _): allocations += 1; live.insert(address)
            case let .free(function, address): frees += 1; if function == .free { live.remove(address) }
            case .reallocUndo: undos += 1
            default: break
            }
        }
        XCTAssertEqual(allocations, 20_000)
        XCTAssertEqual(frees, 9_000 + 13_000 + 10_000)
        XCTAssertEqual(undos, 13_000)
        XCTAssertEqual(live.count, 11_000)
    }

    func testLongListsAreSplit() throws {
        let entries = (0..<70_000).map { AggregateEntry(stack: 0, type: 0, size: UInt64($0), birth: 0, allocated: 1, freed: 0) }
        let bytes = try writeTrace { w in w.aggregate(epoch: 0, untrackedFrees: 0, entries: entries) }
        var allocations = 0
        var reader = try TraceReader(bytes: bytes)
        try reader.forEach { if case .allocation = $0 { allocations += 1 } }
        XCTAssertEqual(allocations, 70_000)
    }

    /// Each malformed record is a `.corrupt` trace with the reason.
    func testMalformedRecordsAreCorrupt() throws {
        let cases: [(String, (TraceWriter) -> Void)] = [
            ("frees 2 blocks of a group with 1 live", { w in
                w.aggregate(epoch: 0, untrackedFrees: 0, entries: [.init(stack: 0, type: 0, size: 8, birth: 0, allocated: 1, freed: 0)])
                w.aggregate(epoch: 1, untrackedFrees: 0, entries: [.init(stack: 0, type: 0, size: 8, birth: 0, allocated: 0, freed: 2)])
            }),
            ("born in epoch 3, after its record's epoch 1", { w in
                w.aggregate(epoch: 1, untrackedFrees: 0, entries: [.init(stack: 0, type: 0, size: 8, birth: 3, allocated: 1, freed: 0)])
            }),
            ("allocates 1 blocks in epoch 0, before its record's epoch 2", { w in
                w.aggregate(epoch: 2, untrackedFrees: 0, entries: [.init(stack: 0, type: 0, size: 8, birth: 0, allocated: 1, freed: 0)])
            }),
            ("frees 3 of the 1 blocks it allocates", { w in
                w.aggregate(epoch: 0, untrackedFrees: 0, entries: [.init(stack: 0, type: 0, size: 8, birth: 0, allocated: 1, freed: 3)])
            }),
            ("uses stack 9, which is not defined", { w in
                w.aggregate(epoch: 0, untrackedFrees: 0, entries: [.init(stack: 9, type: 0, size: 8, birth: 0, allocated: 1, freed: 0)])
            }),
            ("uses type 4, which is not defined", { w in
                w.aggregate(epoch: 0, untrackedFrees: 0, entries: [.init(stack: 0, type: 4, size: 8, birth: 0, allocated: 1, freed: 0)])
            }),
            ("aggregate record of epoch 1 after one of epoch 2", { w in
                w.aggregate(epoch: 2, untrackedFrees: 1, entries: [])
                w.aggregate(epoch: 1, untrackedFrees: 1, entries: [])
            }),
            ("undoes 2 reallocs of a group with no block", { w in
                w.aggregate(epoch: 0, untrackedFrees: 0, entries: [.init(stack: 0, type: 0, size: 8, birth: 0, allocated: 0, freed: 0, undone: 2)])
            }),
            ("undoes 1 reallocs of a group with no block", { w in
                w.aggregate(epoch: 0, untrackedFrees: 0, entries: [.init(stack: 0, type: 0, size: 8, birth: 0, allocated: 1, freed: 1, undone: 1)])
                w.mark(label: "m", timeNanoseconds: 1, origin: .program)
                w.aggregate(epoch: 1, untrackedFrees: 0, entries: [.init(stack: 0, type: 0, size: 8, birth: 1, allocated: 0, freed: 0, undone: 1)])
            }),
        ]
        for (message, body) in cases {
            let bytes = try writeTrace { w in body(w) }
            XCTAssertThrowsError(try readAll(bytes), message) { error in
                let error = error as? TraceError
                XCTAssertEqual(error?.kind, .corrupt, message)
                XCTAssertTrue("\(error.map { "\($0)" } ?? "")".contains(message), "\(String(describing: error)) lacks \(message)")
            }
        }
    }

    /// Mutated aggregated traces: the reader succeeds or throws a TraceError, never traps.
    func testMutationsNeverTrap() throws {
        let seed = try writeTrace { try sample($0) }
        var rng = SeededRandom(seed: 28)
        var outcomes: [String: Int] = [:]
        for _ in 0..<5_000 {
            var bytes = seed
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let at = 16 + Int(rng.next() % UInt64(bytes.count - 16))
                bytes[at] = UInt8(truncatingIfNeeded: rng.next())
            }
            // Fix the chunk CRCs so the mutation reaches the decoder.
            var o = 16
            while o + 8 <= bytes.count {
                let length = Int(bytes[o]) | Int(bytes[o + 1]) << 8 | Int(bytes[o + 2]) << 16 | Int(bytes[o + 3]) << 24
                guard length >= 1, length <= 1 << 24, o + 8 + length <= bytes.count else { break }
                let crc = CRC32C.checksum(Array(bytes[(o + 8)..<(o + 8 + length)]))
                for k in 0..<4 { bytes[o + 4 + k] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k))) }
                o += 8 + length
            }
            do {
                _ = try readAll(bytes, strict: false)
                outcomes["ok", default: 0] += 1
            } catch let error as TraceError {
                outcomes["\(error.kind)", default: 0] += 1
            }
        }
        XCTAssertGreaterThan(outcomes["corrupt"] ?? 0, 0, "\(outcomes)")
    }
}
