// Per-generation numbers, reallocs, untracked frees and totals on hand-computed traces.

import Foundation
import HeapGenAnalysis
import HeapGenTrace
import XCTest

final class GenerationTableTests: XCTestCase {
    func testHandComputedGenerationTable() throws {
        let t = try TraceBuilder()
        // Setup: 2 allocations (150 B), 1 free. Live at m1: 0x10 (100 B).
        t.alloc(0x10, size: 100, stack: 1)
        t.alloc(0x20, size: 50, stack: 1)
        t.free(0x20)
        t.mark("m1")
        // Cycle 1: 2 allocations (210 B), 2 frees (one untracked). Peak 310. Live at m2: 0x30, 0x40.
        t.alloc(0x30, size: 200, stack: 2)
        t.alloc(0x40, size: 10, stack: 2)
        t.free(0x10)
        t.free(0x999)
        t.mark("m2")
        // Cycle 2: 1 allocation (5 B), 1 free. Peak 215. Live at m3: 0x30, 0x50.
        t.alloc(0x50, size: 5, stack: 1)
        t.free(0x40)
        t.mark("m3")
        // Tail: 1 allocation (7 B), 1 free. Peak 212. Live at exit: 0x50, 0x60.
        t.alloc(0x60, size: 7, stack: 3)
        t.free(0x30)
        let a = try t.analyze()

        XCTAssertEqual(a.generations.map(\.index), [0, 1, 2, 3])
        XCTAssertEqual(a.generations.map(\.role), [.setup, .cycle, .cycle, .tail])
        XCTAssertEqual(a.generations.map(\.label), ["m1", "m2", "m3", nil])
        XCTAssertEqual(a.generations.map(\.closingMark), [0, 1, 2, nil])
        XCTAssertEqual(a.generations.map(\.isWarmUp), [false, true, false, false])
        XCTAssertEqual(a.generations.map(\.allocations), [2, 2, 1, 1])
        XCTAssertEqual(a.generations.map(\.frees), [1, 2, 1, 1])
        XCTAssertEqual(a.generations.map(\.allocatedBytes), [150, 210, 5, 7])
        XCTAssertEqual(a.generations.map(\.liveObjects), [1, 2, 2, 2])
        XCTAssertEqual(a.generations.map(\.liveBytes), [100, 210, 205, 12])
        XCTAssertEqual(a.generations.map(\.peakLiveBytes), [150, 310, 215, 212])
        // Final snapshot = m3: 0x30 (cycle 1) and 0x50 (cycle 2) are live there.
        XCTAssertEqual(a.generations.map(\.persistentObjects), [0, 1, 1, 0])
        XCTAssertEqual(a.generations.map(\.persistentBytes), [0, 200, 5, 0])

        XCTAssertEqual(a.marks.map(\.label), ["m1", "m2", "m3"])
        XCTAssertEqual(a.marks.map(\.eventPosition), [3, 8, 11])
        XCTAssertEqual(a.marks.map(\.generation), [0, 1, 2])
        XCTAssertEqual(a.marks.map(\.liveBytes), [100, 210, 205])
        XCTAssertEqual(a.snapshot, SnapshotPoint(source: .lastMark, markIndex: 2, liveObjects: 2, liveBytes: 205))

        var expected = AnalysisTotals()
        expected.allocations = 6
        expected.frees = 5
        expected.allocatedBytes = 372
        expected.events = 14
        expected.peakBytes = 310
        expected.peakGeneration = 1
        expected.liveAtExitObjects = 2
        expected.liveAtExitBytes = 12
        expected.untrackedFrees = 1
        XCTAssertEqual(a.totals, expected)
        XCTAssertEqual(a.cycles, 2)
        XCTAssertEqual(a.judgedCycles, 1)
        XCTAssertEqual(a.process.pid, 42)
        XCTAssertEqual(a.end?.reason, .exited)
        XCTAssertEqual(a.end?.eventCount, 14)
    }

