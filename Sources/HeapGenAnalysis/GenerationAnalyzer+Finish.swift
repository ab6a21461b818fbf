// Turning the analyzer's running state into an Analysis.

import HeapGenTrace
import HeapGenUnits

extension GenerationAnalyzer {
    /// Where the program's teardown began among timed marks, or nil: the position of the last
    /// peak of the whole live heap (`live`, one per ordinary mark) when every mark after it was
    /// the collector's timer's (`timed`), the heap only fell after it, by more than a quarter,
    /// and at least two cycles after the warm-up end there. Marks a program makes itself end its
    /// cycles where it says; a timer goes on marking while the program frees what it kept.
    static func teardownStart(live: [UInt64], timed: [Bool], warmUp: Int) -> Int? {
        guard live.count >= 2, live.count == timed.count else { return nil }
        var peak = live.count - 1
        while peak > 0 && live[peak - 1] >= live[peak] { peak -= 1 }
        guard peak < live.count - 1, timed[(peak + 1)...].allSatisfy({ $0 }),
              live[live.count - 1] < live[peak] - live[peak] / 4,
              peak - warmUp >= 2 else { return nil }
        return peak
    }

    /// The analysis of the records consumed so far.
    ///
    /// Cost: one walk over the live blocks plus O(sites + marks + series points × log marks);
    /// memory grows with sites + marks + series points, never with sites × marks. The
    /// analyzer is not changed.
    public func finish() -> Analysis {
        // First: what the recording could not see bounds everything below.
        var notes = recordingWarnings.map { "While recording, heapgen warned: \($0)." }
        let warmUp = max(0, options.warmUp)
        let ordinary = marks.indices.filter { marks[$0].role == .boundary }
        let markCount = ordinary.count
        let cycles = max(0, markCount - 1)
        let judged = max(0, cycles - warmUp)
        let epochs = Int(epoch) + 1

        // Mark roles: settle marks followed by ordinary marks are ignored.
        var allMarks = marks
        let lastOrdinary = ordinary.last ?? -1
        for i in allMarks.indices where allMarks[i].role == .settle && i < lastOrdinary {
            allMarks[i].role = .ignoredSettle
            notes.append("Mark \(i) (\"\(AnalysisOptions.settleLabel)\") is followed by ordinary marks: ignored.")
        }

        // Scopes (expectNoGrowth and HeapGen.cycles calls) are judged apart, each on its own
        // marks; the marks outside every scope are judged together as in a trace without scopes.
        let scopes = CycleScope.find(in: allMarks)
        var positionScope = [Int](repeating: -1, count: markCount)
        var scopeStart: [Int] = []
        var markScope = [Int](repeating: -1, count: allMarks.count)
        if !scopes.isEmpty {
            var position: [Int: Int] = [:]
            for (p, m) in ordinary.enumerated() { position[m] = p }
            for (k, scope) in scopes.enumerated() {
                let a = position[scope.startMark] ?? 0
                scopeStart.append(a)
                for p in a...(a + scope.cycles) { positionScope[p] = k }
                for m in (scope.startMark + 1)...scope.endMark { markScope[m] = k }
            }
        }
        // A window (--from/--to): only the ordinary marks between the two are judged.
        var window = 0..<markCount
        let windowed = options.from != nil || options.to != nil
        if windowed {
            func resolve(_ reference: String, from start: Int) -> Int? {
                if let n = Int(reference) { return n >= 0 && n < markCount ? n : nil }
                return (start..<markCount).first { allMarks[ordinary[$0]].label == reference }
            }
            let low = options.from.map { resolve($0, from: 0) } ?? 0
            let high = options.to.map { resolve($0, from: low ?? 0) } ?? markCount - 1
            if let low, let high, low <= high {
                window = low..<(high + 1)
                notes.append("Judged only the cycles between ordinary marks \(low) and \(high) (\(high - low) cycle\(high - low == 1 ? "" : "s")); cycle numbers count from mark \(low).")
            } else {
                window = 0..<0
                notes.append("The window \(options.from.map { "from \"\($0)\"" } ?? "from the first mark") \(options.to.map { "to \"\($0)\"" } ?? "to the last mark") matches no ordinary marks in order: nothing judged.")
            }
        }
        // Timed marks (--mark-every) that landed in the program's teardown: judging them would
        // take a leak that teardown freed for no leak at all (Node freed every Buffer there).
        var narrowed = windowed
        if !windowed && scopes.isEmpty,
           let end = Self.teardownStart(live: ordinary.map { allMarks[$0].liveBytes },
                                        timed: ordinary.map { allMarks[$0].origin == .timer }, warmUp: warmUp) {
            window = 0..<(end + 1)
            narrowed = true
            let last = markCount - 1
            notes.append("The live heap fell from \(HumanUnits.count(allMarks[ordinary[end]].liveBytes)) to \(HumanUnits.count(allMarks[ordinary[last]].liveBytes)) bytes "
                + "after ordinary mark \(end) until the last timed mark (\(last)): the program's teardown, not judged. "
                + "Judged the cycles up to mark \(end) (--to \(last) judges them all).")
        }
        // Timed cycles in which the program made no heap event at all (it slept, or its
        // garbage collector paused it) hold nothing to judge: they are merged into the next.
        // With one miss tolerated, a program that grew for 20 cycles and slept through 3
        // before it exited had no growth.
        var idle = Set<Int>()
        for p in 1..<Swift.max(1, markCount)
        where window.contains(p) && positionScope[p] < 0 && allMarks[ordinary[p]].origin == .timer {
            let records = allMarks[ordinary[p]].eventPosition &- allMarks[ordinary[p - 1]].eventPosition
            if records == UInt64(ordinary[p] - ordinary[p - 1]) { idle.insert(p) }   // marks only
        }
        if totals.allocations == 0 && totals.frees == 0 && markCount > 0 && !recordingWarnings.isEmpty {
            notes.append("No allocation or free of this process was recorded.")
        } else if totals.allocations == 0 && totals.frees == 0 && markCount > 0 {
            // Not idle: nothing of it reached heapgen.
            notes.append("No allocation or free of this process was recorded: its allocations did not reach heapgen "
                + "(an allocator of its own, as Chromium's PartitionAlloc; the recording's warning names it) or it made none.")
        } else if !idle.isEmpty {
            notes.append("\(HumanUnits.plural(idle.count, "timed cycle")) in which the program made no heap event "
                + "(it slept or waited) \(idle.count == 1 ? "was" : "were") not judged: each is merged into the next.")
        }
        // Merged into the next, an idle cycle after the warm-up is no judged cycle of its own.
        let idleJudged = idle.filter { $0 - window.lowerBound > warmUp }.count
        let globalPositions = ordinary.indices.filter { positionScope[$0] < 0 && window.contains($0) && !idle.contains($0) }
        let globalOrdinary = globalPositions.map { ordinary[$0] }
        let scopeOrdinary = scopes.indices.map { k in Array(ordinary[scopeStart[k]...(scopeStart[k] + scopes[k].cycles)]) }
        // Per generation: -1 = not judged, 0 = a judged cycle outside the scopes, k + 1 = a
        // judged cycle of scope k (survivors are counted per context).
        var generationContext = [Int](repeating: -1, count: markCount + 1)
        var globalCount = 0
        for g in 1..<Swift.max(1, markCount) {
            if globalCount < globalPositions.count && globalPositions[globalCount] <= g - 1 { globalCount += 1 }
            let k = positionScope[g]
            if k >= 0 && positionScope[g - 1] == k {
                if g - scopeStart[k] > scopes[k].warmUp { generationContext[g] = k + 1 }
            } else if let last = globalPositions.last, g <= last && globalCount > warmUp {
                generationContext[g] = 0
            }
        }

