// Judging groups of sites as one: a source call the compiler duplicated is one site.

import HeapGenTrace

/// The identity of an allocation site: its stack id and Swift type id.
public struct SiteID: Hashable, Sendable, Codable, Comparable {
    /// Stack id (frames via ``Analysis/frames(ofStack:)``).
    public var stackID: UInt32
    /// Swift type id (0 = not a Swift object).
    public var typeID: UInt32

    /// Creates a site id.
    public init(stackID: UInt32, typeID: UInt32) {
        self.stackID = stackID
        self.typeID = typeID
    }

    /// By stack id, then type id.
    public static func < (a: SiteID, b: SiteID) -> Bool {
        a.stackID != b.stackID ? a.stackID < b.stackID : a.typeID < b.typeID
    }
}

/// A finding of ``Analysis/regrouped(by:)``: the verdict on the summed curves of one
/// group of sites (or on one site left alone).
public struct GroupedFinding: Sendable, Equatable {
    /// The verdict and the summed numbers of the group. Its ``Finding/stackID`` and
    /// ``Finding/typeID`` are those of the group's representative, `members[0]`: the
    /// member with the most surviving bytes (then snapshot bytes, live bytes at exit,
    /// lowest stack id, lowest type id).
    public var finding: Finding
    /// Every site of the group, representative first, the others by stack id and type id.
    /// One element for a site left alone.
    public var members: [SiteID]

    /// Creates a grouped finding.
    public init(finding: Finding, members: [SiteID]) {
        self.finding = finding
        self.members = members
    }
}

extension Analysis {
    /// True if the analysis still has every site's curves, so that ``regrouped(by:)``
    /// can judge sums. False for a decoded analysis: the curves are not encoded.
    public var canRegroup: Bool { regrouping.isAvailable }

    /// The sites a grouping passed to ``regrouped(by:)`` is asked about: every site live
    /// at some ordinary mark or at the final snapshot, and, if the analysis classified
    /// leaks, every site with blocks live at exit; by stack id, then type id.
    ///
    /// Any other site adds nothing to a group's curves, survivors or leak verdict, so
    /// it is left alone. Empty if ``canRegroup`` is false.
    public var regroupingCandidates: [SiteID] {
        regrouping.candidates.map { SiteID(stackID: regrouping.stacks[Int($0)], typeID: regrouping.types[Int($0)]) }
    }

    /// Frames (innermost first) of stack `id`: from ``stacks``, or, for a stack no kept site
    /// uses, from the definitions kept for regrouping (not encoded): every stack of a small
    /// trace; of a large one read by ``GenerationAnalyzer/analyze(path:options:)``, the
    /// stacks of the regrouping candidates, of the sites live at exit and of the
    /// reference graph's blocks (the others are `nil`).
    public func frames(ofStack id: UInt32) -> [UInt64]? {
        stacks[id] ?? regrouping.stackFrames[id]
    }

    /// Record position where stack `id` was defined (see ``stackRecordIndices``), also for
    /// stacks that only ``frames(ofStack:)`` knows.
    public func recordIndex(ofStack id: UInt32) -> UInt64? {
        stackRecordIndices[id] ?? regrouping.stackFrames.record(of: id)
    }