    func testReallocUndoKeepsTheBlockInItsSiteAndGeneration() throws {
        let t = try TraceBuilder()
        let p = t.alloc(size: 100, stack: 1)          // setup block, site 1
        t.mark("m1")
        t.free(p, function: .realloc)                  // cycle 1: a realloc that fails
        t.alloc(size: 50, stack: 2)
        t.undo(p)
        t.mark("m2")
        t.free(p, function: .realloc)                  // cycle 2: fails again, but only...
        t.mark("m3")
        t.undo(p)                                      // ...in cycle 3: p is not live at m3
        t.mark("m4")
        let a = try t.analyze(AnalysisOptions(warmUp: 0, maxSites: 100))

        XCTAssertEqual(a.totals.allocations, 2)
        XCTAssertEqual(a.totals.frees, 2)
        XCTAssertEqual(a.totals.reallocUndos, 2)
        XCTAssertEqual(a.totals.unmatchedReallocUndos, 0)
        XCTAssertEqual(a.totals.liveAtExitObjects, 2)
        XCTAssertEqual(a.totals.liveAtExitBytes, 150)
        XCTAssertEqual(a.generations.map(\.frees), [0, 1, 1, 0, 0])
        XCTAssertEqual(a.generations.map(\.allocations), [1, 1, 0, 0, 0])
        XCTAssertEqual(a.generations.map(\.liveObjects), [1, 2, 1, 2, 2])
        // p still belongs to the setup generation.
        XCTAssertEqual(a.generations.map(\.persistentObjects), [1, 1, 0, 0, 0])
        XCTAssertEqual(a.generations.map(\.persistentBytes), [100, 50, 0, 0, 0])
        let site = try XCTUnwrap(a.site(stackID: 1, typeID: 0))
        XCTAssertEqual(site.allocations, 1)
        XCTAssertEqual(site.liveAtMarks, [.init(mark: 0, objects: 1, bytes: 100), .init(mark: 2, objects: 0, bytes: 0),
                                          .init(mark: 3, objects: 1, bytes: 100)])
        XCTAssertEqual(site.liveAtExitBytes, 100)
        XCTAssertEqual(site.peakGeneration, 0)
        XCTAssertNil(a.site(stackID: 0, typeID: 0), "no site was made for the undo")

        // An undo after the final snapshot does not make the block persistent at the snapshot.
        let u = try TraceBuilder(name: "undoaftersettle")
        let q = u.alloc(size: 100, stack: 1)
        u.mark()
        u.mark()
        u.free(q, function: .realloc)
        u.settle()
        u.undo(q)
        let b = try u.analyze()
        XCTAssertEqual(b.snapshot.source, .settleMark)
        XCTAssertEqual(b.generations.map(\.persistentObjects), [0, 0, 0])
        XCTAssertEqual(b.totals.liveAtExitObjects, 1)
        XCTAssertEqual(b.generations[2].liveObjects, 1)
    }

    func testReallocThatMovesBelongsToTheReallocSite() throws {
        let t = try TraceBuilder()
        let p = t.alloc(size: 10, stack: 1, type: 4)
        t.mark()
        let q = t.realloc(p, size: 30, stack: 2)
        t.mark()
        t.realloc(q, to: q, size: 60, stack: 2) // in place
        t.mark()
        let a = try t.analyze(AnalysisOptions(maxSites: 10))
        XCTAssertEqual(a.generations.map(\.persistentObjects), [0, 0, 1, 0])
        XCTAssertEqual(a.generations.map(\.persistentBytes), [0, 0, 60, 0])
        XCTAssertEqual(a.site(stackID: 2, typeID: 0)?.liveAtMarks.map(\.bytes), [30, 60])
        XCTAssertEqual(a.site(stackID: 1, typeID: 4)?.liveAtMarks.map(\.objects), [1, 0])
        XCTAssertEqual(a.totals.liveAtExitBytes, 60)
    }

