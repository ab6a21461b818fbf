// Exports made a piece at a time, from stacks read again one by one, against what the
// test computes from the stacks it wrote: folded lines, their order, pprof samples.

import Foundation
import HeapGenAnalysis
import HeapGenExport
import HeapGenSymbolication
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class StreamingExportTests: XCTestCase {
    let symbolication = StackSymbolication(symbolizer: Symbolizer(options: .init(symbolizerPath: "/nonexistent", allowFallbacks: false)))

    /// What the test wrote: per stack id its frames (innermost first) and per block its
    /// stack, size and whether it is live at the end.
    struct Written {
        var path: String
        var frames: [UInt32: [UInt64]]
        var blocks: [(stack: UInt32, size: Int64, live: Bool)]
    }

    /// 2,000 stacks of 1 to 8 frames over 40 addresses (0x10, 0x100, 0x1000… print as prefixes of each other,
    /// the case where folded text sorts differently from frame by frame), two stacks that
    /// print the same, blocks without a stack; several blocks a stack, some freed.
    func writeTrace() throws -> Written {
        let t = try SyntheticTrace()
        var rng = SeededRandom(seed: 42)
        let pool: [UInt64] = (0..<40).map { i in [0x10, 0x100, 0x1000, 0x1a, 0x1b0][i % 5] + UInt64(i / 5) * 0x10000 }
        var frames: [UInt32: [UInt64]] = [1: [0x1000, 0x2000], 2: [0x1100, 0x2000]]   // SyntheticTrace's
        for id in UInt32(3)...2_000 {
            let depth = 1 + Int(rng.next() % 8)   // the format keeps an empty stack as one 0 frame
            frames[id] = (0..<depth).map { _ in pool[Int(rng.next() % UInt64(pool.count))] }
            t.writer.defineStack(id: id, frames: frames[id]!)
        }
        frames[2_001] = frames[3]!   // prints as stack 3 does: one line
        t.writer.defineStack(id: 2_001, frames: frames[2_001]!)
        var blocks: [(stack: UInt32, size: Int64, live: Bool)] = []
        var address: UInt64 = 0x10_0000
        for _ in 0..<6_000 {
            let stack = rng.next() % 50 == 0 ? 0 : UInt32(1 + rng.next() % 2_001)
            let size = Int64(1 + rng.next() % 300)
            address += 0x1000
            t.alloc(address, UInt64(size), stack: stack)
            let live = rng.next() % 3 != 0
            if !live { t.free(address) }
            blocks.append((stack, size, live))
        }
        return Written(path: try t.finish(), frames: frames, blocks: blocks)
    }

    func name(_ a: UInt64) -> String { "0x" + String(a, radix: 16) }

    func expectedCollapsed(_ w: Written, _ sample: HeapSample) -> String {
        var lines: [String: Int64] = [:]
        for b in w.blocks {
            let value: Int64 = switch sample {
            case .allocObjects: 1
            case .allocSpace: b.size
            case .inuseObjects: b.live ? 1 : 0
            case .inuseSpace: b.live ? b.size : 0
            }
            let f = w.frames[b.stack] ?? []
            let folded = f.isEmpty ? "[no stack]" : f.reversed().map(name).joined(separator: ";")
            lines[folded, default: 0] += value
        }
        return lines.filter { $0.value != 0 }.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)\n" }.joined()
    }

    func testCollapsedMatchesTheStacksWritten() throws {
        let w = try writeTrace()
        let profile = try HeapProfile.load(trace: w.path)
        for sample in HeapSample.allCases {
            let expected = expectedCollapsed(w, sample)
            var pieces = 0
            var bytes: [UInt8] = []
            _ = try CollapsedExport.write(profile, sample: sample, symbolication: symbolication) {
                pieces += 1
                bytes.append(contentsOf: $0)
            }
            let text = String(decoding: bytes, as: UTF8.self)
            XCTAssertEqual(text, expected, "\(sample)")
            XCTAssertGreaterThan(text.split(separator: "\n").count, 1_000, "\(sample): a line per printed stack")
            XCTAssertGreaterThanOrEqual(pieces, 1)
        }
    }

    /// Every sample's locations are its stack's addresses, innermost first; its values
    /// are the blocks of its stack; each address is one location.
    func testPprofSamplesCarryTheirStacks() throws {
        let w = try writeTrace()
        let profile = try HeapProfile.load(trace: w.path)
        let fields = try decode(try PprofExport.encode(profile, symbolication: symbolication).bytes)
        var addressOf: [UInt64: UInt64] = [:]
        for location in fields.filter({ $0.number == 4 }) {
            let l = try decode(location.bytes ?? [])
            let id = try XCTUnwrap(l.first { $0.number == 1 }?.varint)
            XCTAssertNil(addressOf[id], "location \(id) twice")
            addressOf[id] = l.first { $0.number == 3 }?.varint ?? 0
        }
        XCTAssertEqual(Set(addressOf.values).count, addressOf.count, "one location per address")
        func packed(_ b: [UInt8]) throws -> [UInt64] {
            var i = 0, out: [UInt64] = []
            while i < b.count { out.append(try readVarint(b, &i)) }
            return out
        }
        var got: [String: [Int64]] = [:]
        for s in fields.filter({ $0.number == 2 }) {
            let f = try decode(s.bytes ?? [])
            let ids = try f.filter { $0.number == 1 }.flatMap { try packed($0.bytes ?? []) }
            let values = try f.filter { $0.number == 2 }.flatMap { try packed($0.bytes ?? []) }.map { Int64(bitPattern: $0) }
            let key = try ids.map { try name(XCTUnwrap(addressOf[$0])) }.joined(separator: " ")
            got[key] = zip(got[key] ?? [0, 0, 0, 0], values).map(+)
        }
        var expected: [String: [Int64]] = [:]
        for b in w.blocks {
            let key = (w.frames[b.stack] ?? []).map(name).joined(separator: " ")
            expected[key] = zip(expected[key] ?? [0, 0, 0, 0], [1, b.size, b.live ? 1 : 0, b.live ? b.size : 0]).map(+)
        }
        XCTAssertEqual(got, expected)
    }

    /// The gzipped profile written in pieces is the whole one.
    func testPprofPiecesMakeTheGzippedProfile() throws {
        let w = try writeTrace()
        let profile = try HeapProfile.load(trace: w.path)
        var pieces: [[UInt8]] = []
        _ = try PprofExport.write(profile, symbolication: symbolication) { pieces.append($0) }
        let gzip = try tool("gzip", hint: "install gzip")
        let result = try runProcess(gzip, ["-dc"], stdin: Data(pieces.flatMap { $0 }))
        XCTAssertEqual(result.status, 0, result.transcript)
        XCTAssertEqual([UInt8](result.stdout), try PprofExport.encode(profile, symbolication: symbolication).bytes)
    }

    /// A sink that fails stops the export with its error.
    func testSinkFailureStopsTheExport() throws {
        struct Full: Error {}
        let w = try writeTrace()
        let profile = try HeapProfile.load(trace: w.path)
        XCTAssertThrowsError(try PprofExport.write(profile, symbolication: symbolication) { _ in throw Full() }) {
            XCTAssertTrue($0 is Full, "\($0)")
        }
        XCTAssertThrowsError(try CollapsedExport.write(profile, sample: .allocSpace, symbolication: symbolication) { _ in throw Full() }) {
            XCTAssertTrue($0 is Full, "\($0)")
        }
    }
}

final class GzipStreamTests: XCTestCase {
    /// Many writes of every size, flushed in 64 KB pieces: `gzip -dc` reads back their
    /// concatenation, and the one-shot ``Gzip/wrap(_:)`` gives the same bytes.
    func testPiecesDecompressToTheInput() throws {
        let gzip = try tool("gzip", hint: "install gzip")
        var rng = SeededRandom(seed: 7)
        var input: [UInt8] = []
        var out: [UInt8] = []
        var pieces = 0
        let stream = GzipStream { out.append(contentsOf: $0); pieces += 1 }
        for n in [0, 1, 5, 70_000, 3, 300_000, 0, 17] {
            let chunk = (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            input += chunk
            try stream.write(chunk)
        }
        try stream.finish()
        try stream.finish()   // a second finish adds nothing
        XCTAssertGreaterThan(pieces, 4, "random data leaves deflate in 64 KB pieces")
        let result = try runProcess(gzip, ["-dc"], stdin: Data(out))
        XCTAssertEqual(result.status, 0, result.transcript)
        XCTAssertEqual([UInt8](result.stdout), input)
        XCTAssertEqual(Gzip.wrap(input), out)
    }
}

