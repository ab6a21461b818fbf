import Foundation
import HeapGenTestSupport
import XCTest
@testable import HeapGenTrace

/// Mutation fuzzing: the reader must either succeed or throw a TraceError — never trap or hang.
final class FuzzTests: XCTestCase {
    static let mutations = 20_000

    /// Valid seed traces made by the writer.
    func seeds() throws -> [[UInt8]] {
        var rng = SeededRandom(seed: 1)
        let small = try smallTrace()
        let mixed = try writeTrace { w in
            for id in 1...20 as ClosedRange<UInt32> {
                w.defineStack(id: id, frames: (0..<(Int(id) * 3)).map { _ in rng.next() })
                w.defineType(id: id, metadata: rng.next(), name: "Type\(id) 🚀")
            }
            for i in 0..<400 {
                switch rng.next() % 6 {
                case 0: w.appendFree(.free, address: rng.next())
                case 1: w.appendFree(.realloc, address: rng.next() & 0xFFFF_FFF0)
                case 2: w.appendReallocUndo(address: rng.next() & 0xFFF0)
                case 3: w.mark(label: "gen \(i)", timeNanoseconds: rng.next(), origin: .program)
                default:
                    w.appendAllocation(AllocationFunction.allCases[Int(rng.next() % 9)], address: rng.next() & 0xFFFF_FFF0,
                                       size: rng.next() >> (rng.next() % 64), stack: UInt32(rng.next() % 21), type: UInt32(rng.next() % 21))
                }
            }
        }
        // The reference graph: a run of part records the decoder reassembles.
        let graph = try writeTrace { w in
            w.appendAllocation(.malloc, address: 0x10, size: 8, stack: 0, type: 0)
            w.referenceGraph(sampleGraph())
            w.referenceGraph(sampleGraph(blocks: 2, trigger: .exit))
        }
        // Compact events in compressed chunks: recent frees and allocations, two arenas.
        let compressed = try writeTrace { w in
            var live: [UInt64] = []
            for i in 0..<3000 {
                let a = (i % 3 == 0 ? 0x7F00_0000_0000 : 0x5555_0000_0000) + (rng.next() % 512) * 16
                w.appendAllocation(i % 13 == 0 ? .calloc : .malloc, address: a, size: 16 + rng.next() % 241, stack: 0, type: 0)
                live.append(a)
                if i % 2 == 1 { w.appendFree(i % 9 == 0 ? .realloc : .free, address: live.remove(at: Int(rng.next() % UInt64(live.count)))) }
            }
        }
        return [small, mixed, graph, compressed]
    }

    /// Reads `bytes` fully and returns "ok" or the error kind; any other outcome fails the test.
    @discardableResult
    func check(_ bytes: [UInt8], _ what: @autoclosure () -> String) -> String {
        do {
            var reader = try TraceReader(bytes: bytes, name: "fuzz")
            var n = 0
            try reader.forEach { _ in n += 1 }
            return "ok"
        } catch let error as TraceError {
            return "\(error.kind)"
        } catch {
            XCTFail("\(what()): non-TraceError \(error)")
            return "other"
        }
    }

    /// Chunk boundaries (offsets of chunk headers) of a well-formed prefix.
    func chunkOffsets(_ bytes: [UInt8]) -> [Int] {
        var offsets: [Int] = []
        var o = 16
        while o + 8 <= bytes.count {
            offsets.append(o)
            // Bit 31: a compressed chunk.
            let n = Int(bytes[o]) | Int(bytes[o + 1]) << 8 | Int(bytes[o + 2]) << 16 | Int(bytes[o + 3] & 0x7F) << 24
            o += 8 + n
        }
        return offsets
    }