    func testUntrackedFreesAndInconsistenciesAreCounted() throws {
        let t = try TraceBuilder()
        t.free(0xAAAA)                              // allocated before tracing began
        t.mark()
        t.free(0xBBBB)
        t.free(0xCCCC, function: .realloc)          // realloc of an untracked block...
        t.alloc(size: 20, stack: 1, function: .realloc) // ...that succeeds
        t.undo(0xDDDD)                              // nothing pending there
        let p = t.alloc(0x5000, size: 8, stack: 1)
        t.alloc(p, size: 16, stack: 2)              // same address while live
        t.mark()
        let a = try t.analyze()
        XCTAssertEqual(a.totals.untrackedFrees, 3)
        XCTAssertEqual(a.totals.frees, 3)
        XCTAssertEqual(a.generations.map(\.frees), [1, 2, 0])
        XCTAssertEqual(a.totals.unmatchedReallocUndos, 1)
        XCTAssertEqual(a.totals.duplicateAllocations, 1)
        XCTAssertEqual(a.totals.liveAtExitObjects, 2)
        XCTAssertEqual(a.totals.liveAtExitBytes, 36)
        XCTAssertTrue(a.notes.contains { $0.contains("already live") }, "\(a.notes)")
        XCTAssertTrue(a.notes.contains { $0.contains("matched no pending realloc") }, "\(a.notes)")
    }

    func testStaleReallocEntriesAreNeverRevived() throws {
        let t = try TraceBuilder()
        let p = t.alloc(0x7000, size: 10, stack: 1)
        t.mark()
        t.realloc(p, to: 0x8000, size: 20, stack: 2)   // moved: p stays "pending", stale
        t.free(0x7000, function: .realloc)             // p is not live: untracked
        t.undo(0x7000)                                 // must not bring back the old 10-byte block
        t.alloc(0x7000, size: 30, stack: 3)            // malloc reuses p
        t.free(0x7000, function: .realloc)             // a realloc of the new block...
        t.undo(0x7000)                                 // ...that fails: the 30-byte block lives on
        t.mark()
        let a = try t.analyze(AnalysisOptions(maxSites: 10))
        XCTAssertEqual(a.totals.untrackedFrees, 1)
        XCTAssertEqual(a.totals.unmatchedReallocUndos, 1)
        XCTAssertEqual(a.totals.liveAtExitObjects, 2)
        XCTAssertEqual(a.totals.liveAtExitBytes, 50)
        XCTAssertEqual(a.site(stackID: 3, typeID: 0)?.liveAtExitBytes, 30)
        XCTAssertEqual(a.site(stackID: 1, typeID: 0)?.liveAtExitObjects, 0)
    }

    func testEndCountersAndLostEvents() throws {
        let t = try TraceBuilder()
        t.alloc(size: 8, stack: 1)
        t.lost(5)
        t.mark()
        t.lost(2)
        t.mark()
        try t.finish(EndRecord(reason: .signaled, status: 9, producerWaits: 3, producerWaitNanoseconds: 4_000,
                               lostEvents: 7, tornEvents: 1, arenaFull: 2))
        let a = try t.analyze()
        XCTAssertEqual(a.totals.lostRecords, 7)
        XCTAssertEqual(a.totals.lostEvents, 7)
        XCTAssertEqual(a.totals.producerWaits, 3)
        XCTAssertEqual(a.totals.producerWaitNanoseconds, 4_000)
        XCTAssertEqual(a.totals.tornEvents, 1)
        XCTAssertEqual(a.totals.arenaFull, 2)
        XCTAssertEqual(a.end?.reason, .signaled)
        XCTAssertTrue(a.notes.contains { $0.contains("lost 7") }, "\(a.notes)")
    }

    /// A thread inside malloc when its image exec'd or was killed leaves a claimed slot
    /// that is never published: a call the end cut short, not a fault of the recording.
    func testTornEventsAtAnExecOrKillAreCallsCutShort() throws {
        for (end, says) in [(EndRecord(reason: .execed, tornEvents: 1), "1 allocator call was cut short by the exec"),
                            (EndRecord(reason: .signaled, status: 9, tornEvents: 2),
                             "2 allocator calls were cut short by signal 9 (SIGKILL)"),
                            (EndRecord(reason: .exited, tornEvents: 1), "The shim lost 0 and discarded 1 torn events"),
                            (EndRecord(reason: .execed, lostEvents: 3, tornEvents: 1), "The shim lost 3 and discarded 1")] {
            let t = try TraceBuilder()
            t.alloc(size: 8, stack: 1)
            try t.finish(end)
            let a = try t.analyze()
            XCTAssertEqual(a.notes.filter { $0.contains("cut short") || $0.contains("torn") }.count, 1, "\(a.notes)")
            XCTAssertTrue(a.notes.contains { $0.hasPrefix(says) }, "\(end): \(a.notes)")
        }
        XCTAssertNil(EndRecord(reason: .execed).cutShortBy, "no torn events, nothing cut short")
    }

