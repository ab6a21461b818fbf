// A seeded random trace checked against a simple dictionary-based reference implementation.

import HeapGenAnalysis
import HeapGenTestSupport
import HeapGenTrace
import XCTest

/// The obvious implementation: dictionaries and full copies of the live set at every mark.
final class ReferenceModel {
    struct SiteKey: Hashable { var stack: UInt32; var type: UInt32 }
    struct Block { var size: UInt64; var site: SiteKey; var generation: Int }
    struct Gen { var allocations: UInt64 = 0, frees: UInt64 = 0, bytes: UInt64 = 0, peak: UInt64 = 0 }

    var live: [UInt64: Block] = [:]
    var pending: [UInt64: Block] = [:]
    var liveBytes: UInt64 = 0
    var generation = 0
    var gens = [Gen()]
    var markLabels: [String] = []
    var markLive: [[UInt64: Block]] = []
    var peak: UInt64 = 0, peakGeneration = 0
    var sitePeak: [SiteKey: (bytes: UInt64, generation: Int)] = [:]
    var allocations: UInt64 = 0, frees: UInt64 = 0, allocatedBytes: UInt64 = 0, untracked: UInt64 = 0, undos: UInt64 = 0

    var siteBytes: [SiteKey: UInt64] = [:]

    private func added(_ block: Block) {
        liveBytes += block.size
        siteBytes[block.site, default: 0] += block.size
        gens[generation].peak = max(gens[generation].peak, liveBytes)
        if liveBytes > peak { peak = liveBytes; peakGeneration = generation }
        let bytes = siteBytes[block.site]!
        if bytes > (sitePeak[block.site]?.bytes ?? 0) { sitePeak[block.site] = (bytes, generation) }
    }

    private func removed(_ block: Block) {
        liveBytes -= block.size
        siteBytes[block.site]! -= block.size
    }

    func alloc(_ address: UInt64, size: UInt64, stack: UInt32, type: UInt32) {
        allocations += 1
        allocatedBytes += size
        gens[generation].allocations += 1
        gens[generation].bytes += size
        pending[address] = nil
        let block = Block(size: size, site: SiteKey(stack: stack, type: type), generation: generation)
        if let old = live.updateValue(block, forKey: address) { removed(old) }
        added(block)
    }

    func free(_ address: UInt64, realloc: Bool) {
        frees += 1
        gens[generation].frees += 1
        if let block = live.removeValue(forKey: address) {
            removed(block)
            if realloc { pending[address] = block }
        } else {
            untracked += 1
        }
    }

    func undo(_ address: UInt64) {
        undos += 1
        if let block = pending.removeValue(forKey: address) {
            live[address] = block
            added(block)
        }
    }

    func mark(_ label: String) {
        markLabels.append(label)
        markLive.append(live)
        if label != AnalysisOptions.settleLabel {
            generation += 1
            gens.append(Gen(peak: liveBytes))
        }
    }

    var ordinaryMarks: [Int] { markLabels.indices.filter { markLabels[$0] != AnalysisOptions.settleLabel } }

    var snapshotMark: Int? {
        guard let last = ordinaryMarks.last else { return markLabels.firstIndex(of: AnalysisOptions.settleLabel) }
        return markLabels.indices.first { $0 > last && markLabels[$0] == AnalysisOptions.settleLabel } ?? last
    }

    var snapshotLive: [UInt64: Block] { snapshotMark.map { markLive[$0] } ?? live }

    static func count(_ set: [UInt64: Block], _ key: SiteKey) -> (Int, Int) {
        let blocks = set.values.filter { $0.site == key }
        return (blocks.count, Int(blocks.reduce(0) { $0 + $1.size }))
    }