        // The final snapshot.
        let snapshotMark = candidateMark
        let snapshot: SnapshotPoint
        if let m = snapshotMark {
            snapshot = SnapshotPoint(source: allMarks[m].role == .settle ? .settleMark : .lastMark, markIndex: m,
                                     liveObjects: allMarks[m].liveObjects, liveBytes: allMarks[m].liveBytes)
        } else {
            snapshot = SnapshotPoint(source: .endOfTrace, markIndex: nil, liveObjects: UInt64(table.count),
                                     liveBytes: UInt64(clamping: liveBytes))
        }
        // A scope's snapshot is its last mark, or the final snapshot if it ends the cycles
        // (after the settle mark: memory released asynchronously after the last cycle is gone).
        let scopeSnapshot = scopes.map { $0.endMark == ordinary.last ? (snapshotMark ?? $0.endMark) : $0.endMark }
        // The final snapshot of the marks outside the scopes: a window's last mark if it ends early.
        let globalSnapshot = window.count > 0 && window.upperBound < markCount ? ordinary[window.upperBound - 1] : snapshotMark
        let limit = snapshotMark == nil ? UInt32.max : candidateLimit

        // One walk over the live blocks: persistence per epoch, survivors and unreachable blocks per site.
        var persistent = snapshotMark == nil ? [ObjectsAndBytes](repeating: ObjectsAndBytes(), count: epochs)
                                             : goneSinceCandidate
        // By site index: only sites with blocks live at the snapshot have survivors, and an
        // array for every site cost 60 MB on a test suite's 3.9 M sites.
        var survivors: [Int: ObjectsAndBytes] = [:]
        var scopeSurvivors = [[Int: ObjectsAndBytes]](repeating: [:], count: scopes.count)
        for (s, gone) in goneSurvivors where snapshotMark != nil && (gone.objects != 0 || gone.bytes != 0) {
            survivors[Int(s)] = gone
        }
        var unreachable = options.unreachable
        if let scanned = scannedUnreachable { unreachable = (unreachable ?? []).union(scanned) }
        var scanObjects = 0
        var scanBytes = 0
        var unreachableObjects = [Int](repeating: 0, count: unreachable == nil ? 0 : sites.count)
        var unreachableBytes = [Int](repeating: 0, count: unreachable == nil ? 0 : sites.count)
        // Indirect leaks (reached only from another unreachable block) and their owners' sites.
        var indirectObjects = [Int](repeating: 0, count: unreachable == nil ? 0 : sites.count)
        var indirectBytes = [Int](repeating: 0, count: unreachable == nil ? 0 : sites.count)
        var ownerSites: [Int: Set<Int>] = [:]
        table.forEach { address, block in
            let size = Int(truncatingIfNeeded: block.size)
            if block.epoch < limit {
                persistent[Int(block.epoch)].objects &+= 1
                persistent[Int(block.epoch)].bytes &+= size
                let g = epochGeneration[Int(block.epoch)]
                let context = g < generationContext.count ? generationContext[g] : -1
                if context == 0 {
                    survivors[Int(block.site), default: ObjectsAndBytes()].objects &+= 1
                    survivors[Int(block.site), default: ObjectsAndBytes()].bytes &+= size
                } else if context > 0 {
                    scopeSurvivors[context - 1][Int(block.site), default: ObjectsAndBytes()].objects &+= 1
                    scopeSurvivors[context - 1][Int(block.site), default: ObjectsAndBytes()].bytes &+= size
                }
            }
            if let unreachable, unreachable.contains(address) {
                unreachableObjects[Int(block.site)] &+= 1
                unreachableBytes[Int(block.site)] &+= size
            }
            if unreachable != nil, let owner = scannedOwners[address], unreachable!.contains(address) {
                indirectObjects[Int(block.site)] &+= 1
                indirectBytes[Int(block.site)] &+= size
                if let o = table.lookup(owner) { ownerSites[Int(block.site), default: []].insert(Int(o.site)) }
            }
            if let scanned = scannedUnreachable, scanned.contains(address) {
                scanObjects &+= 1
                scanBytes &+= size
            }
        }