    /// Recomputes the CRC of every chunk whose length still fits, so mutations reach the record decoder.
    func fixCRCs(_ bytes: inout [UInt8]) {
        for o in chunkOffsets(bytes) {
            let n = Int(bytes[o]) | Int(bytes[o + 1]) << 8 | Int(bytes[o + 2]) << 16 | Int(bytes[o + 3] & 0x7F) << 24
            guard n >= 1, o + 8 + n <= bytes.count else { break }
            let crc = CRC32C.checksum(Array(bytes[(o + 8)..<(o + 8 + n)]))
            for k in 0..<4 { bytes[o + 4 + k] = UInt8((crc >> (8 * UInt32(k))) & 0xFF) }
        }
    }

    func mutate(_ input: [UInt8], _ rng: inout SeededRandom, seeds: [[UInt8]]) -> [UInt8] {
        var b = input
        let rounds = 1 + Int(rng.next() % 4)
        for _ in 0..<rounds {
            guard !b.isEmpty else { break }
            let at = Int(rng.next() % UInt64(b.count))
            switch rng.next() % 9 {
            case 0: b[at] ^= 1 << (rng.next() % 8) // bit flip
            case 1: b[at] = UInt8(truncatingIfNeeded: rng.next()) // byte set
            case 2: b[at] = [0x00, 0x01, 0x7F, 0x80, 0xFF][Int(rng.next() % 5)] // interesting byte
            case 3: // chunk length edit
                let offsets = chunkOffsets(b)
                if let o = offsets.randomElement(using: &rng) {
                    let n = [0, 1, 2, 0xFF, 0x10000, 0x0100_0000, 0x0100_0001, 0xFFFF_FFFF, UInt32(truncatingIfNeeded: rng.next() % 4096)]
                        .randomElement(using: &rng)!
                    for k in 0..<4 { b[o + k] = UInt8((n >> (8 * UInt32(k))) & 0xFF) }
                }
            case 4: b.removeSubrange(at...) // truncation
            case 5: // splice: our prefix + another seed's suffix
                let other = seeds.randomElement(using: &rng)!
                let from = Int(rng.next() % UInt64(other.count))
                b = Array(b.prefix(at)) + other.suffix(from: from)
            case 6: // delete a range
                let n = min(b.count - at, 1 + Int(rng.next() % 16))
                b.removeSubrange(at..<(at + n))
            case 7: // insert random bytes
                b.insert(contentsOf: (0..<(1 + rng.next() % 16)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }, at: at)
            default: // duplicate a range
                let n = min(b.count - at, 1 + Int(rng.next() % 64))
                b.insert(contentsOf: b[at..<(at + n)], at: Int(rng.next() % UInt64(b.count)))
            }
        }
        // Half the time, repair CRCs so the mutation reaches record decoding.
        if rng.next() % 2 == 0 { fixCRCs(&b) }
        return b
    }

    func testMutationFuzz() throws {
        let seeds = try seeds()
        for seed in seeds { XCTAssertNoThrow(try readAll(seed)) }
        var rng = SeededRandom(seed: 0x00C0_FFEE)
        let start = Date()
        var outcomes: [String: Int] = [:]
        for i in 0..<Self.mutations {
            let input = seeds[i % seeds.count]
            let mutated = mutate(input, &rng, seeds: seeds)
            let outcome = check(mutated, "mutation \(i)")
            outcomes[outcome, default: 0] += 1
        }
        let elapsed = Date().timeIntervalSince(start)
        print("mutation fuzz: \(Self.mutations) inputs in \(String(format: "%.1f", elapsed)) s: \(outcomes.sorted { $0.key < $1.key })")
        XCTAssertLessThan(elapsed, 30)
        XCTAssertGreaterThan(outcomes["corrupt", default: 0], 1000, "mutations should reach the record decoder")
    }

    func testRandomGarbageAfterHeader() {
        var rng = SeededRandom(seed: 99)
        for _ in 0..<2000 {
            var raw = RawTrace()
            let n = Int(rng.next() % 200)
            var payload = (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if rng.next() % 2 == 0 { payload = Encode.process() + payload }
            if !payload.isEmpty { raw.chunk(payload) }
            check(raw.bytes, "garbage")
        }
    }
}