    /// Abandoned / cache with warm-up 1 and one tolerated miss, written out directly.
    func verdict(_ key: SiteKey) -> Finding.Kind? {
        let marks = ordinaryMarks
        let cycles = marks.count - 1
        guard cycles - 1 >= 2 else { return nil }
        let v = marks.map { Self.count(markLive[$0], key) }
        let snap = Self.count(snapshotLive, key)
        func grows(_ g: Int) -> Bool { v[g].0 > v[g - 1].0 || v[g].1 > v[g - 1].1 }
        let judged = Array(2...cycles)
        let growing = judged.filter(grows).count
        let net = v[cycles].0 > v[1].0 || v[cycles].1 > v[1].1
        let above = snap.0 > v[1].0 || snap.1 > v[1].1
        if growing >= judged.count - 1 && net && above { return .abandoned }
        // A leak that starts mid-run: from a growing cycle c on, at least 4 cycles with at most
        // one miss, net growth and still above v[c-1] at the snapshot, and growth in fewer
        // than half of the judged cycles before c.
        for c in judged where grows(c) && cycles - c + 1 >= 4 {
            let since = Array(c...cycles), before = Array(2..<c)
            guard since.count - since.filter(grows).count <= 1 else { continue }
            guard 2 * before.filter(grows).count < before.count else { continue }
            let open = v[c - 1]
            if (v[cycles].0 > open.0 || v[cycles].1 > open.1) && (snap.0 > open.0 || snap.1 > open.1) {
                return .abandoned
            }
        }
        let rose = (1...cycles).contains { v[$0].0 > v[0].0 || v[$0].1 > v[0].1 }
        let half = (judged.count + 1) / 2
        let flat = !judged.suffix(half).contains(where: grows)
        if rose && flat && (snap.0 > v[0].0 || snap.1 > v[0].1) { return .cache }
        return nil
    }

    func survivors(_ key: SiteKey) -> (Int, Int) {
        let cycles = ordinaryMarks.count - 1
        let blocks = snapshotLive.values.filter { $0.site == key && $0.generation > 1 && $0.generation <= cycles }
        return (blocks.count, Int(blocks.reduce(0) { $0 + $1.size }))
    }
}

final class RandomizedReferenceTests: XCTestCase {
    func testRandomTracesMatchTheReference() throws {
        var findingsSeen = Set<Finding.Kind>()
        for seed: UInt64 in [1, 2, 3, 7, 42, 2024] {
            findingsSeen.formUnion(try check(seed: seed))
        }
        XCTAssertEqual(findingsSeen, [.abandoned, .cache], "the generator exercises both kinds")
    }

    /// Hundreds of sites, most only live between marks, as in a test suite: stack ids in a
    /// dense run from 2^24 (the collector's later arena epochs), scattered over all 32 bits
    /// (kept apart from the dense ones), and stacks with a second type; their curves are
    /// kept in other structures than few sites' are.
    func testManySitesMatchTheReference() throws {
        for seed: UInt64 in [5, 11, 99] {
            _ = try check(seed: seed, manySites: true)
        }
    }