    /// The findings when the sites that `key` maps to one value are judged as one site.
    ///
    /// The analysis keys sites by raw return addresses, but an optimising compiler can copy
    /// one source call (loop peeling, unrolling, inlining into several places), making one
    /// source call path several sites: the peeled copy of a leaking loop allocates only in
    /// cycle 1 (alone, a "cache" or nothing) while the loop copy starts in cycle 2. Judging
    /// the copies apart is wrong; summing their findings afterwards loses the copies that
    /// were not findings on their own. This sums first: for each group, the live objects and
    /// bytes at every ordinary mark and at the final snapshot, the survivors, and the
    /// live (and unreachable) blocks at exit, then judges the sum exactly as
    /// ``GenerationAnalyzer/finish()`` judges one site (``Finding/Kind``).
    ///
    /// `key` is called once for each site of ``regroupingCandidates``, with its stack id
    /// and type id; sites it maps to `nil`, sites alone in their group, and sites that are
    /// not candidates keep their own verdict from ``findings``. A group that holds
    /// a finding's site replaces that finding with the group's verdict, which may be none.
    ///
    /// Without curves (``canRegroup`` false: a decoded analysis), every finding is alone.
    ///
    /// Cost: O(candidates) calls of `key` plus, per member of a group of two or more,
    /// O(points of its series × log marks): never O(marks) per site.
    ///
    /// - Returns: findings in report order (``Finding/reportOrder(_:_:)`` on
    ///   ``GroupedFinding/finding``).
    public func regrouped<GroupKey: Hashable>(
        by key: (_ stackID: UInt32, _ typeID: UInt32) -> GroupKey?
    ) -> [GroupedFinding] {
        let data = regrouping
        guard data.isAvailable else {
            return findings.map { GroupedFinding(finding: $0, members: [SiteID(stackID: $0.stackID, typeID: $0.typeID)]) }
        }
        var groupOf: [GroupKey: Int] = [:]
        var groups: [[Int]] = []
        for s32 in data.candidates {
            let s = Int(s32)
            guard let k = key(data.stacks[s], data.types[s]) else { continue }
            if let g = groupOf[k] {
                groups[g].append(s)
            } else {
                groupOf[k] = groups.count
                groups.append([s])
            }
        }

        var out: [GroupedFinding] = []
        /// Sites judged in a group, by scope title ("" outside the scopes).
        var regrouped = Set<ScopedSite>()
        let markCount = data.ordinary.count
        for members in groups where members.count > 1 {
            var totals = SiteTotals()
            var curves: [SiteCurve] = []
            curves.reserveCapacity(members.count)
            for s in members {
                regrouped.insert(ScopedSite(scope: "", site: SiteID(stackID: data.stacks[s], typeID: data.types[s])))
                curves.append(SiteCurve(points: data.series[s], ordinary: data.ordinary,
                                        snapshotMark: data.snapshotMark, liveAtEnd: data.exit[s]))
                totals.add(data.totals(of: s))
            }
            let curve = SiteCurve.sum(curves, markCount: markCount)
            let ordered = members.sorted { a, b in
                let x = data.survivors[a], y = data.survivors[b]
                if x.bytes != y.bytes { return x.bytes > y.bytes }
                let xs = data.snapshot[a], ys = data.snapshot[b]
                if xs.bytes != ys.bytes { return xs.bytes > ys.bytes }
                if data.exit[a].bytes != data.exit[b].bytes { return data.exit[a].bytes > data.exit[b].bytes }
                return SiteID(stackID: data.stacks[a], typeID: data.types[a])
                    < SiteID(stackID: data.stacks[b], typeID: data.types[b])
            }
            let ids = ordered.map { SiteID(stackID: data.stacks[$0], typeID: data.types[$0]) }
            let representative = ids[0]
            // Each scope the group's sites changed in judges the group's sum on its own marks.
            for (k, scope) in data.scopes.enumerated() {
                var scopeCurves: [SiteCurve] = []
                var scopeTotals = SiteTotals()
                for s in members {
                    regrouped.insert(ScopedSite(scope: scope.title,
                                                site: SiteID(stackID: data.stacks[s], typeID: data.types[s])))
                    scopeCurves.append(SiteCurve(points: data.series[s], ordinary: data.scopeOrdinary[k],
                                                 snapshotMark: data.scopeSnapshot[k], liveAtEnd: data.exit[s]))
                    scopeTotals.survivors.objects &+= data.scopeSurvivors[k][s]?.objects ?? 0
                    scopeTotals.survivors.bytes &+= data.scopeSurvivors[k][s]?.bytes ?? 0
                    scopeTotals.exit.objects &+= data.exit[s].objects
                    scopeTotals.exit.bytes &+= data.exit[s].bytes
                }
                var scopeOptions = options
                scopeOptions.warmUp = scope.warmUp
                let scopeCurve = SiteCurve.sum(scopeCurves, markCount: data.scopeOrdinary[k].count)
                let verdict = Classifier.judge(scopeCurve, options: scopeOptions)
                guard let kind = verdict.kind else { continue }
                var finding = Finding(kind: kind, stackID: representative.stackID,
                                      typeID: representative.typeID, typeName: typeNames[representative.typeID],
                                      verdict: verdict, curve: scopeCurve, totals: scopeTotals)
                finding.scope = scope.title
                out.append(GroupedFinding(finding: finding, members: [representative] + ids.dropFirst().sorted()))
            }
            let verdict = Classifier.judge(curve, options: options)
            guard let kind = Classifier.kind(verdict, totals: totals, leakClassification: data.leakClassification)
            else { continue }
            let finding = Finding(kind: kind, stackID: representative.stackID, typeID: representative.typeID,
                                  typeName: typeNames[representative.typeID], verdict: verdict, curve: curve,
                                  totals: totals)
            out.append(GroupedFinding(finding: finding, members: [representative] + ids.dropFirst().sorted()))
        }
        for f in findings
        where !regrouped.contains(ScopedSite(scope: f.scope ?? "", site: SiteID(stackID: f.stackID, typeID: f.typeID))) {
            out.append(GroupedFinding(finding: f, members: [SiteID(stackID: f.stackID, typeID: f.typeID)]))
        }
        out.sort { Finding.reportOrder($0.finding, $1.finding) }
        return out
    }
}