        // Generations.
        var closedCounts = epochCounts
        closedCounts.append(current)
        var generations: [GenerationStats] = []
        generations.reserveCapacity(markCount + 1)
        var e = 0
        for g in 0...markCount {
            var stats = GenerationStats(
                index: g, role: g == 0 ? .setup : (g == markCount ? .tail : .cycle),
                isWarmUp: g >= 1 && g < markCount && g <= warmUp,
                label: g < markCount ? allMarks[ordinary[g]].label : nil,
                closingMark: g < markCount ? ordinary[g] : nil,
                allocations: 0, frees: 0, allocatedBytes: 0,
                liveObjects: g < markCount ? allMarks[ordinary[g]].liveObjects : UInt64(table.count),
                liveBytes: g < markCount ? allMarks[ordinary[g]].liveBytes : UInt64(clamping: liveBytes),
                peakLiveBytes: 0, persistentObjects: 0, persistentBytes: 0)
            var peak = 0
            while e < epochs && epochGeneration[e] == g {
                stats.allocations &+= closedCounts[e].allocations
                stats.frees &+= closedCounts[e].frees
                stats.allocatedBytes &+= closedCounts[e].allocatedBytes
                peak = max(peak, closedCounts[e].peakLiveBytes)
                stats.persistentObjects &+= UInt64(clamping: persistent[e].objects)
                stats.persistentBytes &+= UInt64(clamping: persistent[e].bytes)
                e += 1
            }
            stats.peakLiveBytes = UInt64(clamping: peak)
            generations.append(stats)
        }

