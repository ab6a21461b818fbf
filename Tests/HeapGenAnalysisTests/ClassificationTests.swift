// Abandoned, cache, transient and leaked sites on synthetic traces with known answers.

@testable import HeapGenAnalysis
import HeapGenTrace
import XCTest

final class ClassificationTests: XCTestCase {
    /// Adds short-lived churn (allocated and freed within the cycle) from stack 99.
    private func churn(_ t: TraceBuilder, _ n: Int = 5) {
        let blocks = (0..<n).map { _ in t.alloc(size: 32, stack: 99) }
        for b in blocks { t.free(b) }
    }

    /// Idle timed cycles are merged into the next (a staircase with three idle cycles before
    /// the exit stays one); a process of which nothing was recorded (Chromium: PartitionAlloc
    /// owns malloc) is said to be that, not idle.
    func testIdleTimedCyclesAreMergedAndAnEmptyTraceIsNamed() throws {
        let t = try TraceBuilder()
        t.alloc(size: 1_000, stack: 7)
        t.mark("every #1", origin: .timer)
        for cycle in 2...8 {
            for _ in 0..<2 { _ = t.alloc(size: 48, stack: 1) }
            t.mark("every #\(cycle)", origin: .timer)
        }
        for cycle in 9...11 { t.mark("every #\(cycle)", origin: .timer) }
        let a = try t.analyze()
        XCTAssertEqual(a.findings.map(\.kind), [.abandoned], "\(a.findings)")
        XCTAssertTrue(a.notes.contains { $0.hasPrefix("3 timed cycles in which the program made no heap event") }, "\(a.notes)")
        // The program's own marks: the idle cycles are judged (misses), no such note.
        let own = try TraceBuilder()
        own.alloc(size: 1_000, stack: 7)
        own.mark("start")
        for _ in 2...8 {
            for _ in 0..<2 { _ = own.alloc(size: 48, stack: 1) }
            own.mark("cycle")
        }
        for _ in 9...11 { own.mark("cycle") }
        let b = try own.analyze()
        XCTAssertEqual(b.findings.filter { $0.kind == .abandoned }.count, 0, "\(b.findings)")
        XCTAssertFalse(b.notes.contains { $0.contains("no heap event") }, "\(b.notes)")
        // Nothing recorded at all.
        let empty = try TraceBuilder()
        for cycle in 1...4 { empty.mark("every #\(cycle)", origin: .timer) }
        let c = try empty.analyze()
        XCTAssertTrue(c.notes.contains { $0.hasPrefix("No allocation or free of this process was recorded") }, "\(c.notes)")
        XCTAssertFalse(c.notes.contains { $0.contains("slept or waited") }, "\(c.notes)")
    }

    func testStaircaseIsAbandoned() throws {
        let t = try TraceBuilder()
        t.alloc(size: 1_000, stack: 7) // setup state
        t.mark("start")
        var kept: [UInt64] = []
        for cycle in 1...6 {
            churn(t)
            for _ in 0..<3 { kept.append(t.alloc(size: 48, stack: 1, type: 3)) }
            t.mark("cycle \(cycle)")
        }
        let a = try t.analyze()
        XCTAssertEqual(a.cycles, 6)
        XCTAssertEqual(a.judgedCycles, 5)
        XCTAssertEqual(a.findings.count, 1, "\(a.findings)")
        let f = try XCTUnwrap(a.finding(stack: 1, type: 3))
        XCTAssertEqual(f.kind, .abandoned)
        XCTAssertEqual(f.objectsPerCycle, [3, 3, 3, 3, 3, 3])
        XCTAssertEqual(f.bytesPerCycle, [144, 144, 144, 144, 144, 144])
        XCTAssertEqual(f.cycles, 5)
        XCTAssertEqual(f.cyclesWithGrowth, 5)
        XCTAssertEqual(f.averageBytesPerCycle, 144)
        XCTAssertEqual(f.averageObjectsPerCycle, 3)
        XCTAssertEqual(f.firstCycleWithGrowth, 1)
        // Survivors: allocated after the warm-up (cycles 2…6) and live at the last mark.
        XCTAssertEqual(f.survivingObjects, 15)
        XCTAssertEqual(f.survivingBytes, 15 * 48)
        XCTAssertEqual(f.snapshotObjects, 18)
        XCTAssertEqual(f.liveAtExitObjects, 18)
        XCTAssertEqual(f.typeName, TraceBuilder.typeName(3))
        XCTAssertEqual(a.typeNames[3], TraceBuilder.typeName(3))
        XCTAssertEqual(a.stacks[1]?.count, 2)
        XCTAssertNotNil(a.stackRecordIndices[1])
        let site = try XCTUnwrap(a.site(stackID: 1, typeID: 3))
        XCTAssertEqual(site.behavior, .abandoned)
        XCTAssertEqual(site.allocations, 18)
        XCTAssertEqual(site.liveAtMarks.map(\.objects), [3, 6, 9, 12, 15, 18])
        XCTAssertEqual(site.live(atMark: 0).objects, 0)
        XCTAssertEqual(site.live(atMark: 4).objects, 12)
        XCTAssertTrue(a.notes.isEmpty, "\(a.notes)")
    }

