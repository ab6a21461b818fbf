// Judging groups of sites as one (a source call the compiler duplicated).

import Foundation
import HeapGenAnalysis
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class RegroupingTests: XCTestCase {
    /// Both copies of a peeled call (stacks 1 and 2) are one group; everything else alone.
    private func peeledCopies(_ stackID: UInt32, _ typeID: UInt32) -> String? {
        stackID == 1 || stackID == 2 ? "leak_session" : nil
    }

    /// gcc peels the loop's first iteration: stack 1 allocates in cycle 1 only, stack 2 from
    /// cycle 2 on. Alone, stack 1 is a cache and stack 2 an abandoned site missing cycle 1.
    func testPeeledCopiesSummedAreOneAbandonedStaircase() throws {
        let t = try TraceBuilder()
        t.alloc(size: 500, stack: 7)          // setup, flat
        t.mark("start")
        for cycle in 1...6 {
            for _ in 0..<3 { t.alloc(size: 64, stack: cycle == 1 ? 1 : 2) }
            let scratch = t.alloc(size: 32, stack: 9)
            t.free(scratch)
            t.mark()
        }
        let a = try t.analyze()
        XCTAssertTrue(a.canRegroup)
        XCTAssertEqual(a.finding(stack: 1)?.kind, .cache)
        XCTAssertEqual(a.finding(stack: 2)?.kind, .abandoned)
        XCTAssertEqual(a.finding(stack: 2)?.objectsPerCycle, [0, 3, 3, 3, 3, 3])

        let grouped = a.regrouped(by: peeledCopies)
        XCTAssertEqual(grouped.count, 1, "\(grouped)")
        let g = try XCTUnwrap(grouped.first)
        XCTAssertEqual(g.members, [SiteID(stackID: 2, typeID: 0), SiteID(stackID: 1, typeID: 0)],
                       "the copy with the survivors represents the group")
        let f = g.finding
        XCTAssertEqual(f.kind, .abandoned)
        XCTAssertEqual(f.stackID, 2)
        XCTAssertEqual(f.objectsPerCycle, [3, 3, 3, 3, 3, 3])
        XCTAssertEqual(f.bytesPerCycle, [192, 192, 192, 192, 192, 192])
        XCTAssertEqual(f.cycles, 5)
        XCTAssertEqual(f.cyclesWithGrowth, 5)
        XCTAssertEqual(f.firstCycleWithGrowth, 1)
        XCTAssertEqual(f.averageObjectsPerCycle, 3)
        XCTAssertEqual(f.averageBytesPerCycle, 192)
        XCTAssertEqual(f.survivingObjects, 15, "blocks of cycles 2…6")
        XCTAssertEqual(f.survivingBytes, 15 * 64)
        XCTAssertEqual(f.snapshotObjects, 18)
        XCTAssertEqual(f.liveAtExitObjects, 18)
        XCTAssertEqual(f.liveAtExitBytes, 18 * 64)
        // The per-site findings are unchanged.
        XCTAssertEqual(a.findings.count, 2)
    }

    /// A copy that is no finding alone still counts: the peeled copy's block (cycle 1) is
    /// realloc'ed by the loop copy from cycle 2 on, so alone the peeled copy is transient and
    /// the loop copy jumps by 200 bytes in cycle 2.
    func testCopyThatIsNoFindingAloneIsNotLost() throws {
        let t = try TraceBuilder()
        t.mark()
        var block: UInt64 = 0
        for cycle in 1...8 {
            let size = UInt64(100 * cycle)
            block = cycle == 1 ? t.alloc(size: size, stack: 1, function: .realloc)
                               : t.realloc(block, size: size, stack: 2)
            t.mark()
        }
        let a = try t.analyze()
        XCTAssertNil(a.finding(stack: 1))
        XCTAssertEqual(a.finding(stack: 2)?.bytesPerCycle, [0, 200, 100, 100, 100, 100, 100, 100])

        let grouped = a.regrouped(by: peeledCopies)
        XCTAssertEqual(grouped.count, 1, "\(grouped)")
        let f = try XCTUnwrap(grouped.first?.finding)
        XCTAssertEqual(f.kind, .abandoned)
        XCTAssertEqual(f.objectsPerCycle, [1, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(f.bytesPerCycle, Array(repeating: 100, count: 8))
        XCTAssertEqual(f.cyclesWithGrowth, 7)
        XCTAssertEqual(f.averageBytesPerCycle, 100)
        XCTAssertEqual(f.survivingObjects, 1)
        XCTAssertEqual(f.survivingBytes, 800)
        XCTAssertEqual(grouped.first?.members.count, 2)
    }

    func testGroupingToNilOrToSingletonsKeepsTheFindings() throws {
        let t = try TraceBuilder()
        t.mark()
        for cycle in 1...5 {
            t.alloc(size: 64, stack: cycle == 1 ? 1 : 2)
            t.alloc(size: 16, stack: 3, type: 4)
            t.mark()
        }
        let a = try t.analyze()
        let alone = a.findings.map { GroupedFinding(finding: $0, members: [SiteID(stackID: $0.stackID, typeID: $0.typeID)]) }
        XCTAssertEqual(alone.count, 3)
        XCTAssertEqual(a.regrouped(by: { _, _ -> Int? in nil }), alone)
        XCTAssertEqual(a.regrouped(by: { stack, type in SiteID(stackID: stack, typeID: type) }), alone)
        // Only the keyed sites are summed.
        let grouped = a.regrouped(by: peeledCopies)
        XCTAssertEqual(grouped.map(\.finding.kind), [.abandoned, .abandoned])
        XCTAssertEqual(grouped.map(\.members.count), [2, 1])
        XCTAssertEqual(grouped.last?.finding, a.finding(stack: 3, type: 4))
    }

    /// A group replaces its members' findings with its own verdict, which may be none: here
    /// one site grows by what the other releases.
    func testGroupCanCancelOut() throws {
        let t = try TraceBuilder()
        let old = (0..<6).map { _ in t.alloc(size: 32, stack: 2) }
        t.mark()
        for cycle in 1...5 {
            t.alloc(size: 32, stack: 1)
            t.free(old[cycle])
            t.mark()
        }
        let a = try t.analyze()
        XCTAssertEqual(a.finding(stack: 1)?.kind, .abandoned)
        XCTAssertEqual(a.regrouped(by: peeledCopies), [])
        XCTAssertEqual(a.regrouped(by: { _, _ -> Int? in nil }).count, 1)
    }

    func testGroupsLeakWithTheUnreachableBlocksOfTheirSites() throws {
        let t = try TraceBuilder()
        t.mark()
        var lost = Set<UInt64>()
        for _ in 1...4 {
            lost.insert(t.alloc(size: 8, stack: 1))
            lost.insert(t.alloc(size: 8, stack: 2))
            lost.insert(t.alloc(size: 8, stack: 3))
            t.alloc(size: 8, stack: 4)
            t.mark()
        }
        let a = try t.analyze(AnalysisOptions(unreachable: lost))
        XCTAssertEqual(a.findings.map(\.kind), [.abandoned, .leaked, .leaked, .leaked])
        let grouped = a.regrouped { stack, _ in stack <= 2 ? 1 : 2 }
        XCTAssertEqual(grouped.map(\.finding.kind), [.leaked, .leaked], "(1 + 2) all unreachable, (3 + 4) half")
        XCTAssertEqual(grouped.map(\.members), [[SiteID(stackID: 1, typeID: 0), SiteID(stackID: 2, typeID: 0)],
                                                [SiteID(stackID: 3, typeID: 0), SiteID(stackID: 4, typeID: 0)]])
        XCTAssertEqual(grouped.map(\.finding.liveAtExitObjects), [8, 8])
        XCTAssertEqual(grouped.map(\.finding.leakedObjects), [8, 4])
        XCTAssertEqual(grouped.map(\.finding.leakedBytes), [64, 32])
        XCTAssertEqual(grouped.first?.finding.objectsPerCycle, [2, 2, 2, 2])
    }

    func testCandidatesStacksAndEncoding() throws {
        let t = try TraceBuilder()
        let temp = t.alloc(size: 16, stack: 8)           // live at two marks, gone by the end
        t.mark()
        for cycle in 1...4 {
            let scratch = t.alloc(size: 32, stack: 9)   // freed within the cycle: never live at a mark
            t.free(scratch)
            if cycle == 2 { t.free(temp) }
            t.alloc(size: 64, stack: 1)
            t.mark()
        }
        let a = try t.analyze(AnalysisOptions(maxSites: 0))
        XCTAssertEqual(a.regroupingCandidates, [SiteID(stackID: 1, typeID: 0), SiteID(stackID: 8, typeID: 0)])
        XCTAssertNil(a.stacks[8], "only findings are kept with maxSites 0")
        XCTAssertEqual(a.frames(ofStack: 8), [0x40_0000 + 8 * 0x10, 0x40_1000])
        XCTAssertNotNil(a.recordIndex(ofStack: 8))
        var asked: [UInt32] = []
        _ = a.regrouped { stack, _ -> Int? in asked.append(stack); return 0 }
        XCTAssertEqual(asked, [1, 8])

        // The curves are not encoded; a decoded analysis judges every site alone.
        let data = try JSONEncoder().encode(a)
        let json = try XCTUnwrap(String(data: data, encoding: .utf8))
        XCTAssertFalse(json.contains("regrouping"), json)
        XCTAssertFalse(json.contains("series"), json)
        let decoded = try JSONDecoder().decode(Analysis.self, from: data)
        XCTAssertEqual(decoded, a)
        XCTAssertFalse(decoded.canRegroup)
        XCTAssertEqual(decoded.regroupingCandidates, [])
        XCTAssertEqual(decoded.regrouped(by: { _, _ -> Int? in 0 }).map(\.finding), a.findings)
        XCTAssertNil(decoded.frames(ofStack: 8))
    }

    /// A group's snapshot is its live count at the settle mark, after the last cycle's pending
    /// blocks were released.
    func testSettleSnapshotIsSummedAtTheSettleMark() throws {
        let t = try TraceBuilder()
        t.mark()
        var pending: [UInt64] = []
        for cycle in 1...5 {
            t.alloc(size: 40, stack: cycle == 1 ? 1 : 2)
            pending.append(t.alloc(size: 24, stack: cycle == 1 ? 3 : 4))   // released after the last cycle
            t.mark()
        }
        for p in pending { t.free(p) }
        t.settle()
        let a = try t.analyze()
        let grouped = a.regrouped { stack, _ in stack <= 2 ? 1 : 2 }
        XCTAssertEqual(grouped.count, 1, "the pending pair is gone at the settle snapshot: \(grouped)")
        XCTAssertEqual(grouped.first?.finding.objectsPerCycle, [1, 1, 1, 1, 1])
        XCTAssertEqual(grouped.first?.finding.snapshotObjects, 5)
    }

    /// Regrouping a trace equals analysing the same trace with the stacks of each group
    /// renamed to one stack: random traces, with leak classification.
    func testRegroupingEqualsAnalysingTheRenamedTrace() throws {
        for seed: UInt64 in [1, 5, 9, 77, 1234] {
            try checkRenamed(seed: seed)
        }
    }

    private func checkRenamed(seed: UInt64) throws {
        var rng = SeededRandom(seed: seed)
        let raw = try TraceBuilder(name: "raw\(seed)"), renamed = try TraceBuilder(name: "renamed\(seed)")
        /// Stacks 1…6 form groups 101…103; the others stay alone.
        func group(_ stack: UInt32) -> UInt32 { stack <= 6 ? 101 + stack % 3 : stack }
        var live: [UInt64] = []
        var next: UInt64 = 0x1000_0000
        var unreachable = Set<UInt64>()
        func alloc(_ stack: UInt32, keep: UInt32? = nil) {
            next += 16
            let size = UInt64(1 + rng.below(300))
            let type = keep ?? UInt32(rng.below(2))
            raw.alloc(next, size: size, stack: stack, type: type)
            renamed.alloc(next, size: size, stack: group(stack), type: type)
            if rng.chance(30) { unreachable.insert(next) }
            if keep == nil { live.append(next) }
        }
        func free() {
            guard !live.isEmpty else { return }
            let i = rng.below(live.count)
            live.swapAt(i, live.count - 1)
            let a = live.removeLast()
            raw.free(a)
            renamed.free(a)
        }
        let cycles = 4 + rng.below(4)
        for phase in 0...cycles {
            for _ in 0..<(50 + rng.below(200)) {
                if rng.chance(55) { alloc(UInt32(1 + rng.below(10))) } else { free() }
            }
            // A peeled leak of type 7: stack 1 in cycle 1, stack 4 (same group) afterwards.
            if phase >= 1 { alloc(phase == 1 ? 1 : 4, keep: 7) }
            // A cache of type 8 filled in cycle 1 from two copies.
            if phase == 1 { for _ in 0..<5 { alloc(rng.chance(50) ? 2 : 5, keep: 8) } }
            raw.mark()
            renamed.mark()
        }
        if rng.chance(50) {
            for _ in 0..<20 { free() }
            raw.settle()
            renamed.settle()
        }
        let options = AnalysisOptions(unreachable: rng.chance(50) ? unreachable : nil)
        let a = try raw.analyze(options), b = try renamed.analyze(options)

        struct Key: Hashable { var group: UInt32; var type: UInt32 }
        let grouped = a.regrouped { stack, type in stack <= 6 ? Key(group: group(stack), type: type) : nil }
        var got = grouped.map { g -> Finding in
            var f = g.finding
            f.stackID = group(f.stackID)
            XCTAssertTrue(g.members.allSatisfy { group($0.stackID) == f.stackID && $0.typeID == f.typeID }, "seed \(seed)")
            return f
        }
        got.sort(by: Finding.reportOrder)
        XCTAssertEqual(got, b.findings, "seed \(seed)")
        XCTAssertEqual(a.finding(stack: 4, type: 7)?.objectsPerCycle.first, 0, "seed \(seed)")
        let leak = b.findings.first { $0.stackID == 102 && $0.typeID == 7 }
        XCTAssertEqual(leak?.objectsPerCycle, Array(repeating: 1, count: cycles), "seed \(seed)")
        if options.unreachable == nil {
            XCTAssertEqual(leak?.kind, .abandoned, "seed \(seed)")
            XCTAssertEqual(b.findings.first { $0.stackID == 103 && $0.typeID == 8 }?.kind, .cache, "seed \(seed)")
        }
    }
}