        // Kept sites: findings (added below), top by live bytes at exit, top by peak.
        let limitSites = max(0, options.maxSites)
        var kept = Set(Self.top(limitSites, of: sites.indices, where: { sites[$0].liveObjects > 0 }) { a, b in
            let x = sites[a], y = sites[b]
            if x.liveBytes != y.liveBytes { return x.liveBytes > y.liveBytes }
            if x.liveObjects != y.liveObjects { return x.liveObjects > y.liveObjects }
            return a < b
        })
        // The same sites as stacksFinishNeeds(), whose frames a second pass may have read.
        kept.formUnion(sitesWithHighestPeaks(limitSites))

        let stackOf = siteStacks()
        // Sites: curves, verdicts, findings, type rollups. What regrouping needs is kept for
        // the candidates only, what the kept sites need for them only: per-site arrays of
        // every site cost 220 MB on a test suite's 3.9 M sites, nearly all of them neither.
        var findings: [Finding] = []
        /// Behaviour and snapshot of the kept sites.
        var keptState: [Int: (behavior: AllocationSite.Behavior, snapshot: ObjectsAndBytes)] = [:]
        /// Per type: the rollup and the changes of its sites' curves, (cycle, objects, bytes).
        var rollups: [UInt32: (rollup: TypeRollup, deltas: [(cycle: Int, objects: Int, bytes: Int)])] = [:]
        var regrouping = RegroupingData()
        regrouping.scopeSurvivors = [[Int: ObjectsAndBytes]](repeating: [:], count: scopes.count)
        for s in sites.indices {
            let site = sites[s]
            let points = series[UInt32(s)] ?? []
            let exit = ObjectsAndBytes(objects: Int(site.liveObjects), bytes: site.liveBytes)
            let curve = SiteCurve(points: points, ordinary: globalOrdinary, snapshotMark: globalSnapshot,
                                  liveAtEnd: exit)
            let snapshotLive = ObjectsAndBytes(objects: curve.snapshotObjects, bytes: curve.snapshotBytes)
            var behavior = AllocationSite.Behavior.flat
            // The scopes in whose cycles the site changed, each judged on its own marks.
            var touched: [Int] = []
            var abandonedInScope = false, cacheInScope = false
            if !scopes.isEmpty {
                for p in points {
                    let k = Int(p.mark) < markScope.count ? markScope[Int(p.mark)] : -1
                    if k >= 0 && touched.last != k { touched.append(k) }
                }
            }
            if curve.snapshotObjects != 0 || curve.snapshotBytes != 0 || (unreachable != nil && site.liveObjects > 0)
                || curve.isNonzeroAtSomeMark || !touched.isEmpty {
                let slot = regrouping.stacks.count
                regrouping.stacks.append(stackOf[s])
                regrouping.types.append(site.type)
                regrouping.series.append(points)
                regrouping.snapshot.append(snapshotLive)
                regrouping.survivors.append(survivors[s] ?? ObjectsAndBytes())
                regrouping.exit.append(exit)
                for k in scopes.indices {
                    if let scoped = scopeSurvivors[k][s] { regrouping.scopeSurvivors[k][slot] = scoped }
                }
                if let owners = ownerSites[s] {
                    regrouping.owners[slot] = Set(owners.map { SiteID(stackID: stackOf[$0], typeID: sites[$0].type) })
                }
                if unreachable != nil {
                    regrouping.unreachable.append(unreachableObjects[s])
                    regrouping.unreachableBytes.append(unreachableBytes[s])
                    regrouping.indirect.append(indirectObjects[s])
                    regrouping.indirectBytes.append(indirectBytes[s])
                }
            }
            for k in touched {
                let scopeCurve = SiteCurve(points: points, ordinary: scopeOrdinary[k],
                                           snapshotMark: scopeSnapshot[k], liveAtEnd: exit)
                var scopeOptions = options
                scopeOptions.warmUp = scopes[k].warmUp
                let verdict = Classifier.judge(scopeCurve, options: scopeOptions)
                guard let kind = verdict.kind else { continue }
                let totals = SiteTotals(survivors: scopeSurvivors[k][s] ?? ObjectsAndBytes(), exit: exit)
                var finding = Finding(kind: kind, stackID: stackOf[s], typeID: site.type,
                                      typeName: typeNames[site.type], verdict: verdict, curve: scopeCurve,
                                      totals: totals)
                finding.scope = scopes[k].title
                findings.append(finding)
                kept.insert(s)
                if kind == .abandoned { abandonedInScope = true } else { cacheInScope = true }
            }
            let verdict = Classifier.judge(curve, options: options)
            let totals = SiteTotals(survivors: survivors[s] ?? ObjectsAndBytes(), exit: exit,
                                    unreachableObjects: unreachable == nil ? 0 : unreachableObjects[s],
                                    unreachableBytes: unreachable == nil ? 0 : unreachableBytes[s],
                                    indirectObjects: unreachable == nil ? 0 : indirectObjects[s],
                                    indirectBytes: unreachable == nil ? 0 : indirectBytes[s],
                                    owners: Set((ownerSites[s] ?? []).map { SiteID(stackID: stackOf[$0], typeID: sites[$0].type) }))
            if let kind = Classifier.kind(verdict, totals: totals, leakClassification: unreachable != nil) {
                behavior = AllocationSite.Behavior(rawValue: kind.rawValue)!
                findings.append(Finding(kind: kind, stackID: stackOf[s], typeID: site.type,
                                        typeName: typeNames[site.type], verdict: verdict, curve: curve,
                                        totals: totals))
                kept.insert(s)
            } else if verdict.aboveSetupAtSnapshot {
                behavior = .grown
            } else if markCount > 0 && epochGeneration[Int(site.peakEpoch)] >= 1
                        && site.peakBytes > curve.value(at: 0).bytes {
                behavior = .transient
            }
            if abandonedInScope && behavior != .leaked {
                behavior = .abandoned
            } else if cacheInScope && behavior != .leaked && behavior != .abandoned {
                behavior = .cache
            }
            if kept.contains(s) { keptState[s] = (behavior, snapshotLive) }
            if site.type != 0 {
                var entry = rollups[site.type] ?? (
                    TypeRollup(typeID: site.type, typeName: typeNames[site.type], sites: 0, allocations: 0,
                               allocatedBytes: 0, snapshotObjects: 0, snapshotBytes: 0, liveAtExitObjects: 0,
                               liveAtExitBytes: 0, objectsPerCycle: [], bytesPerCycle: []), [])
                rollups[site.type] = nil
                entry.rollup.sites += 1
                entry.rollup.allocations &+= site.allocations
                entry.rollup.allocatedBytes &+= site.allocatedBytes
                entry.rollup.snapshotObjects &+= UInt64(clamping: curve.snapshotObjects)
                entry.rollup.snapshotBytes &+= UInt64(clamping: curve.snapshotBytes)
                entry.rollup.liveAtExitObjects &+= UInt64(clamping: site.liveObjects)
                entry.rollup.liveAtExitBytes &+= UInt64(clamping: site.liveBytes)
                entry.deltas += curve.deltas
                rollups[site.type] = entry
            }
        }
        findings.sort(by: Finding.reportOrder)
        let cycleCount = markCount > 1 ? markCount - 1 : 0
        var typeRollups: [TypeRollup] = rollups.values.map { entry in
            var rollup = entry.rollup
            // The type's change in a cycle is the sum of its sites' changes.
            var objects: [(index: Int, value: Int)] = [], bytes: [(index: Int, value: Int)] = []
            for d in entry.deltas.sorted(by: { $0.cycle < $1.cycle }) {
                if let last = objects.last, last.index == d.cycle {
                    objects[objects.count - 1].value &+= d.objects
                    bytes[bytes.count - 1].value &+= d.bytes
                } else {
                    objects.append((d.cycle, d.objects))
                    bytes.append((d.cycle, d.bytes))
                }
            }
            rollup.objectsSeries = CycleSeries(count: cycleCount, increasing: objects)
            rollup.bytesSeries = CycleSeries(count: cycleCount, increasing: bytes)
            return rollup
        }
        typeRollups.sort { a, b in
            a.snapshotBytes != b.snapshotBytes ? a.snapshotBytes > b.snapshotBytes : a.typeID < b.typeID
        }