    func testOneMissedCycleIsStillAbandoned() throws {
        let t = try TraceBuilder()
        t.mark()
        for cycle in 1...6 {
            if cycle != 4 { t.alloc(size: 16, stack: 2) }
            t.mark()
        }
        let a = try t.analyze()
        let f = try XCTUnwrap(a.finding(stack: 2))
        XCTAssertEqual(f.kind, .abandoned)
        XCTAssertEqual(f.objectsPerCycle, [1, 1, 1, 0, 1, 1])
        XCTAssertEqual(f.cyclesWithGrowth, 4)
        XCTAssertEqual(f.cycles, 5)
        XCTAssertEqual(f.survivingObjects, 4)
    }

    func testTwoMissedCyclesAreNotAbandoned() throws {
        let t = try TraceBuilder()
        t.mark()
        for cycle in 1...6 {
            if cycle != 3 && cycle != 5 { t.alloc(size: 16, stack: 2) }
            t.mark()
        }
        let a = try t.analyze()
        XCTAssertTrue(a.findings.isEmpty, "\(a.findings)")
        XCTAssertEqual(a.site(stackID: 2, typeID: 0)?.behavior, .grown)

        // Allowing two misses makes it abandoned.
        let lenient = try GenerationAnalyzer.analyze(path: t.path, options: AnalysisOptions(toleratedMisses: 2))
        XCTAssertEqual(lenient.finding(stack: 2)?.kind, .abandoned)
    }

    /// The tolerance never lets half the judged cycles miss: with 2 judged cycles, a site that
    /// grew once (a lazy initialisation in the second cycle) is no staircase; one that grew in
    /// both is. With 3 judged cycles one miss is still allowed.
    func testTheToleranceNeedsAMajorityOfGrowingCycles() throws {
        func analyze(_ grows: [Bool], tolerate: Int = 1) throws -> Analysis {
            let t = try TraceBuilder()
            t.mark()
            for g in grows {
                if g { t.alloc(size: 16, stack: 2) }
                t.mark()
            }
            try t.finish()
            return try GenerationAnalyzer.analyze(path: t.path, options: AnalysisOptions(toleratedMisses: tolerate))
        }
        // Warm-up, then 2 judged cycles.
        let once = try analyze([false, false, true])
        XCTAssertEqual(once.judgedCycles, 2)
        XCTAssertNil(once.finding(stack: 2), "1 of 2 judged cycles: \(once.findings)")
        // Grew, then flat over the last half: a cache, as before, but no longer abandoned.
        XCTAssertEqual(try analyze([false, true, false]).finding(stack: 2)?.kind, .cache)
        XCTAssertEqual(try analyze([true, true, false], tolerate: 5).finding(stack: 2)?.kind, .cache,
                       "no tolerance reaches half")
        let both = try XCTUnwrap(try analyze([false, true, true]).finding(stack: 2))
        XCTAssertEqual(both.kind, .abandoned)
        XCTAssertEqual(both.cyclesWithGrowth, 2)
        // 3 judged cycles: 2 of 3 is a majority and within one miss.
        XCTAssertEqual(try analyze([false, true, false, true]).finding(stack: 2)?.kind, .abandoned)
        // 4 judged cycles with 2 misses allowed still need 3.
        XCTAssertNil(try analyze([false, true, false, true, false], tolerate: 2).finding(stack: 2))
        XCTAssertEqual(try analyze([false, true, false, true, true], tolerate: 2).finding(stack: 2)?.kind, .abandoned)
    }

