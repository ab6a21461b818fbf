// Judging one site (or type) from its live counts at the ordinary marks.

/// Live counts of one site at every ordinary mark and at the final snapshot.
struct SiteCurve {
    /// At ordinary marks m1…mM (index 0 = end of setup).
    var objects: [Int]
    var bytes: [Int]
    var snapshotObjects: Int
    var snapshotBytes: Int

    /// Number of cycles (ordinary marks minus one).
    var cycles: Int { max(0, objects.count - 1) }

    /// Change over every cycle (index 0 = cycle 1).
    var objectDeltas: [Int] { cycles == 0 ? [] : (1...cycles).map { objects[$0] - objects[$0 - 1] } }
    var byteDeltas: [Int] { cycles == 0 ? [] : (1...cycles).map { bytes[$0] - bytes[$0 - 1] } }
}

/// The verdict on one curve.
struct GrowthVerdict: Equatable {
    /// `.abandoned`, `.cache` or nil (leaks are decided elsewhere).
    var kind: Finding.Kind?
    var judgedCycles: Int
    var cyclesWithGrowth: Int
    var objectDeltas: [Int]
    var byteDeltas: [Int]
    var firstCycleWithGrowth: Int?
    var averageBytesPerCycle: Double
    var averageObjectsPerCycle: Double
    /// Held more than at the end of setup at the final snapshot.
    var aboveSetupAtSnapshot: Bool
}

enum Classifier {
    /// Judges `curve` (see ``Finding/Kind`` for the rules).
    static func judge(_ curve: SiteCurve, options: AnalysisOptions) -> GrowthVerdict {
        let cycles = curve.cycles
        let warmUp = min(max(0, options.warmUp), cycles)
        let judged = cycles - warmUp
        let dObjects = curve.objectDeltas, dBytes = curve.byteDeltas
        var grows = [Bool](repeating: false, count: cycles)
        for i in 0..<cycles { grows[i] = options.grows(objects: dObjects[i], bytes: dBytes[i]) }
        let first = grows.firstIndex(of: true).map { $0 + 1 }
        let withGrowth = grows[warmUp...].lazy.filter { $0 }.count
        let sumBytes = dBytes[warmUp...].reduce(0, +), sumObjects = dObjects[warmUp...].reduce(0, +)
        let aboveSetup = !curve.objects.isEmpty
            && (curve.snapshotObjects > curve.objects[0] || curve.snapshotBytes > curve.bytes[0])
        var verdict = GrowthVerdict(
            kind: nil, judgedCycles: judged, cyclesWithGrowth: withGrowth, objectDeltas: dObjects,
            byteDeltas: dBytes, firstCycleWithGrowth: first,
            averageBytesPerCycle: judged > 0 ? Double(sumBytes) / Double(judged) : 0,
            averageObjectsPerCycle: judged > 0 ? Double(sumObjects) / Double(judged) : 0,
            aboveSetupAtSnapshot: aboveSetup)
        guard judged >= 2 else { return verdict }

        // Abandoned: growth in every judged cycle but `toleratedMisses`, net growth over
        // them, and still above their opening level at the final snapshot.
        let open = warmUp, close = cycles
        let netGrowth = curve.objects[close] > curve.objects[open] || curve.bytes[close] > curve.bytes[open]
        let aboveOpening = curve.snapshotObjects > curve.objects[open] || curve.snapshotBytes > curve.bytes[open]
        if withGrowth >= max(1, judged - max(0, options.toleratedMisses)) && netGrowth && aboveOpening {
            verdict.kind = .abandoned
            return verdict
        }
        // Cache: rose above the setup level at some closing mark, flat over the last half
        // (rounded up) of the judged cycles, still above the setup level at the snapshot.
        // "Flat" ignores the thresholds: a site growing slowly is not a cache.
        let rose = (1...cycles).contains { curve.objects[$0] > curve.objects[0] || curve.bytes[$0] > curve.bytes[0] }
        let lastHalf = (judged + 1) / 2
        let flatAtEnd = !((cycles - lastHalf)..<cycles).contains { dObjects[$0] > 0 || dBytes[$0] > 0 }
        if rose && flatAtEnd && aboveSetup {
            verdict.kind = .cache
        }
        return verdict
    }
}