/// A site within one scope (its title; "" for the marks outside the scopes).
struct ScopedSite: Hashable {
    var scope: String
    var site: SiteID
}

/// Counts of one site (or group) that are not part of its curve.
struct SiteTotals {
    var survivors = ObjectsAndBytes()
    var exit = ObjectsAndBytes()
    var unreachableObjects = 0
    var unreachableBytes = 0
    /// Of the unreachable blocks, those reached from another unreachable block.
    var indirectObjects = 0
    var indirectBytes = 0
    /// The sites of the direct leaks that own the indirect ones.
    var owners: Set<SiteID> = []

    mutating func add(_ other: SiteTotals) {
        survivors.objects &+= other.survivors.objects
        survivors.bytes &+= other.survivors.bytes
        exit.objects &+= other.exit.objects
        exit.bytes &+= other.exit.bytes
        unreachableObjects &+= other.unreachableObjects
        unreachableBytes &+= other.unreachableBytes
        indirectObjects &+= other.indirectObjects
        indirectBytes &+= other.indirectBytes
        owners.formUnion(other.owners)
    }
}

/// What ``Analysis/regrouped(by:)`` needs of every site; kept out of the encoded analysis.
///
/// Kept for the regrouping candidates only (the sites a grouping can change): per-site
/// arrays are indexed by the candidate's *slot*, its position among the candidates in site
/// order, and so are the keys of `owners` and `scopeSurvivors`. Each `series` element
/// shares its storage with the analyzer (copy on write).
struct RegroupingData: Sendable, Equatable {
    /// False for an analysis that was decoded (nothing below is set).
    var isAvailable = false
    /// Indices in ``Analysis/marks`` of the ordinary marks.
    var ordinary: [Int] = []
    /// Index of the final snapshot's mark; `nil` = the end of the trace.
    var snapshotMark: Int?
    var leakClassification = false
    var stacks: [UInt32] = []
    var types: [UInt32] = []
    var series: [[SeriesPoint]] = []
    var snapshot: [ObjectsAndBytes] = []
    var survivors: [ObjectsAndBytes] = []
    var exit: [ObjectsAndBytes] = []
    /// Per slot; empty without leak classification.
    var unreachable: [Int] = []
    /// Requested bytes of those blocks, per slot; empty without leak classification.
    var unreachableBytes: [Int] = []
    /// Per slot, of those: the indirectly leaked blocks and bytes; empty without classification.
    var indirect: [Int] = []
    var indirectBytes: [Int] = []
    /// Per slot: the sites owning its indirect leaks.
    var owners: [Int: Set<SiteID>] = [:]
    /// The slots of ``Analysis/regroupingCandidates`` (every slot), by stack id, then type id.
    var candidates: [UInt32] = []
    /// The scopes, the marks of each (as ``ordinary``) and its survivors by slot.
    var scopes: [CycleScope] = []
    var scopeOrdinary: [[Int]] = []
    var scopeSnapshot: [Int] = []
    var scopeSurvivors: [[Int: ObjectsAndBytes]] = []
    /// The analyzer's stack definitions (see ``Analysis/frames(ofStack:)``), and where each was defined.
    var stackFrames = StackFrameStore()

