// Judging one site (or type) from its live counts at the ordinary marks.

/// Live counts of one site (or group) at every ordinary mark and at the final snapshot,
/// stored sparse: a step wherever the counts change from one ordinary mark to the next.
///
/// A site's counts change only at marks around which it allocated or freed, so a curve
/// costs its changes, never the number of marks.
struct SiteCurve {
    /// A change of the counts: from ordinary mark `index` on (0 = end of setup).
    struct Step: Equatable {
        var index: Int
        var objects: Int
        var bytes: Int
    }

    /// Number of ordinary marks m1…mM.
    var markCount: Int
    /// Steps by increasing index, each different from the previous one (the first
    /// different from 0); the counts are 0 before the first step.
    var steps: [Step] = []
    var snapshotObjects = 0
    var snapshotBytes = 0

    init(markCount: Int) {
        self.markCount = markCount
    }

    /// Number of cycles (ordinary marks minus one).
    var cycles: Int { max(0, markCount - 1) }

    /// Live objects and bytes at ordinary mark `j`.
    func value(at j: Int) -> (objects: Int, bytes: Int) {
        var low = 0, high = steps.count
        while low < high {
            let mid = (low + high) / 2
            if steps[mid].index <= j { low = mid + 1 } else { high = mid }
        }
        return low == 0 ? (0, 0) : (steps[low - 1].objects, steps[low - 1].bytes)
    }

    /// True if the counts are nonzero at some ordinary mark.
    var isNonzeroAtSomeMark: Bool { steps.contains { $0.objects != 0 || $0.bytes != 0 } }

    /// Appends the counts from ordinary mark `index` on (indices must not decrease: a
    /// later call for the same index replaces the earlier one).
    mutating func set(_ objects: Int, _ bytes: Int, from index: Int) {
        if let last = steps.last, last.index == index { steps.removeLast() }
        let previous = steps.last.map { ($0.objects, $0.bytes) } ?? (0, 0)
        if previous.0 != objects || previous.1 != bytes {
            steps.append(Step(index: index, objects: objects, bytes: bytes))
        }
    }

    /// Changes over the cycles where there was one: (cycle index, objects, bytes), where cycle
    /// index `i` (cycle i+1) runs from ordinary mark `i` to `i + 1`.
    var deltas: [(cycle: Int, objects: Int, bytes: Int)] {
        var out: [(cycle: Int, objects: Int, bytes: Int)] = []
        out.reserveCapacity(steps.count)
        var previous = (0, 0)
        for s in steps {
            if s.index >= 1 { out.append((s.index - 1, s.objects - previous.0, s.bytes - previous.1)) }
            previous = (s.objects, s.bytes)
        }
        return out
    }

    /// The sum of `curves` (all of `markCount` marks): counts added at every mark and at the snapshot.
    static func sum(_ curves: [SiteCurve], markCount: Int) -> SiteCurve {
        var changes: [(index: Int, objects: Int, bytes: Int)] = []
        var sum = SiteCurve(markCount: markCount)
        for c in curves {
            var previous = (0, 0)
            for s in c.steps {
                changes.append((s.index, s.objects - previous.0, s.bytes - previous.1))
                previous = (s.objects, s.bytes)
            }
            sum.snapshotObjects &+= c.snapshotObjects
            sum.snapshotBytes &+= c.snapshotBytes
        }
        changes.sort { $0.index < $1.index }
        var objects = 0, bytes = 0
        for change in changes {
            objects &+= change.objects
            bytes &+= change.bytes
            sum.set(objects, bytes, from: change.index)
        }
        return sum
    }
}

/// The verdict on one curve.
struct GrowthVerdict: Equatable {
    /// `.abandoned`, `.cache` or nil (leaks are decided elsewhere).
    var kind: Finding.Kind?
    var judgedCycles: Int
    var cyclesWithGrowth: Int
    var objectDeltas: CycleSeries
    var byteDeltas: CycleSeries
    var firstCycleWithGrowth: Int?
    var averageBytesPerCycle: Double
    var averageObjectsPerCycle: Double
    /// Held more than at the end of setup at the final snapshot.
    var aboveSetupAtSnapshot: Bool
    /// For a site abandoned only from some cycle on (``Finding/onsetCycle``): that cycle.
    var onsetCycle: Int? = nil
    /// Cycles from ``onsetCycle`` on that grew.
    var cyclesWithGrowthSinceOnset: Int? = nil
}