    func testCacheFilledInFirstCycle() throws {
        let t = try TraceBuilder()
        t.mark()
        for cycle in 1...6 {
            if cycle == 1 { for _ in 0..<10 { t.alloc(size: 64, stack: 4, type: 1) } }
            churn(t)
            t.mark()
        }
        let a = try t.analyze()
        XCTAssertEqual(a.findings.count, 1)
        let f = try XCTUnwrap(a.finding(stack: 4, type: 1))
        XCTAssertEqual(f.kind, .cache)
        XCTAssertEqual(f.objectsPerCycle, [10, 0, 0, 0, 0, 0])
        XCTAssertEqual(f.cyclesWithGrowth, 0)
        XCTAssertEqual(f.survivingObjects, 0, "filled during the warm-up")
        XCTAssertEqual(f.snapshotObjects, 10)
        XCTAssertEqual(f.firstCycleWithGrowth, 1)
        XCTAssertEqual(a.site(stackID: 4, typeID: 1)?.behavior, .cache)
    }

    func testCacheFillingOverEarlyCyclesThenFlat() throws {
        let t = try TraceBuilder()
        t.mark()
        for cycle in 1...6 {
            if cycle <= 3 { for _ in 0..<4 { t.alloc(size: 100, stack: 5) } }
            t.mark()
        }
        let a = try t.analyze()
        let f = try XCTUnwrap(a.finding(stack: 5))
        XCTAssertEqual(f.kind, .cache)
        XCTAssertEqual(f.objectsPerCycle, [4, 4, 4, 0, 0, 0])
        XCTAssertEqual(f.cyclesWithGrowth, 2)
        XCTAssertEqual(f.survivingObjects, 8)
    }

    func testBoundedLRUIsNotAFinding() throws {
        let t = try TraceBuilder()
        var lru: [UInt64] = []
        for _ in 0..<5 { lru.append(t.alloc(size: 80, stack: 6)) }
        t.mark()
        for _ in 1...6 {
            lru.append(t.alloc(size: 80, stack: 6)) // insert
            t.free(lru.removeFirst())               // evict the oldest (allocated in an earlier cycle)
            t.mark()
        }
        let a = try t.analyze()
        XCTAssertTrue(a.findings.isEmpty, "\(a.findings)")
        let site = try XCTUnwrap(a.site(stackID: 6, typeID: 0))
        XCTAssertEqual(site.liveAtExitObjects, 5)
        XCTAssertEqual(site.peakBytes, 6 * 80)
        XCTAssertEqual(site.behavior, .transient)
    }

    func testBufferGrownByReallocIsAbandonedByBytes() throws {
        let t = try TraceBuilder()
        var buffer = t.alloc(size: 100, stack: 10)
        t.mark()
        var size: UInt64 = 100
        for cycle in 1...6 {
            size += 100
            // Alternate moving and in-place reallocs.
            buffer = t.realloc(buffer, to: cycle % 2 == 0 ? buffer : nil, size: size, stack: 11)
            t.mark()
        }
        let a = try t.analyze()
        XCTAssertEqual(a.findings.count, 1, "\(a.findings)")
        let f = try XCTUnwrap(a.finding(stack: 11))
        XCTAssertEqual(f.kind, .abandoned)
        XCTAssertEqual(f.objectsPerCycle, [1, 0, 0, 0, 0, 0])
        XCTAssertEqual(f.bytesPerCycle, [200, 100, 100, 100, 100, 100])
        XCTAssertEqual(f.cyclesWithGrowth, 5)
        XCTAssertEqual(f.averageBytesPerCycle, 100)
        XCTAssertEqual(f.survivingObjects, 1)
        XCTAssertEqual(f.survivingBytes, 700)
        XCTAssertEqual(a.totals.allocations, 7)
        XCTAssertEqual(a.totals.frees, 6)
        XCTAssertEqual(a.totals.liveAtExitObjects, 1)
        XCTAssertEqual(a.totals.liveAtExitBytes, 700)
        XCTAssertEqual(a.totals.untrackedFrees, 0)
        // The malloc site lost its block in cycle 1.
        XCTAssertEqual(a.site(stackID: 10, typeID: 0)?.liveAtExitObjects ?? 0, 0)
    }