        var keptSites: [AllocationSite] = kept.map { s in
            let site = sites[s]
            return AllocationSite(
                stackID: stackOf[s], typeID: site.type, typeName: typeNames[site.type],
                allocations: site.allocations, allocatedBytes: site.allocatedBytes,
                liveAtMarks: (series[UInt32(s)] ?? []).map {
                    AllocationSite.Point(mark: Int($0.mark), objects: UInt64(clamping: $0.objects),
                                         bytes: UInt64(clamping: $0.bytes))
                },
                snapshotObjects: UInt64(clamping: keptState[s]!.snapshot.objects),
                snapshotBytes: UInt64(clamping: keptState[s]!.snapshot.bytes),
                liveAtExitObjects: UInt64(clamping: site.liveObjects), liveAtExitBytes: UInt64(clamping: site.liveBytes),
                peakBytes: UInt64(clamping: site.peakBytes), peakGeneration: epochGeneration[Int(site.peakEpoch)],
                behavior: keptState[s]!.behavior)
        }
        keptSites.sort { a, b in
            if a.liveAtExitBytes != b.liveAtExitBytes { return a.liveAtExitBytes > b.liveAtExitBytes }
            if a.peakBytes != b.peakBytes { return a.peakBytes > b.peakBytes }
            if a.stackID != b.stackID { return a.stackID < b.stackID }
            return a.typeID < b.typeID
        }
        var stacks: [UInt32: [UInt64]] = [:]
        var stackPositions: [UInt32: UInt64] = [:]
        for site in keptSites where site.stackID != 0 {
            if let frames = stackFrames[site.stackID] { stacks[site.stackID] = frames }
            if let position = stackFrames.record(of: site.stackID) { stackPositions[site.stackID] = position }
        }

