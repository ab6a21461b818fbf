// Turning the analyzer's running state into an Analysis.

import HeapGenTrace

extension GenerationAnalyzer {
    /// The analysis of the records consumed so far.
    ///
    /// Cost: one walk over the live blocks plus O(sites + marks + series points × log marks);
    /// memory grows with sites + marks + series points, never with sites × marks. The
    /// analyzer is not changed.
    public func finish() -> Analysis {
        var notes: [String] = []
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
        let limit = snapshotMark == nil ? UInt32.max : candidateLimit

        // One walk over the live blocks: persistence per epoch, survivors and unreachable blocks per site.
        var persistent = snapshotMark == nil ? [ObjectsAndBytes](repeating: ObjectsAndBytes(), count: epochs)
                                             : goneSinceCandidate
        var survivors = [ObjectsAndBytes](repeating: ObjectsAndBytes(), count: sites.count)
        for s in sites.indices where snapshotMark != nil && sites[s].sinceStamp == candidateStamp {
            survivors[s] = ObjectsAndBytes(objects: sites[s].goneSurvivorObjects, bytes: sites[s].goneSurvivorBytes)
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
        let finalGeneration = generation
        table.forEach { address, block in
            let size = Int(truncatingIfNeeded: block.size)
            if block.epoch < limit {
                persistent[Int(block.epoch)].objects &+= 1
                persistent[Int(block.epoch)].bytes &+= size
                let g = epochGeneration[Int(block.epoch)]
                if g > warmUp && g < finalGeneration {
                    survivors[Int(block.site)].objects &+= 1
                    survivors[Int(block.site)].bytes &+= size
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

        // Sites: curves, verdicts, findings, type rollups.
        var findings: [Finding] = []
        var behaviors = [AllocationSite.Behavior](repeating: .flat, count: sites.count)
        var snapshotLive = [ObjectsAndBytes](repeating: ObjectsAndBytes(), count: sites.count)
        /// Per type: the rollup and the changes of its sites' curves, (cycle, objects, bytes).
        var rollups: [UInt32: (rollup: TypeRollup, deltas: [(cycle: Int, objects: Int, bytes: Int)])] = [:]
        var exitLive = [ObjectsAndBytes](repeating: ObjectsAndBytes(), count: sites.count)
        var candidates: [UInt32] = []
        for s in sites.indices {
            let site = sites[s]
            exitLive[s] = ObjectsAndBytes(objects: site.liveObjects, bytes: site.liveBytes)
            let curve = SiteCurve(points: series[s], ordinary: ordinary, snapshotMark: snapshotMark,
                                  liveAtEnd: exitLive[s])
            snapshotLive[s] = ObjectsAndBytes(objects: curve.snapshotObjects, bytes: curve.snapshotBytes)
            if curve.snapshotObjects != 0 || curve.snapshotBytes != 0 || (unreachable != nil && site.liveObjects > 0)
                || curve.isNonzeroAtSomeMark {
                candidates.append(UInt32(s))
            }
            let verdict = Classifier.judge(curve, options: options)
            let totals = SiteTotals(survivors: survivors[s], exit: exitLive[s],
                                    unreachableObjects: unreachable == nil ? 0 : unreachableObjects[s],
                                    unreachableBytes: unreachable == nil ? 0 : unreachableBytes[s],
                                    indirectObjects: unreachable == nil ? 0 : indirectObjects[s],
                                    indirectBytes: unreachable == nil ? 0 : indirectBytes[s],
                                    owners: Set((ownerSites[s] ?? []).map { SiteID(stackID: sites[$0].stack, typeID: sites[$0].type) }))
            if let kind = Classifier.kind(verdict, totals: totals, leakClassification: unreachable != nil) {
                behaviors[s] = AllocationSite.Behavior(rawValue: kind.rawValue)!
                findings.append(Finding(kind: kind, stackID: site.stack, typeID: site.type,
                                        typeName: typeNames[site.type], verdict: verdict, curve: curve,
                                        totals: totals))
            } else if verdict.aboveSetupAtSnapshot {
                behaviors[s] = .grown
            } else if markCount > 0 && epochGeneration[Int(site.peakEpoch)] >= 1
                        && site.peakBytes > curve.value(at: 0).bytes {
                behaviors[s] = .transient
            }
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

        // Kept sites: findings, top by live bytes at exit, top by peak.
        var kept = Set<Int>()
        for finding in findings {
            if let s = siteByKey[UInt64(finding.stackID) << 32 | UInt64(finding.typeID)] { kept.insert(Int(s)) }
        }
        let limitSites = max(0, options.maxSites)
        let byLive = sites.indices.filter { sites[$0].liveObjects > 0 }.sorted { a, b in
            let x = sites[a], y = sites[b]
            if x.liveBytes != y.liveBytes { return x.liveBytes > y.liveBytes }
            if x.liveObjects != y.liveObjects { return x.liveObjects > y.liveObjects }
            return a < b
        }
        kept.formUnion(byLive.prefix(limitSites))
        let byPeak = sites.indices.filter { sites[$0].peakBytes > 0 }.sorted { a, b in
            sites[a].peakBytes != sites[b].peakBytes ? sites[a].peakBytes > sites[b].peakBytes : a < b
        }
        kept.formUnion(byPeak.prefix(limitSites))
        var keptSites: [AllocationSite] = kept.map { s in
            let site = sites[s]
            return AllocationSite(
                stackID: site.stack, typeID: site.type, typeName: typeNames[site.type],
                allocations: site.allocations, allocatedBytes: site.allocatedBytes,
                liveAtMarks: series[s].map {
                    AllocationSite.Point(mark: Int($0.mark), objects: UInt64(clamping: $0.objects),
                                         bytes: UInt64(clamping: $0.bytes))
                },
                snapshotObjects: UInt64(clamping: snapshotLive[s].objects),
                snapshotBytes: UInt64(clamping: snapshotLive[s].bytes),
                liveAtExitObjects: UInt64(clamping: site.liveObjects), liveAtExitBytes: UInt64(clamping: site.liveBytes),
                peakBytes: UInt64(clamping: site.peakBytes), peakGeneration: epochGeneration[Int(site.peakEpoch)],
                behavior: behaviors[s])
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
            if let position = stackRecords[site.stackID] { stackPositions[site.stackID] = position }
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
        } else {
            totals.lostEvents = totals.lostRecords
        }

        // Notes.
        if markCount == 0 {
            notes.append("The trace has no generation marks: there are no cycles to judge, and the final snapshot is the end of the trace.")
        } else if judged < 2 {
            notes.append("Only \(cycles) cycle\(cycles == 1 ? "" : "s") with a warm-up of \(warmUp): at least 2 cycles after the warm-up are needed to judge growth, so there are no abandoned or cache findings.")
        }
        if totals.lostEvents > 0 || totals.tornEvents > 0 {
            notes.append("The shim lost \(totals.lostEvents) and discarded \(totals.tornEvents) torn events: counts and findings may be off.")
        }
        if totals.duplicateAllocations > 0 {
            notes.append("\(totals.duplicateAllocations) allocations returned an address that was already live; the older block was dropped.")
        }
        if totals.unmatchedReallocUndos > 0 {
            notes.append("\(totals.unmatchedReallocUndos) reallocUndo records matched no pending realloc and were ignored.")
        }
        if scannedUnreachable != nil {
            notes.append("leak scan: \(scanObjects) unreachable block\(scanObjects == 1 ? "" : "s") (\(scanBytes) B) of \(table.count) live at exit.")
        }
        if let unreachable, options.unreachable != nil {
            notes.append("Leak classification used \(unreachable.count) unreachable block addresses.")
        }
        if process == nil { notes.append("No process record.") }
        if end == nil { notes.append("No end record: the analysis covers only the records given so far.") }

        var keptOptions = options
        keptOptions.unreachable = nil
        candidates.sort { a, b in
            let x = sites[Int(a)], y = sites[Int(b)]
            return x.stack != y.stack ? x.stack < y.stack : x.type < y.type
        }
        var regrouping = RegroupingData()
        regrouping.isAvailable = true
        regrouping.ordinary = ordinary
        regrouping.snapshotMark = snapshotMark
        regrouping.leakClassification = unreachable != nil
        regrouping.stacks = sites.map(\.stack)
        regrouping.types = sites.map(\.type)
        regrouping.series = series
        regrouping.snapshot = snapshotLive
        regrouping.survivors = survivors
        regrouping.exit = exitLive
        regrouping.unreachable = unreachableObjects
        regrouping.unreachableBytes = unreachableBytes
        regrouping.indirect = indirectObjects
        let programSuppressions = self.programSuppressions
        regrouping.indirectBytes = indirectBytes
        regrouping.owners = ownerSites.mapValues { Set($0.map { SiteID(stackID: sites[$0].stack, typeID: sites[$0].type) }) }
        regrouping.candidates = candidates
        regrouping.stackFrames = stackFrames
        regrouping.stackRecords = stackRecords
        var analysis = Analysis(
            options: keptOptions, totals: totals, marks: allMarks, snapshot: snapshot, generations: generations,
            cycles: cycles, judgedCycles: judged, findings: findings, sites: keptSites, siteCount: sites.count,
            typeRollups: typeRollups, typeNames: typeNames, stacks: stacks, stackRecordIndices: stackPositions,
            modules: modules,
            process: process ?? ProcessRecord(pid: 0, ppid: 0, origin: .root, executable: "", arguments: [],
                                              startUnixNanoseconds: 0),
            end: end, notes: notes)
        analysis.regrouping = regrouping
        analysis.programSuppressions = programSuppressions
        return analysis
    }
}