    func testTransientSpikeHasNoFindingButAPeak() throws {
        let t = try TraceBuilder()
        t.alloc(size: 500, stack: 1)
        t.mark()
        for cycle in 1...6 {
            churn(t)
            if cycle == 3 {
                let big = (0..<4).map { _ in t.alloc(size: 1 << 20, stack: 12) }
                big.forEach { t.free($0) }
            }
            t.mark()
        }
        let a = try t.analyze()
        XCTAssertTrue(a.findings.isEmpty, "\(a.findings)")
        XCTAssertEqual(a.totals.peakBytes, 500 + 4 << 20)
        XCTAssertEqual(a.totals.peakGeneration, 3)
        XCTAssertEqual(a.generations[3].peakLiveBytes, 500 + 4 << 20)
        XCTAssertEqual(a.generations[2].peakLiveBytes, 500 + 5 * 32)
        let site = try XCTUnwrap(a.site(stackID: 12, typeID: 0), "kept as a top site by peak")
        XCTAssertEqual(site.peakBytes, 4 << 20)
        XCTAssertEqual(site.peakGeneration, 3)
        XCTAssertEqual(site.behavior, .transient)
        XCTAssertEqual(site.liveAtExitObjects, 0)
        XCTAssertTrue(site.liveAtMarks.isEmpty, "never live at a mark")
    }

    func testSettleMarkIsTheFinalSnapshot() throws {
        // Site 20 grows by one block per cycle, but each cycle's blocks are released
        // asynchronously; the last ones go between the last mark and the settle mark.
        // Site 21 really is abandoned.
        func build(settle: Bool) throws -> Analysis {
            let t = try TraceBuilder(name: "settle\(settle)")
            t.mark()
            var pending: [UInt64] = []
            for cycle in 1...6 {
                t.alloc(size: 24, stack: 21)
                pending.append(t.alloc(size: 40, stack: 20))
                pending.append(t.alloc(size: 40, stack: 20))
                if cycle > 1 { t.free(pending.removeFirst()) } // one of the older ones goes
                t.mark()
            }
            pending.forEach { t.free($0) } // released asynchronously after the last cycle
            if settle { t.settle() }
            t.alloc(size: 8, stack: 22) // teardown
            return try t.analyze()
        }

        let withSettle = try build(settle: true)
        XCTAssertEqual(withSettle.snapshot.source, .settleMark)
        XCTAssertEqual(withSettle.snapshot.markIndex, 7)
        XCTAssertEqual(withSettle.marks[7].role, .settle)
        XCTAssertEqual(withSettle.cycles, 6, "the settle mark is not a cycle boundary")
        XCTAssertEqual(withSettle.generations.count, 8)
        XCTAssertEqual(withSettle.generations[7].role, .tail)
        XCTAssertNil(withSettle.generations[7].label)
        XCTAssertEqual(withSettle.findings.map(\.stackID), [21])
        let f = try XCTUnwrap(withSettle.finding(stack: 21))
        XCTAssertEqual(f.survivingObjects, 5)
        // Nothing of site 20 survives to the settle mark.
        XCTAssertEqual(withSettle.site(stackID: 20, typeID: 0)?.snapshotObjects ?? 0, 0)
        for g in 1...6 {
            XCTAssertEqual(withSettle.generations[g].persistentObjects, 1, "generation \(g): only site 21's block")
        }
        XCTAssertEqual(withSettle.generations[7].persistentObjects, 0, "teardown comes after the snapshot")

        // Without the settle mark, the same growth is judged at the last mark: site 20 is
        // abandoned and its last blocks count as survivors.
        let without = try build(settle: false)
        XCTAssertEqual(without.snapshot.source, .lastMark)
        XCTAssertEqual(without.snapshot.markIndex, 6)
        let g = try XCTUnwrap(without.finding(stack: 20))
        XCTAssertEqual(g.kind, .abandoned)
        XCTAssertEqual(g.objectsPerCycle, [2, 1, 1, 1, 1, 1])
        XCTAssertEqual(g.survivingObjects, 7, "one block of cycle 3, two of each of cycles 4-6")
        XCTAssertEqual(without.generations[6].persistentObjects, 3)
    }