    func testStreamingFinishAndCopies() throws {
        let t = try TraceBuilder()
        t.mark()
        for _ in 1...4 {
            t.alloc(size: 8, stack: 1)
            t.mark()
        }
        let records = try t.records()
        let cut = records.count / 2
        var first = GenerationAnalyzer()
        for record in records[..<cut] { first.consume(record) }
        var second = first // copy-on-write: consuming into one leaves the other alone
        for record in records[cut...] { second.consume(record) }
        var reference = GenerationAnalyzer()
        for record in records[..<cut] { reference.consume(record) }

        let partial = first.finish()
        XCTAssertEqual(partial, reference.finish())
        XCTAssertNil(partial.end)
        XCTAssertTrue(partial.notes.contains { $0.contains("No end record") })
        XCTAssertEqual(second.finish(), try GenerationAnalyzer.analyze(path: t.path))
        XCTAssertEqual(second.finish().findings.first?.objectsPerCycle, [1, 1, 1, 1])
        // finish() does not change the analyzer.
        XCTAssertEqual(second.finish(), second.finish())
    }

    func testModulesAndJSONShape() throws {
        let t = try TraceBuilder()
        let a1 = ModuleRecord(loadBias: 0x40_0000, path: "/bin/app", buildID: [1, 2],
                              segments: [.init(vaddr: 0, memsz: 0x2000, flags: 5)])
        let lib = ModuleRecord(loadBias: 0x7000_0000, path: "/lib/a.so", buildID: [],
                               segments: [.init(vaddr: 0x1000, memsz: 0x1000, flags: 5)])
        let lib2 = ModuleRecord(loadBias: 0x7000_0000, path: "/lib/b.so", buildID: [],
                                segments: [.init(vaddr: 0x1000, memsz: 0x1000, flags: 5)])
        t.moduleLoad(a1)
        t.moduleLoad(lib)
        t.alloc(size: 8, stack: 1, type: 2)
        t.mark()
        t.moduleUnload(loadBias: 0x7000_0000)
        t.moduleLoad(lib2)
        t.alloc(size: 8, stack: 3)
        t.mark()
        let a = try t.analyze()
        XCTAssertEqual(a.modules.map(\.kind), [.load, .load, .unload, .load])
        XCTAssertEqual(a.modules.map(\.generation), [0, 0, 1, 1])
        XCTAssertEqual(a.modules.map(\.recordIndex), a.modules.map(\.recordIndex).sorted())
        let at1 = try XCTUnwrap(a.stackRecordIndices[1])
        let at3 = try XCTUnwrap(a.stackRecordIndices[3])
        XCTAssertEqual(ModuleTimeline(events: a.modules).module(containing: 0x7000_1800, at: at1)?.path, "/lib/a.so")
        XCTAssertEqual(ModuleTimeline(events: a.modules).module(containing: 0x7000_1800, at: at3)?.path, "/lib/b.so")
        XCTAssertEqual(ModuleTimeline(events: a.modules).module(containing: 0x40_0010, at: at3)?.path, "/bin/app")
        XCTAssertNil(ModuleTimeline(events: a.modules).module(containing: 0x7000_0800, at: at3))
        XCTAssertNil(ModuleTimeline(events: a.modules).module(containing: 0x40_0010, at: 0))

        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(a)) as? [String: Any]
        XCTAssertEqual((json?["typeNames"] as? [String: String])?["2"], TraceBuilder.typeName(2))
        XCTAssertNotNil((json?["stacks"] as? [String: Any])?["1"])
        XCTAssertNotNil(json?["generations"] as? [Any])
        XCTAssertNil((json?["options"] as? [String: Any])?["unreachable"])
    }
}
