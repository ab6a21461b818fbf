// Judging a report against a gate policy.

import HeapGenReport

/// A CI leak gate: decides from a ``Report`` whether a run fails.
///
/// ```swift
/// let policy = GatePolicy(failOn: [.abandoned], maxBytesPerCycle: 1024,
///                         suppressions: try Suppressions.load(paths: ["lsan.supp"]))
/// let verdict = Gate.evaluate(report, policy: policy)
/// if verdict.failed { exit(23) }
/// ```
///
/// Each abandoned or leaked finding is, in this order: suppressed (a rule matches), known (a
/// baseline entry matches), not gated (its kind is not a criterion), in libraries (abandoned
/// with no frame in the program's code, unless the policy includes them), below the limit
/// (abandoned, ``GatePolicy/maxBytesPerCycle`` or less per cycle), or failing. Caches never fail.
/// With ``GatePolicy/Criterion/invalidFree``, each free of an address that was not live that
/// the report explains fails unless a `free:` rule matches its block's allocation stack;
/// those past the explained ones fail unexplained.
public enum Gate {
    /// Judges `report` against `policy`.
    public static func evaluate(_ report: Report, policy: GatePolicy) -> GateVerdict {
        let candidates = report.findings.filter { $0.kind == .abandoned || $0.kind == .leaked }
        let match = policy.baseline?.match(candidates)
        var uses = policy.suppressions.rules.map {
            GateVerdict.RuleUse(rule: $0, findings: 0, bytes: 0, liveSites: 0, liveBytes: 0)
        }
        var warnings: [String] = []

        // Indirect leaks follow their owner (LeakSanitizer): a leaked finding whose blocks are
        // all indirect, owned by findings a rule suppresses, is suppressed by that rule.
        var ruleOfFinding: [Int: Int] = [:]
        for (i, f) in report.findings.enumerated() where f.kind == .leaked {
            if let rule = policy.suppressions.firstMatch(f) { ruleOfFinding[i] = rule }
        }
        func ownerRule(_ f: Report.Finding) -> Int? {
            guard f.kind == .leaked, f.directBlocks == 0, let owners = f.ownerFindings, !owners.isEmpty else { return nil }
            let rules = owners.map { ruleOfFinding[$0] }
            guard rules.allSatisfy({ $0 != nil }) else { return nil }
            return rules[0]
        }

        var results: [GateVerdict.FindingResult] = []
        for (i, f) in candidates.enumerated() {
            let status: GateVerdict.Status
            if let rule = policy.suppressions.firstMatch(f) ?? ownerRule(f) {
                status = .suppressed(rule: rule)
                uses[rule].findings += 1
                uses[rule].bytes += f.kind == .leaked ? f.leakedBytes ?? 0 : f.survivingBytes
            } else if let entry = match?.entryForFinding[i] {
                status = .known(entry: entry)
            } else if f.kind == .abandoned && !policy.failOn.contains(.abandoned) {
                status = .notGated
            } else if f.kind == .leaked && !policy.failOn.contains(.leaked) {
                status = .notGated
            } else if f.kind == .abandoned && f.inLibraries && !policy.includeLibraries {
                status = .inLibraries
            } else if f.kind == .abandoned && f.averageBytesPerCycle <= policy.maxBytesPerCycle {
                status = .belowLimit
            } else {
                status = .failing
            }
            results.append(GateVerdict.FindingResult(finding: f, status: status, signature: BaselineSignature(f)))
        }

        // Whole-heap growth, less what suppressed and known findings account for.
        var growth: GateVerdict.Growth?
        if policy.failOn.contains(.growth) {
            growth = measureGrowth(report, results: results, limit: policy.maxBytesPerCycle)
            if growth == nil {
                warnings.append("growth not judged: \(report.judgedCycles) cycle\(report.judgedCycles == 1 ? "" : "s") after the warm-up")
            }
        }
        if policy.failOn.contains(.leaked) && !report.totals.leakScanned {
            warnings.append("leaked memory not judged: the trace has no leak scan (record with --leaks; "
                + "a process that exits without running its exit handlers is not scanned, and a scan that "
                + "would read more than 1 GiB or take 20 s gives up, as the recording's warning said)")
        }
        if policy.failOn.contains(.abandoned) && report.judgedCycles < 2 {
            warnings.append("abandoned memory not judged: \(report.judgedCycles) cycle\(report.judgedCycles == 1 ? "" : "s") after the warm-up, 2 needed (mark one generation per cycle)")
        }

        // Live at exit, less the suppressed sites among those the report lists.
        var live: GateVerdict.LiveAtExit?
        if let limit = policy.maxLiveAtExit {
            var suppressed: UInt64 = 0
            for site in report.liveAtExit.sites {
                if let rule = policy.suppressions.firstMatch(frames: site.frames, typeName: site.typeName) {
                    suppressed += site.bytes
                    uses[rule].liveSites += 1
                    uses[rule].liveBytes += site.bytes
                }
            }
            live = GateVerdict.LiveAtExit(totalBytes: report.liveAtExit.bytes, suppressedBytes: suppressed, limit: limit)
        }

        // Frees of addresses that were not live: the explained ones against the `free:` rules.
        var invalidFrees: GateVerdict.InvalidFrees?
        if policy.failOn.contains(.invalidFree) {
            let explained = (report.strayFrees ?? []).map { stray in
                let rule = policy.suppressions.firstMatch(stray)
                if let rule {
                    uses[rule].frees += 1
                    uses[rule].bytes += stray.blockSize ?? 0
                }
                return GateVerdict.InvalidFrees.Result(free: stray, suppressedBy: rule)
            }
            invalidFrees = GateVerdict.InvalidFrees(total: max(report.totals.untrackedFrees, UInt64(explained.count)),
                                                    explained: explained)
            // A free whose allocation was lost looks stray too.
            if report.totals.lostEvents > 0 && invalidFrees?.failed == true {
                warnings.append("\(report.totals.lostEvents) events were lost: a free whose allocation was lost counts as invalid too")
            }
        }

        // Fixed baseline entries: only when there were cycles enough to see the findings.
        var fixed: [Baseline.Entry] = []
        if let baseline = policy.baseline, let match {
            if report.judgedCycles >= 2 {
                fixed = match.unmatchedEntries.map { baseline.entries[$0] }
            } else if !baseline.entries.isEmpty {
                warnings.append("baseline entries not checked for fixes: too few cycles")
            }
        }

        var verdict = GateVerdict(policy: policy, findings: results, judgedCycles: report.judgedCycles, growth: growth,
                                  liveAtExit: live, invalidFrees: invalidFrees, ruleUses: uses, fixedEntries: fixed,
                                  warnings: warnings)
        verdict.leaksJudged = report.totals.leakScanned
        // Partial data: sites without a stack can hide what the criteria look for.
        if !policy.failOn.isEmpty || policy.maxLiveAtExit != nil {
            verdict.stacksLost = report.totals.stacksLost
        }
        return verdict
    }

