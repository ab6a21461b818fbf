// StackIdentity once compact: 64-bit keys by stack id, answers checked against exact keys.

import Foundation
@testable import HeapGenAnalysis
import HeapGenTrace
import XCTest

final class StackIdentityCompactTests: XCTestCase {
    static let library = ModuleRecord(loadBias: 0x7000_0000, path: "/lib/plugin.so", buildID: [4, 2],
                                      segments: [.init(vaddr: 0, memsz: 0x10_0000, flags: 5)])

    static func frames(_ path: Int, bias: UInt64 = library.loadBias) -> [UInt64] {
        [bias + 0x1000 + UInt64(path) * 16, bias + 0x8000 + UInt64(path % 7) * 16, 0x5555_0000]
    }

    /// Paths defined before and after compact() (the table grows after it), then again in
    /// a later epoch, under ids from 2^24 and the library mapped elsewhere: each answers
    /// its first id; other frames are a new path; an id defined again answers itself.
    func testCompactAnswersFirstIdsAcrossGrowth() {
        var identity = StackIdentity()
        identity.load(Self.library)
        let paths = 6000
        for p in 0..<paths {
            if p == 1500 { identity.compact() }
            XCTAssertEqual(identity.canonical(UInt32(10 + p), frames: Self.frames(p)), UInt32(10 + p))
        }
        XCTAssertTrue(identity.isCompact)
        identity.unload(loadBias: Self.library.loadBias)
        var moved = Self.library
        moved.loadBias = 0x9000_0000
        identity.load(moved)
        for p in stride(from: 0, to: paths, by: 5) {
            let again = UInt32(1 << 24) + UInt32(p)
            XCTAssertEqual(identity.canonical(again, frames: Self.frames(p, bias: moved.loadBias)), UInt32(10 + p))
        }
        XCTAssertEqual(identity.canonical(UInt32(10 + 3), frames: Self.frames(3, bias: moved.loadBias)), 13)
        let other = UInt32(1 << 25)
        XCTAssertEqual(identity.canonical(other, frames: [moved.loadBias + 0xff00, 0x5555_0000]), other)
        XCTAssertEqual(identity.canonical(0, frames: [moved.loadBias + 0xff10]), 0, "id 0 is never kept")
        XCTAssertEqual(identity.canonical(5, frames: [moved.loadBias + 0xff10]), 5)
    }

    /// A refused pair is not answered; a third id of the path still finds the first.
    func testRefusedPairIsNotAnswered() {
        var identity = StackIdentity()
        identity.compact()
        identity.refused = [UInt64(200) << 32 | 100]
        XCTAssertEqual(identity.canonical(100, frames: [1, 2, 3]), 100)
        XCTAssertEqual(identity.canonical(200, frames: [1, 2, 3]), 200)
        XCTAssertEqual(identity.canonical(300, frames: [1, 2, 3]), 100)
    }

    /// Fingerprints of 2 + 2 bits: many different stacks collide; the check finds exactly
    /// the aliases whose exact keys differ.
    func testCheckFindsTheCollisions() {
        var identity = StackIdentity()
        identity.fingerprintMask = 0x3
        identity.compact()
        var check = StackIdentity()
        var aliases: [UInt32: UInt32] = [:]
        var truth: [UInt32: UInt32] = [:]
        var firstOfPath: [Int: UInt32] = [:]
        for n in 0..<400 {
            let path = n % 300
            let id = UInt32(1 + n)
            let first = identity.canonical(id, frames: Self.frames(path))
            if first != id { aliases[id] = first }
            truth[id] = firstOfPath[path] ?? id
            if firstOfPath[path] == nil { firstOfPath[path] = id }
        }
        for n in 0..<400 { check.check(UInt32(1 + n), frames: Self.frames(n % 300)) }
        let wrong = StackIdentity.wrongAliases(aliases, check: check)
        XCTAssertFalse(wrong.isEmpty, "collisions were answered")
        for (id, first) in aliases {
            XCTAssertEqual(wrong[id] != nil, first != truth[id], "id \(id) → \(first), truly \(truth[id]!)")
        }
    }

    /// A trace with a library loaded and unloaded four times and enough stacks for the
    /// first pass to drop its frames (and compact its identity): the same analysis as the
    /// exact identity's, also with fingerprints of 6 + 6 bits (collisions: passes again
    /// with them refused).
    func testAnalysisWithCompactIdentityIsTheExactOne() throws {
        let path = NSTemporaryDirectory() + "heapgen-compactid-\(UUID().uuidString).trace"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let exe = ModuleRecord(loadBias: 0x5555_0000, path: "/usr/bin/app", buildID: [1],
                               segments: [.init(vaddr: 0, memsz: 0x10000, flags: 5)])
        let w = try TraceWriter(path: path, process: ProcessRecord(
            pid: 7, ppid: 1, origin: .root, executable: "/usr/bin/app", arguments: ["app"], startUnixNanoseconds: 1))
        w.moduleLoad(exe)
        var id: UInt32 = 1
        var address: UInt64 = 0x1000_0000
        for round in 0..<4 {
            var module = Self.library
            module.loadBias += UInt64(round % 2) << 28
            w.moduleLoad(module)
            for p in 0..<(150 + 50 * round) {
                w.defineStack(id: id, frames: Self.frames(p, bias: module.loadBias))
                for _ in 0..<(1 + p % 3) {
                    w.appendAllocation(.malloc, address: address, size: 16 + UInt64(p), stack: id, type: 0)
                    if p % 4 == 0 { w.appendFree(.free, address: address) }
                    address += 64
                }
                id = round == 0 && p == 149 ? 1 << 24 : id + 1
            }
            w.moduleUnload(loadBias: module.loadBias)
            w.mark(label: "round \(round)", timeNanoseconds: UInt64(round + 1) * 1000, origin: .program)
        }
        try w.finish(EndRecord(reason: .exited, status: 0))

        let exact = try GenerationAnalyzer.analyze(path: path, options: AnalysisOptions(), frameNodeLimit: .max)
        let compact = try GenerationAnalyzer.analyze(path: path, options: AnalysisOptions(), frameNodeLimit: 50)
        let colliding = try GenerationAnalyzer.analyze(path: path, options: AnalysisOptions(), frameNodeLimit: 50,
                                                       fingerprintMask: 0x3f)
        XCTAssertEqual(exact.siteCount, 300, "one site per path")
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        XCTAssertEqual(try encoder.encode(compact), try encoder.encode(exact))
        XCTAssertEqual(try encoder.encode(colliding), try encoder.encode(exact))
        XCTAssertEqual(colliding.siteCount, exact.siteCount)
        XCTAssertEqual(colliding.regroupingCandidates, exact.regroupingCandidates)
    }
}