    func testSettleMarkFollowedByOrdinaryMarksIsIgnored() throws {
        let t = try TraceBuilder()
        t.mark()
        for cycle in 1...4 {
            t.alloc(size: 10, stack: 1)
            if cycle == 2 { t.settle() }
            t.mark()
        }
        let a = try t.analyze()
        XCTAssertEqual(a.cycles, 4)
        XCTAssertEqual(a.marks[2].role, .ignoredSettle)
        XCTAssertEqual(a.snapshot.source, .lastMark)
        XCTAssertEqual(a.snapshot.markIndex, 5)
        XCTAssertEqual(a.finding(stack: 1)?.objectsPerCycle, [1, 1, 1, 1])
        XCTAssertTrue(a.notes.contains { $0.contains("ignored") }, "\(a.notes)")
    }

    func testWarmUpOfTwoIgnoresTheFirstTwoCycles() throws {
        let t = try TraceBuilder()
        t.mark()
        for cycle in 1...6 {
            // Site 30: big growth in cycles 1-2, then +1 per cycle.
            for _ in 0..<(cycle <= 2 ? 10 : 1) { t.alloc(size: 8, stack: 30) }
            // Site 31: grows in cycles 1, 2, 3 and 5: abandoned with warm-up 1 (one miss among
            // cycles 2-6), not with warm-up 2 (two misses among cycles 3-6).
            if cycle != 4 && cycle != 6 || cycle <= 2 { t.alloc(size: 8, stack: 31) }
            t.mark()
        }
        let one = try t.analyze(AnalysisOptions(warmUp: 1))
        XCTAssertEqual(one.finding(stack: 31)?.kind, nil, "cycles 2,3,5 of 2-6: two misses")

        let two = try GenerationAnalyzer.analyze(path: t.path, options: AnalysisOptions(warmUp: 2))
        XCTAssertEqual(two.judgedCycles, 4)
        XCTAssertTrue(two.generations[1].isWarmUp && two.generations[2].isWarmUp && !two.generations[3].isWarmUp)
        let f = try XCTUnwrap(two.finding(stack: 30))
        XCTAssertEqual(f.kind, .abandoned)
        XCTAssertEqual(f.cycles, 4)
        XCTAssertEqual(f.objectsPerCycle, [10, 10, 1, 1, 1, 1], "deltas of all cycles, warm-up included")
        XCTAssertEqual(f.averageObjectsPerCycle, 1)
        XCTAssertEqual(f.averageBytesPerCycle, 8)
        XCTAssertEqual(f.survivingObjects, 4, "only blocks of cycles 3-6")
        XCTAssertEqual(f.firstCycleWithGrowth, 1)
        let f1 = try XCTUnwrap(one.finding(stack: 30))
        XCTAssertEqual(f1.averageObjectsPerCycle, 14.0 / 5)
        XCTAssertEqual(f1.survivingObjects, 14)

        // Growth only in the warm-up cycles, then flat: with warm-up 2 a cache, not abandoned.
        let c = try TraceBuilder(name: "warmupcache")
        c.mark()
        for cycle in 1...6 {
            if cycle <= 2 { for _ in 0..<3 { c.alloc(size: 8, stack: 32) } }
            c.mark()
        }
        let cache = try c.analyze(AnalysisOptions(warmUp: 2))
        XCTAssertEqual(cache.finding(stack: 32)?.kind, .cache)
        XCTAssertEqual(cache.finding(stack: 32)?.cyclesWithGrowth, 0)
    }

    func testTooFewCyclesGiveNoFindingsAndANote() throws {
        let t = try TraceBuilder()
        t.mark()
        for _ in 1...2 {
            for _ in 0..<5 { t.alloc(size: 8, stack: 1) }
            t.mark()
        }
        let a = try t.analyze()
        XCTAssertEqual(a.cycles, 2)
        XCTAssertEqual(a.judgedCycles, 1)
        XCTAssertTrue(a.findings.isEmpty)
        XCTAssertTrue(a.notes.contains { $0.contains("at least 2 cycles after the warm-up") }, "\(a.notes)")

        // With no warm-up the same two cycles are enough.
        let b = try GenerationAnalyzer.analyze(path: t.path, options: AnalysisOptions(warmUp: 0))
        XCTAssertEqual(b.finding(stack: 1)?.kind, .abandoned)

        // No marks at all.
        let n = try TraceBuilder(name: "nomarks")
        n.alloc(size: 8, stack: 1)
        let none = try n.analyze()
        XCTAssertEqual(none.cycles, 0)
        XCTAssertTrue(none.findings.isEmpty)
        XCTAssertEqual(none.generations.count, 1)
        XCTAssertEqual(none.generations[0].role, .setup)
        XCTAssertNil(none.generations[0].label)
        XCTAssertEqual(none.generations[0].persistentObjects, 1, "the snapshot is the end of the trace")
        XCTAssertEqual(none.snapshot.source, .endOfTrace)
        XCTAssertTrue(none.notes.contains { $0.contains("no generation marks") }, "\(none.notes)")
    }