enum Classifier {
    /// Judges `curve` (see ``Finding/Kind`` for the rules). Cost: O(steps of the curve).
    static func judge(_ curve: SiteCurve, options: AnalysisOptions) -> GrowthVerdict {
        let cycles = curve.cycles
        let warmUp = min(max(0, options.warmUp), cycles)
        let judged = cycles - warmUp
        let deltas = curve.deltas
        // Cycles without a change never grow (`grows` needs a positive change).
        var first: Int?
        var withGrowth = 0
        var sumBytes = 0, sumObjects = 0
        for d in deltas {
            let grows = options.grows(objects: d.objects, bytes: d.bytes)
            if grows && first == nil { first = d.cycle + 1 }
            if d.cycle >= warmUp {
                if grows { withGrowth += 1 }
                sumBytes += d.bytes
                sumObjects += d.objects
            }
        }
        let setup = curve.value(at: 0)
        let aboveSetup = curve.markCount > 0
            && (curve.snapshotObjects > setup.objects || curve.snapshotBytes > setup.bytes)
        var verdict = GrowthVerdict(
            kind: nil, judgedCycles: judged, cyclesWithGrowth: withGrowth,
            objectDeltas: CycleSeries(count: cycles, increasing: deltas.map { ($0.cycle, $0.objects) }),
            byteDeltas: CycleSeries(count: cycles, increasing: deltas.map { ($0.cycle, $0.bytes) }),
            firstCycleWithGrowth: first,
            averageBytesPerCycle: judged > 0 ? Double(sumBytes) / Double(judged) : 0,
            averageObjectsPerCycle: judged > 0 ? Double(sumObjects) / Double(judged) : 0,
            aboveSetupAtSnapshot: aboveSetup)
        guard judged >= 2 else { return verdict }

        // Abandoned: growth in every judged cycle but `toleratedMisses`, and in more than half
        // of them, net growth over them, and still above their opening level at the final
        // snapshot. (Without the majority, 2 judged cycles with one miss allowed would call a
        // lazy initialisation in the second cycle abandoned: 1 of 2.)
        let open = curve.value(at: warmUp), close = curve.value(at: cycles)
        let netGrowth = close.objects > open.objects || close.bytes > open.bytes
        let aboveOpening = curve.snapshotObjects > open.objects || curve.snapshotBytes > open.bytes
        if withGrowth >= Self.growingCyclesNeeded(judged: judged, options: options) && netGrowth && aboveOpening {
            verdict.kind = .abandoned
            return verdict
        }
        // Abandoned from some cycle on: a leak that starts mid-run.
        if let onset = onset(curve, deltas: deltas, warmUp: warmUp, options: options) {
            verdict.kind = .abandoned
            verdict.onsetCycle = onset.cycle
            verdict.cyclesWithGrowthSinceOnset = onset.withGrowth
            let length = cycles - onset.cycle + 1
            let base = curve.value(at: onset.cycle - 1)
            verdict.averageBytesPerCycle = Double(close.bytes - base.bytes) / Double(length)
            verdict.averageObjectsPerCycle = Double(close.objects - base.objects) / Double(length)
            return verdict
        }
        // Cache: rose above the setup level at some closing mark, flat over the last half
        // (rounded up) of the judged cycles, still above the setup level at the snapshot.
        // "Flat" ignores the thresholds: a site growing slowly is not a cache.
        // The counts at marks 1…cycles take only the values of the steps from index 1 on.
        let rose = curve.steps.contains {
            $0.index >= 1 && $0.index <= cycles && ($0.objects > setup.objects || $0.bytes > setup.bytes)
        }
        let lastHalf = (judged + 1) / 2
        let flatAtEnd = !deltas.contains {
            $0.cycle >= cycles - lastHalf && $0.cycle < cycles && ($0.objects > 0 || $0.bytes > 0)
        }
        if rose && flatAtEnd && aboveSetup {
            verdict.kind = .cache
        }
        return verdict
    }

    /// Cycles of `judged` in which a site must grow to be abandoned: all but
    /// ``AnalysisOptions/toleratedMisses``, and more than half.
    static func growingCyclesNeeded(judged: Int, options: AnalysisOptions) -> Int {
        max(judged - max(0, options.toleratedMisses), judged / 2 + 1)
    }

    /// Judged cycles a leak that starts mid-run must span at least.
    static let minimumOnsetCycles = 4

    /// The earliest cycle `c` (1-based, after the warm-up) that grew and from which on the
    /// site grew in every cycle but ``AnalysisOptions/toleratedMisses``, over at least
    /// ``minimumOnsetCycles`` cycles, with net growth from mark `c - 1` to the last mark and
    /// still above that level at the final snapshot, having grown in fewer than half of the
    /// judged cycles before `c`; `nil` if there is none.
    /// Cost: O(changes of the curve).
    static func onset(_ curve: SiteCurve, deltas: [(cycle: Int, objects: Int, bytes: Int)], warmUp: Int,
                      options: AnalysisOptions) -> (cycle: Int, withGrowth: Int)? {
        let cycles = curve.cycles
        let growing = deltas.filter { $0.cycle >= warmUp && options.grows(objects: $0.objects, bytes: $0.bytes) }
            .map { $0.cycle + 1 }
        let close = curve.value(at: cycles)
        for (n, c) in growing.enumerated() {
            let length = cycles - c + 1
            guard length >= minimumOnsetCycles else { break }
            let withGrowth = growing.count - n
            guard length - withGrowth <= max(0, options.toleratedMisses) else { continue }
            // The growth starts here: before it, the site grew in fewer than half of the judged
            // cycles (a site that grew all along with scattered misses is not a late leak).
            let before = c - 1 - warmUp
            guard 2 * n < before else { continue }
            let open = curve.value(at: c - 1)
            let netGrowth = close.objects > open.objects || close.bytes > open.bytes
            let aboveOpening = curve.snapshotObjects > open.objects || curve.snapshotBytes > open.bytes
            if netGrowth && aboveOpening { return (c, withGrowth) }
        }
        return nil
    }
}