    /// The whole heap's mean growth per judged cycle: live bytes at the mark closing the last
    /// cycle (the final snapshot, unless a settle mark follows it) minus live bytes at the mark
    /// opening the first judged cycle, over the judged cycles, from the generation table.
    /// `nil` when no cycle was judged.
    static func measureGrowth(_ report: Report, results: [GateVerdict.FindingResult], limit: Int) -> GateVerdict.Growth? {
        let judged = report.judgedCycles
        guard judged >= 1 else { return nil }
        let startIndex = report.cycles - judged   // the warm-up's last generation (0: setup)
        guard let start = report.generations.first(where: { $0.index == startIndex }),
              let end = report.generations.first(where: { $0.index == report.cycles }) else { return nil }
        let delta = Int(clamping: end.liveBytes) - Int(clamping: start.liveBytes)
        let heap = Int((Double(delta) / Double(judged)).rounded())
        let excused = results.reduce(0) { sum, r in
            switch r.status {
            case .suppressed, .known: return sum + max(0, r.finding.averageBytesPerCycle)
            default: return sum
            }
        }
        return GateVerdict.Growth(startBytes: start.liveBytes, endBytes: end.liveBytes, cycles: judged,
                                  heapBytesPerCycle: heap, excusedBytesPerCycle: excused, limit: limit)
    }
}