    /// Builds a random trace, analyzes it and compares with the reference; returns the finding kinds.
    private func check(seed: UInt64, manySites: Bool = false) throws -> Set<Finding.Kind> {
        var rng = SeededRandom(seed: seed)
        let t = try TraceBuilder(name: "random\(seed)")
        let ref = ReferenceModel()
        var freeable: [UInt64] = []    // blocks the generator may free
        var recycled: [UInt64] = []    // freed addresses malloc may hand out again
        var next: UInt64 = 0x1000_0000

        func address() -> UInt64 {
            if !recycled.isEmpty && rng.chance(50) {
                return recycled.swapAt(rng.below(recycled.count))
            }
            next += 16 * UInt64(1 + rng.below(8))
            return next
        }
        func alloc(stack: UInt32, keep: Bool) {
            let a = address()
            let size = UInt64(1 + rng.below(rng.chance(5) ? 100_000 : 512))
            var type: UInt32 = stack % 4 == 0 ? 0 : stack % 3 + 1
            if manySites && stack > 32 && rng.chance(20) { type += 5 }
            t.alloc(a, size: size, stack: stack, type: type)
            ref.alloc(a, size: size, stack: stack, type: type)
            if !keep { freeable.append(a) }
        }
        // Scattered ids: distinct, above the small ones, never in the dense run.
        var scattered = Set<UInt32>()
        while scattered.count < 300 {
            let id = UInt32(truncatingIfNeeded: rng.next())
            if id > 64 && (id < 1 << 24 || id >= (1 << 24) + 1000) && id != UInt32.max { scattered.insert(id) }
        }
        let scatteredIDs = scattered.sorted()
        func manyStack() -> UInt32 {
            switch rng.below(10) {
            case 0..<3: return UInt32(1 + rng.below(12))
            case 3..<7: return (1 << 24) + UInt32(rng.below(1000))
            default: return scatteredIDs[rng.below(scatteredIDs.count)]
            }
        }
        func step(cycle: Int) {
            switch rng.below(100) {
            case 0..<45:
                alloc(stack: manySites ? manyStack() : UInt32(1 + rng.below(12)), keep: false)
            case 45..<80:
                guard !freeable.isEmpty else { return }
                let a = freeable.swapAt(rng.below(freeable.count))
                t.free(a)
                ref.free(a, realloc: false)
                recycled.append(a)
            case 80..<83:
                let a = 0xDEAD_0000 + UInt64(rng.below(1000)) * 16
                t.free(a)
                ref.free(a, realloc: false)
            default:
                guard !freeable.isEmpty else { return }
                let i = rng.below(freeable.count)
                let old = freeable[i]
                t.free(old, function: .realloc)
                ref.free(old, realloc: true)
                if rng.chance(15) {
                    t.undo(old)
                    ref.undo(old)
                    return
                }
                let new = rng.chance(50) ? old : address()
                let size = UInt64(1 + rng.below(2048))
                let stack = UInt32(20 + rng.below(3))
                t.alloc(new, size: size, stack: stack, function: .realloc)
                ref.alloc(new, size: size, stack: stack, type: 0)
                freeable[i] = new
                if new != old { recycled.append(old) }
            }
        }

        let cycles = 4 + rng.below(5)
        let settle = rng.chance(70)
        for phase in 0...cycles {
            for _ in 0..<(500 + rng.below(1500)) { step(cycle: phase) }
            // Steady growth (abandoned), a cache filled in cycle 1, growth in some cycles only.
            if phase >= 1 { for _ in 0..<(1 + rng.below(3)) { alloc(stack: 30, keep: true) } }
            if phase == 1 { for _ in 0..<20 { alloc(stack: 31, keep: true) } }
            if phase >= 1 && rng.chance(50) { alloc(stack: 32, keep: true) }
            if phase == 2 && rng.chance(50) {
                t.settle() // ignored: ordinary marks follow
                ref.mark(AnalysisOptions.settleLabel)
            }
            let label = "cycle \(phase)"
            t.mark(label)
            ref.mark(label)
        }
        for _ in 0..<300 { step(cycle: cycles + 1) }
        if settle {
            t.settle()
            ref.mark(AnalysisOptions.settleLabel)
        }
        for _ in 0..<300 { step(cycle: cycles + 1) }

        let a = try t.analyze(AnalysisOptions(maxSites: 10_000))
        let context = "seed \(seed)"

        // Totals.
        XCTAssertEqual(a.totals.allocations, ref.allocations, context)
        XCTAssertEqual(a.totals.frees, ref.frees, context)
        XCTAssertEqual(a.totals.allocatedBytes, ref.allocatedBytes, context)
        XCTAssertEqual(a.totals.untrackedFrees, ref.untracked, context)
        XCTAssertEqual(a.totals.reallocUndos, ref.undos, context)
        XCTAssertEqual(a.totals.liveAtExitObjects, UInt64(ref.live.count), context)
        XCTAssertEqual(a.totals.liveAtExitBytes, ref.liveBytes, context)
        XCTAssertEqual(a.totals.peakBytes, ref.peak, context)
        XCTAssertEqual(a.totals.peakGeneration, ref.peakGeneration, context)
        XCTAssertEqual(a.cycles, cycles, context)
        XCTAssertEqual(a.snapshot.markIndex, ref.snapshotMark, context)
        XCTAssertEqual(a.snapshot.source, settle ? .settleMark : .lastMark, context)

        // Generations.
        let ordinary = ref.ordinaryMarks
        XCTAssertEqual(a.generations.count, ordinary.count + 1, context)
        var persistent = [(objects: UInt64, bytes: UInt64)](repeating: (0, 0), count: ordinary.count + 1)
        for block in ref.snapshotLive.values {
            persistent[block.generation].objects += 1
            persistent[block.generation].bytes += block.size
        }
        for (g, stats) in a.generations.enumerated() {
            let c = "\(context), generation \(g)"
            XCTAssertEqual(stats.allocations, ref.gens[g].allocations, c)
            XCTAssertEqual(stats.frees, ref.gens[g].frees, c)
            XCTAssertEqual(stats.allocatedBytes, ref.gens[g].bytes, c)
            XCTAssertEqual(stats.peakLiveBytes, ref.gens[g].peak, c)
            let set = g < ordinary.count ? ref.markLive[ordinary[g]] : ref.live
            XCTAssertEqual(stats.liveObjects, UInt64(set.count), c)
            XCTAssertEqual(stats.liveBytes, set.values.reduce(0) { $0 + $1.size }, c)
            XCTAssertEqual(stats.label, g < ordinary.count ? ref.markLabels[ordinary[g]] : nil, c)
            XCTAssertEqual(stats.persistentObjects, persistent[g].objects, c)
            XCTAssertEqual(stats.persistentBytes, persistent[g].bytes, c)
        }

        // Sites: live at every mark, snapshot, exit, peaks, verdicts and survivors.
        let keys = Set(ref.sitePeak.keys)
        XCTAssertEqual(a.siteCount, keys.count, context)
        XCTAssertEqual(a.sites.count, keys.count, context)
        for key in keys {
            let c = "\(context), site \(key.stack)/\(key.type)"
            guard let site = a.site(stackID: key.stack, typeID: key.type) else {
                XCTFail("missing site: \(c)")
                continue
            }
            for m in ref.markLabels.indices {
                let (objects, bytes) = ReferenceModel.count(ref.markLive[m], key)
                let got = site.live(atMark: m)
                XCTAssertEqual(got.objects, UInt64(objects), "\(c), mark \(m)")
                XCTAssertEqual(got.bytes, UInt64(bytes), "\(c), mark \(m)")
            }
            let snap = ReferenceModel.count(ref.snapshotLive, key)
            XCTAssertEqual(site.snapshotObjects, UInt64(snap.0), c)
            XCTAssertEqual(site.snapshotBytes, UInt64(snap.1), c)
            let exit = ReferenceModel.count(ref.live, key)
            XCTAssertEqual(site.liveAtExitObjects, UInt64(exit.0), c)
            XCTAssertEqual(site.liveAtExitBytes, UInt64(exit.1), c)
            XCTAssertEqual(site.peakBytes, ref.sitePeak[key]?.bytes, c)
            XCTAssertEqual(site.peakGeneration, ref.sitePeak[key]?.generation, c)
            let finding = a.finding(stack: key.stack, type: key.type)
            XCTAssertEqual(finding?.kind, ref.verdict(key), c)
            if let finding {
                let survivors = ref.survivors(key)
                XCTAssertEqual(finding.survivingObjects, UInt64(survivors.0), c)
                XCTAssertEqual(finding.survivingBytes, UInt64(survivors.1), c)
            }
        }
        XCTAssertEqual(a.finding(stack: 30, type: 1)?.kind, .abandoned, context)
        XCTAssertEqual(a.finding(stack: 31, type: 2)?.kind, .cache, context)
        XCTAssertEqual(a.findings, a.findings.sorted(by: Finding.reportOrder), context)
        return Set(a.findings.map(\.kind))
    }
}

private extension Array {
    /// Removes and returns element `i` (order not kept).
    mutating func swapAt(_ i: Int) -> Element {
        swapAt(i, count - 1)
        return removeLast()
    }
}