        // Totals.
        var totals = self.totals
        totals.peakBytes = UInt64(clamping: peakBytes)
        totals.peakGeneration = epochGeneration[Int(peakEpoch)]
        totals.liveAtExitObjects = UInt64(table.count)
        totals.liveAtExitBytes = UInt64(clamping: liveBytes)
        if let end {
            totals.producerWaits = end.producerWaits
            totals.producerWaitNanoseconds = end.producerWaitNanoseconds
            totals.lostEvents = end.lostEvents
            totals.tornEvents = end.tornEvents
            totals.arenaFull = end.arenaFull
            totals.stacksLost = end.stacksLost
        } else {
            totals.lostEvents = totals.lostRecords
        }

        // Notes.
        if markCount == 0 {
            notes.append("The trace has no generation marks: there are no cycles to judge, and the final snapshot is the end of the trace.")
        } else if judged < 2 {
            notes.append("Only \(cycles) cycle\(cycles == 1 ? "" : "s") with a warm-up of \(warmUp): at least 2 cycles after the warm-up are needed to judge growth, so there are no abandoned or cache findings.")
        }
        if let cut = end?.cutShortBy, totals.lostEvents == 0 {
            // Threads the exec or the signal stopped inside malloc or free: their image is gone.
            notes.append("\(totals.tornEvents) allocator call\(totals.tornEvents == 1 ? " was" : "s were") cut short by \(cut) (a thread was inside it) and \(totals.tornEvents == 1 ? "is" : "are") not in the trace.")
        } else if totals.lostEvents > 0 || totals.tornEvents > 0 {
            notes.append("The shim lost \(totals.lostEvents) and discarded \(totals.tornEvents) torn events: counts and findings may be off.")
        }
        if totals.duplicateAllocations > 0 {
            notes.append("\(totals.duplicateAllocations) allocations returned an address that was already live; the older block was dropped.")
        }
        if totals.unmatchedReallocUndos > 0 {
            notes.append("\(totals.unmatchedReallocUndos) reallocUndo records matched no pending realloc and were ignored.")
        }
        totals.leakScanned = scannedUnreachable != nil
        if scannedUnreachable != nil {
            notes.append("leak scan: \(HumanUnits.count(scanObjects)) unreachable block\(scanObjects == 1 ? "" : "s") "
                + "(\(HumanUnits.count(scanBytes)) B) of \(HumanUnits.count(table.count)) live at exit.")
        }
        if let unreachable, options.unreachable != nil {
            notes.append("Leak classification used \(unreachable.count) unreachable block addresses.")
        }
        if process == nil { notes.append("No process record.") }
        if end == nil { notes.append("No end record: the analysis covers only the records given so far.") }