    func testThresholds() throws {
        let t = try TraceBuilder()
        t.mark()
        for _ in 1...6 {
            t.alloc(size: 10, stack: 1)      // 10 B per cycle
            t.alloc(size: 5_000, stack: 2)   // 5000 B per cycle
            t.mark()
        }
        let a = try t.analyze(AnalysisOptions(minBytesPerCycle: 1_000))
        XCTAssertEqual(a.findings.map(\.stackID), [2])
        XCTAssertEqual(a.site(stackID: 1, typeID: 0)?.behavior, .grown, "below the threshold, but not a cache")
        let b = try GenerationAnalyzer.analyze(path: t.path, options: AnalysisOptions(minObjectsPerCycle: 2))
        XCTAssertTrue(b.findings.isEmpty)
        let c = try GenerationAnalyzer.analyze(path: t.path)
        XCTAssertEqual(c.findings.map(\.stackID), [2, 1], "by bytes per cycle")
    }

    func testUnreachableBlocksAreLeaked() throws {
        let t = try TraceBuilder()
        t.mark()
        var unreachable = Set<UInt64>()
        var partly = Set<UInt64>()
        for cycle in 1...4 {
            unreachable.insert(t.alloc(size: 32, stack: 40))         // every block unreachable
            let p = t.alloc(size: 32, stack: 41)                     // only some unreachable
            if cycle.isMultiple(of: 2) { partly.insert(p) }
            t.alloc(size: 16, stack: 42)                              // reachable, abandoned
            t.mark()
        }
        let withLeaks = try t.analyze(AnalysisOptions(unreachable: unreachable.union(partly)))
        // A site leaks with any unreachable block (LeakSanitizer's count): 41 leaks 2 of its 4.
        XCTAssertEqual(withLeaks.findings.map(\.kind), [.abandoned, .leaked, .leaked])
        XCTAssertEqual(withLeaks.findings.map(\.stackID), [42, 40, 41])
        XCTAssertEqual(withLeaks.finding(stack: 40)?.liveAtExitObjects, 4)
        XCTAssertEqual(withLeaks.finding(stack: 40)?.leakedObjects, 4)
        XCTAssertEqual(withLeaks.finding(stack: 40)?.leakedBytes, 128)
        XCTAssertEqual(withLeaks.finding(stack: 41)?.leakedObjects, 2)
        XCTAssertEqual(withLeaks.finding(stack: 41)?.leakedBytes, 64)
        XCTAssertNil(withLeaks.finding(stack: 42)?.leakedObjects)
        XCTAssertEqual(withLeaks.site(stackID: 40, typeID: 0)?.behavior, .leaked)
        XCTAssertNil(withLeaks.options.unreachable)
        XCTAssertTrue(withLeaks.notes.contains { $0.contains("unreachable") })

        let without = try GenerationAnalyzer.analyze(path: t.path)
        XCTAssertFalse(without.findings.contains { $0.kind == .leaked })

        // Leaks do not need cycles.
        let n = try TraceBuilder(name: "leaknomarks")
        let lost = n.alloc(size: 8, stack: 1)
        n.alloc(size: 8, stack: 2)
        let a = try n.analyze(AnalysisOptions(unreachable: [lost]))
        XCTAssertEqual(a.findings.map(\.kind), [.leaked])
        XCTAssertEqual(a.findings.first?.stackID, 1)
        XCTAssertEqual(a.findings.first?.cycles, 0)
    }