    func totals(of s: Int) -> SiteTotals {
        SiteTotals(survivors: survivors[s], exit: exit[s],
                   unreachableObjects: unreachable.isEmpty ? 0 : unreachable[s],
                   unreachableBytes: unreachableBytes.isEmpty ? 0 : unreachableBytes[s],
                   indirectObjects: indirect.isEmpty ? 0 : indirect[s],
                   indirectBytes: indirectBytes.isEmpty ? 0 : indirectBytes[s],
                   owners: owners[s] ?? [])
    }

    /// Derived from the trace the analysis describes: not part of the analysis's identity.
    static func == (_: RegroupingData, _: RegroupingData) -> Bool { true }
}

extension SiteCurve {
    /// The curve of a site from its sparse `points` (live counts from a mark of
    /// ``Analysis/marks`` on): its counts at every ordinary mark (indices `ordinary`) and at
    /// the final snapshot (`snapshotMark`, never before the last ordinary mark; `nil` = the
    /// end of the trace, where the site had `liveAtEnd`). Cost: O(points × log marks).
    init(points: [SeriesPoint], ordinary: [Int], snapshotMark: Int?, liveAtEnd: ObjectsAndBytes) {
        self.init(markCount: ordinary.count)
        var snapshot = (objects: 0, bytes: 0)
        for p in points {
            let mark = Int(p.mark)
            // The first ordinary mark at or after this point sees it.
            var low = 0, high = ordinary.count
            while low < high {
                let mid = (low + high) / 2
                if ordinary[mid] < mark { low = mid + 1 } else { high = mid }
            }
            if low < ordinary.count { set(p.objects, p.bytes, from: low) }
            if let snapshotMark, mark <= snapshotMark { snapshot = (p.objects, p.bytes) }
        }
        if snapshotMark != nil {
            snapshotObjects = snapshot.objects
            snapshotBytes = snapshot.bytes
        } else {
            snapshotObjects = liveAtEnd.objects
            snapshotBytes = liveAtEnd.bytes
        }
    }
}

extension Classifier {
    /// The finding kind of a site or group: leaked if leak classification was used and any
    /// block live at exit is unreachable (LeakSanitizer reports every unreachable block, not
    /// only sites that lost all of theirs), else the verdict's kind.
    static func kind(_ verdict: GrowthVerdict, totals: SiteTotals, leakClassification: Bool) -> Finding.Kind? {
        if leakClassification && totals.unreachableObjects > 0 {
            return .leaked
        }
        return verdict.kind
    }
}

extension Finding {
    /// A finding of `kind` from a site's (or group's) verdict, curve and totals.
    init(kind: Kind, stackID: UInt32, typeID: UInt32, typeName: String?, verdict: GrowthVerdict, curve: SiteCurve,
         totals: SiteTotals) {
        self.init(
            kind: kind, stackID: stackID, typeID: typeID, typeName: typeName,
            cycles: verdict.judgedCycles, cyclesWithGrowth: verdict.cyclesWithGrowth,
            objectsPerCycle: [], bytesPerCycle: [],
            survivingObjects: UInt64(clamping: totals.survivors.objects),
            survivingBytes: UInt64(clamping: totals.survivors.bytes),
            averageBytesPerCycle: verdict.averageBytesPerCycle,
            averageObjectsPerCycle: verdict.averageObjectsPerCycle,
            firstCycleWithGrowth: verdict.firstCycleWithGrowth,
            snapshotObjects: UInt64(clamping: curve.snapshotObjects),
            snapshotBytes: UInt64(clamping: curve.snapshotBytes),
            liveAtExitObjects: UInt64(clamping: totals.exit.objects),
            liveAtExitBytes: UInt64(clamping: totals.exit.bytes))
        if kind == .leaked {
            leakedObjects = UInt64(clamping: totals.unreachableObjects)
            leakedBytes = UInt64(clamping: totals.unreachableBytes)
            indirectObjects = UInt64(clamping: totals.indirectObjects)
            indirectBytes = UInt64(clamping: totals.indirectBytes)
            if !totals.owners.isEmpty { leakOwners = totals.owners.sorted() }
        }
        objectsSeries = verdict.objectDeltas
        bytesSeries = verdict.byteDeltas
        onsetCycle = verdict.onsetCycle
        cyclesWithGrowthSinceOnset = verdict.cyclesWithGrowthSinceOnset
    }
}