        var keptOptions = options
        keptOptions.unreachable = nil
        var candidates = (0..<UInt32(regrouping.stacks.count)).map { $0 }
        candidates.sort { a, b in
            let x = SiteID(stackID: regrouping.stacks[Int(a)], typeID: regrouping.types[Int(a)])
            return x < SiteID(stackID: regrouping.stacks[Int(b)], typeID: regrouping.types[Int(b)])
        }
        regrouping.isAvailable = true
        regrouping.ordinary = globalOrdinary
        regrouping.scopes = scopes
        regrouping.scopeOrdinary = scopeOrdinary
        regrouping.scopeSnapshot = scopeSnapshot
        regrouping.snapshotMark = globalSnapshot
        regrouping.leakClassification = unreachable != nil
        let programSuppressions = self.programSuppressions
        regrouping.candidates = candidates
        regrouping.stackFrames = stackFrames
        var analysis = Analysis(
            options: keptOptions, totals: totals, marks: allMarks, snapshot: snapshot, generations: generations,
            cycles: narrowed ? max(0, window.count - 1) : cycles,
            judgedCycles: max(0, (narrowed ? max(0, window.count - 1 - warmUp) : judged) - idleJudged), findings: findings, sites: keptSites, siteCount: sites.count,
            typeRollups: typeRollups, typeNames: typeNames, stacks: stacks, stackRecordIndices: stackPositions,
            modules: modules,
            process: process ?? ProcessRecord(pid: 0, ppid: 0, origin: .root, executable: "", arguments: [],
                                              startUnixNanoseconds: 0),
            end: end, notes: notes)
        analysis.regrouping = regrouping
        // The same stacks whether or not the frames were read in a second pass (which kept
        // those of stacksFinishNeeds() only).
        if framesDropped || truncatedStacks.isEmpty {
            analysis.truncatedStacks = truncatedStacks
        } else {
            let needed = stacksFinishNeeds()
            analysis.truncatedStacks = truncatedStacks.filter { needed.contains($0.key) }
        }
        analysis.programSuppressions = programSuppressions
        analysis.recordingWarnings = recordingWarnings
        analysis.idleCycles = idleJudged
        // The graph of the final snapshot: the last one taken at or before it; else the
        // first one after it (e.g. `--retention` at exit when the snapshot is the last mark),
        // whose blocks still live are the snapshot's survivors.
        if let m = snapshotMark {
            analysis.retentionGraph = graphs.last { $0.isAtOrBefore(mark: m) } ?? graphs.first { !$0.isAtOrBefore(mark: m) }
        } else {
            analysis.retentionGraph = graphs.last
        }
        return analysis
    }
}