    func testSwiftTypesFormSitesAndRollUpByType() throws {
        let t = try TraceBuilder()
        t.mark()
        for _ in 1...4 {
            t.alloc(size: 32, stack: 50, type: 1)  // same stack, two types: two sites
            t.alloc(size: 64, stack: 50, type: 2)
            t.alloc(size: 32, stack: 51, type: 1)  // type 1 from a second stack
            t.mark()
        }
        let a = try t.analyze()
        XCTAssertEqual(a.siteCount, 3)
        XCTAssertEqual(Set(a.findings.map { "\($0.stackID)/\($0.typeID)" }), ["50/1", "50/2", "51/1"])
        XCTAssertEqual(a.finding(stack: 50, type: 2)?.bytesPerCycle, [64, 64, 64, 64])
        XCTAssertEqual(a.finding(stack: 50, type: 1)?.typeName, TraceBuilder.typeName(1))
        XCTAssertEqual(a.typeRollups.map(\.typeID), [1, 2], "by snapshot bytes (256 vs 256), then id")
        let one = try XCTUnwrap(a.typeRollups.first { $0.typeID == 1 })
        XCTAssertEqual(one.sites, 2)
        XCTAssertEqual(one.allocations, 8)
        XCTAssertEqual(one.allocatedBytes, 256)
        XCTAssertEqual(one.snapshotObjects, 8)
        XCTAssertEqual(one.liveAtExitBytes, 256)
        XCTAssertEqual(one.objectsPerCycle, [2, 2, 2, 2])
        XCTAssertEqual(one.bytesPerCycle, [64, 64, 64, 64])
        XCTAssertEqual(one.typeName, TraceBuilder.typeName(1))
    }

    func testOrderingIsDeterministic() throws {
        let t = try TraceBuilder()
        t.mark()
        for _ in 1...5 {
            // Same bytes per cycle, different objects; same everything but the stack.
            t.alloc(size: 100, stack: 63)
            t.alloc(size: 50, stack: 62); t.alloc(size: 50, stack: 62)
            t.alloc(size: 100, stack: 61)
            t.alloc(size: 400, stack: 64)
            t.alloc(size: 7, stack: 65, type: 9)
            t.mark()
        }
        let a = try t.analyze()
        XCTAssertEqual(a.findings.map(\.stackID), [64, 62, 61, 63, 65])
        let b = try GenerationAnalyzer.analyze(path: t.path)
        XCTAssertEqual(a, b)
        // The consume API gives the same result, and JSON round-trips.
        var analyzer = GenerationAnalyzer()
        for record in try t.records() { analyzer.consume(record) }
        XCTAssertEqual(analyzer.finish(), a)
        let data = try JSONEncoder().encode(a)
        XCTAssertEqual(try JSONDecoder().decode(Analysis.self, from: data), a)
    }

    /// Timed marks that landed in a teardown: the last peak of the live heap, when the heap
    /// only fell after it by more than a quarter, every later mark was the timer's, and two
    /// cycles after the warm-up remain.
    func testTeardownStartIsTheLastPeakBeforeAFallAtTimedMarks() {
        let timed = { (n: Int) in [Bool](repeating: true, count: n) }
        let rising: [UInt64] = [100, 200, 300, 400, 500, 600]
        XCTAssertNil(GenerationAnalyzer.teardownStart(live: rising, timed: timed(6), warmUp: 1), "no fall")
        XCTAssertEqual(GenerationAnalyzer.teardownStart(live: rising + [20, 20], timed: timed(8), warmUp: 1), 5)
        XCTAssertEqual(GenerationAnalyzer.teardownStart(live: rising + [400, 20], timed: timed(8), warmUp: 1), 5,
                       "a fall over several marks")
        XCTAssertNil(GenerationAnalyzer.teardownStart(live: rising + [500], timed: timed(7), warmUp: 1),
                     "a sixth less is no teardown")
        XCTAssertNil(GenerationAnalyzer.teardownStart(live: rising + [20], timed: timed(6) + [false], warmUp: 1),
                     "the program's own mark ends a cycle where it says")
        XCTAssertEqual(GenerationAnalyzer.teardownStart(live: rising + [20], timed: [false] + timed(6), warmUp: 1), 5,
                       "earlier marks may be anyone's")
        XCTAssertNil(GenerationAnalyzer.teardownStart(live: [100, 200, 300, 10], timed: timed(4), warmUp: 1),
                     "one judged cycle would be left")
        XCTAssertEqual(GenerationAnalyzer.teardownStart(live: [100, 200, 300, 10], timed: timed(4), warmUp: 0), 2)
    }
}
