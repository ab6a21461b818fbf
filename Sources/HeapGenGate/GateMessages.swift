// The verdict as LeakSanitizer-style lines.

import HeapGenTrace
import HeapGenReport
import HeapGenUnits

/// Text forms of a ``GateVerdict``: the lines heapgen prints to standard error
/// (`heapgen: gate failed: …`, `SUMMARY: heapgen: …`), the "Suppressions used" table of
/// `--print-suppressions`, and notes for the report.
public enum GateMessages {
    /// Sites named on one `gate failed` line before `… and N more`.
    public static let maxSitesPerLine = 5
    /// The source name of the rules a program's `__lsan_default_suppressions()` returned.
    public static let programSuppressionsSource = "__lsan_default_suppressions"

    /// The verdict: one `heapgen: gate failed: …` line per failed criterion, the suppressed,
    /// known and fixed findings, warnings, and a final `SUMMARY: heapgen: …` line.
    public static func verdictLines(_ v: GateVerdict) -> [String] {
        var lines: [String] = []
        for kind in [Report.Finding.Kind.abandoned, .leaked] {
            let failing = v.failing(kind)
            guard !failing.isEmpty else { continue }
            lines.append("heapgen: gate failed: " + findingsPhrase(failing, kind) + ": " + siteList(failing.map(\.finding)))
        }
        if let g = v.growth, g.failed {
            lines.append("heapgen: gate failed: " + growthPhrase(g))
        }
        if let live = v.liveAtExit, live.failed {
            lines.append("heapgen: gate failed: " + livePhrase(live))
        }
        if let frees = v.invalidFrees, frees.failed {
            lines.append("heapgen: gate failed: " + invalidFreesPhrase(frees) + strayList(frees))
        }
        if v.stacksLost > 0 {
            lines.append("heapgen: gate failed: the trace is incomplete: " + StackCompleteness.lostWarning(v.stacksLost))
        }
        for r in v.invalidFrees?.explained ?? [] {
            guard let index = r.suppressedBy else { continue }
            let rule = v.policy.suppressions.rules[index]
            lines.append("heapgen: suppressed by \(rule)\(ruleOrigin(rule)): \(SiteText.strayFree(r.free))")
        }
        for r in v.findings {
            switch r.status {
            case .suppressed(let rule):
                let rule = v.policy.suppressions.rules[rule]
                lines.append("heapgen: suppressed by \(rule)\(ruleOrigin(rule)): \(SiteText.site(r.finding)), \(SiteText.amount(r.finding))")
            case .known:
                lines.append("heapgen: known (baseline): \(SiteText.site(r.finding)), \(SiteText.amount(r.finding))")
            default:
                break
            }
        }
        for entry in v.fixedEntries {
            lines.append("heapgen: fixed — remove from the baseline: \(fixedName(entry))")
        }
        for warning in v.warnings { lines.append("heapgen: warning: \(warning)") }
        // LeakSanitizer's own summary line for the failing leaks, before the verdict's.
        if let leaks = Report.Finding.leakSummary(v.failing(.leaked).map(\.finding)) {
            lines.append("SUMMARY: heapgen: " + leaks)
        }
        lines.append("SUMMARY: heapgen: " + summary(v))
        return lines
    }

    /// The text after `SUMMARY: heapgen: `: `gate failed: …` or `gate passed: …`.
    public static func summary(_ v: GateVerdict) -> String {
        var parts: [String] = []
        var exceptions: [String] = []
        let suppressed = v.findings.filter { if case .suppressed = $0.status { return true } else { return false } }.count
        let known = v.findings.filter { if case .known = $0.status { return true } else { return false } }.count
        if suppressed > 0 { exceptions.append("\(suppressed) suppressed") }
        if known > 0 { exceptions.append("\(known) known (baseline)") }
        if !v.fixedEntries.isEmpty { exceptions.append("\(v.fixedEntries.count) fixed") }
        if let frees = v.invalidFrees, frees.suppressedCount > 0 {
            exceptions.append("\(HumanUnits.plural(frees.suppressedCount, "invalid free")) suppressed")
        }
        let tail = exceptions.isEmpty ? "" : "; " + exceptions.joined(separator: ", ")
        if v.failed {
            for kind in [Report.Finding.Kind.abandoned, .leaked] where !v.failing(kind).isEmpty {
                parts.append(findingsPhrase(v.failing(kind), kind))
            }
            if let g = v.growth, g.failed { parts.append(growthPhrase(g)) }
            if let live = v.liveAtExit, live.failed { parts.append(livePhrase(live)) }
            if let frees = v.invalidFrees, frees.failed { parts.append(invalidFreesPhrase(frees)) }
            if v.stacksLost > 0 { parts.append("\(HumanUnits.plural(v.stacksLost, "allocation")) without a stack (incomplete trace)") }
            return "gate failed: " + parts.joined(separator: ", ") + tail + "."
        }
        let policy = v.policy
        if policy.failOn.contains(.abandoned) {
            parts.append("no abandoned memory above \(ByteSize.exact(policy.maxBytesPerCycle)) per cycle over \(HumanUnits.plural(v.judgedCycles, "cycle"))")
        }
        if policy.failOn.contains(.leaked) {
            // Without a scan nothing was judged: say so, not "no leaked sites" (a JVM whose
            // scan stopped at its cap passed "with no leaked sites").
            parts.append(v.leaksJudged ? "no leaked sites" : "leaked memory not judged (no leak scan)")
        }
        if let g = v.growth {
            parts.append("live heap \(ByteSize.signed(g.bytesPerCycle)) per cycle (limit \(ByteSize.exact(g.limit)))")
        }
        if let live = v.liveAtExit {
            parts.append("\(ByteSize.exact(live.bytes)) live at exit (limit \(ByteSize.exact(live.limit)))")
        }
        if v.invalidFrees != nil { parts.append("no invalid frees") }
        if parts.isEmpty { parts.append("no criteria (--fail-on, --max-live-at-exit)") }
        return "gate passed: " + parts.joined(separator: ", ") + tail + "."
    }

    /// LeakSanitizer's table: a rule per line with the findings it matched and their bytes.
    public static func suppressionTable(_ v: GateVerdict) -> [String] {
        var lines = ["-----------------------------------------------------", "Suppressions used:",
                     "  count      bytes template"]
        for use in v.ruleUses {
            // Rules of the program's __lsan_default_suppressions() say so.
            let origin = use.rule.source == programSuppressionsSource ? "  (from the program: \(programSuppressionsSource))" : ""
            lines.append(pad(String(use.findings + use.frees), 7) + " " + pad(String(use.bytes), 10) + " " + use.rule.description + origin)
        }
        let live = v.ruleUses.filter { $0.liveSites > 0 }
        if !live.isEmpty {
            lines.append("Live at exit:")
            for use in live {
                lines.append(pad(String(use.liveSites), 7) + " " + pad(String(use.liveBytes), 10) + " " + use.rule.description)
            }
        }
        lines.append("-----------------------------------------------------")
        return lines
    }

    /// Notes for the report: suppressed, known and fixed findings, so that the report (text and
    /// JSON) says what the gate excused.
    public static func reportNotes(_ v: GateVerdict) -> [String] {
        var notes: [String] = []
        for r in v.findings {
            switch r.status {
            case .suppressed(let rule):
                notes.append("Gate: suppressed by \(v.policy.suppressions.rules[rule]): \(SiteText.site(r.finding)).")
            case .known:
                notes.append("Gate: known (baseline): \(SiteText.site(r.finding)).")
            default:
                break
            }
        }
        for r in v.invalidFrees?.explained ?? [] {
            if let rule = r.suppressedBy {
                notes.append("Gate: suppressed by \(v.policy.suppressions.rules[rule]): \(SiteText.strayFree(r.free)).")
            }
        }
        for e in v.fixedEntries {
            notes.append("Gate: fixed — remove from the baseline: \(fixedName(e)).")
        }
        return notes
    }

    /// How the verdict lines and report notes name a fixed baseline entry: its site, or its
    /// signature for an entry written without one.
    static func fixedName(_ entry: Baseline.Entry) -> String {
        entry.site.isEmpty ? entry.signature.canonicalText : entry.site
    }

    // MARK: - Phrases

    /// `2 abandoned sites (+292 B per cycle)`; `2 leaked sites (864 B in 9 blocks)`; sites
    /// leaked only through another (indirect leaks) counted apart, as the report nests them:
    /// `4 leaked sites (1,354 B in 17 blocks, with 5 sites leaked only through them)`.
    static func findingsPhrase(_ results: [GateVerdict.FindingResult], _ kind: Report.Finding.Kind) -> String {
        if kind == .leaked {
            let bytes = results.reduce(UInt64(0)) { $0 &+ ($1.finding.leakedBytes ?? 0) }
            let blocks = results.reduce(UInt64(0)) { $0 &+ ($1.finding.leakedBlocks ?? 0) }
            let held = results.filter { $0.finding.heldBy != nil }.count
            let sites = held == results.count ? results.count : results.count - held
            let through = held == 0 || held == results.count
                ? "" : ", with \(HumanUnits.plural(held, "site")) leaked only through \(sites == 1 ? "it" : "them")"
            return "\(HumanUnits.plural(sites, "leaked site")) (\(ByteSize.exact(Int(clamping: bytes))) in \(HumanUnits.plural(blocks, "block"))\(through))"
        }
        let perCycle = results.reduce(0) { $0 + $1.finding.averageBytesPerCycle }
        return "\(HumanUnits.plural(results.count, "\(kind.rawValue) site")) (\(ByteSize.signed(perCycle)) per cycle)"
    }

    /// `live heap grew +292 B per cycle over 7 cycles (limit 1,024 B)`.
    static func growthPhrase(_ g: GateVerdict.Growth) -> String {
        var text = "live heap grew \(ByteSize.signed(g.bytesPerCycle)) per cycle over \(HumanUnits.plural(g.cycles, "cycle")) (limit \(ByteSize.exact(g.limit))"
        if g.excusedBytesPerCycle > 0 { text += "; \(ByteSize.exact(g.excusedBytesPerCycle)) per cycle of suppressed or known sites left out" }
        return text + ")"
    }

    /// `3,104 B live at exit (limit 1,000 B)`.
    static func livePhrase(_ live: GateVerdict.LiveAtExit) -> String {
        var text = "\(ByteSize.exact(live.bytes)) live at exit (limit \(ByteSize.exact(live.limit))"
        if live.suppressedBytes > 0 { text += "; \(ByteSize.exact(live.suppressedBytes)) suppressed" }
        return text + ")"
    }

    /// `2 invalid frees (1 double free, 1 interior pointer)`: those that fail the gate.
    static func invalidFreesPhrase(_ frees: GateVerdict.InvalidFrees) -> String {
        var kinds: [String] = []
        let failing = frees.failingExplained
        let doubles = failing.filter { $0.cause == .doubleFree }.count
        let interior = failing.filter { $0.cause == .interiorPointer }.count
        let foreign = failing.count - doubles - interior
        if doubles > 0 { kinds.append(HumanUnits.plural(doubles, "double free")) }
        if interior > 0 { kinds.append(HumanUnits.plural(interior, "interior pointer")) }
        if foreign > 0 { kinds.append("\(foreign) never allocated") }
        if frees.unexplained > 0 { kinds.append("\(HumanUnits.count(frees.unexplained)) not explained") }
        return HumanUnits.plural(frees.failingCount, "invalid free") + " (" + kinds.joined(separator: ", ") + ")"
    }

    /// `: double free of a 16 B block allocated at …; …`, the first failing ones explained.
    static func strayList(_ frees: GateVerdict.InvalidFrees) -> String {
        let failing = frees.failingExplained
        if frees.explained.isEmpty { return ": " + Report.StrayFree.unexplainedReason }
        guard !failing.isEmpty else {
            return ": the report explains only the first \(HumanUnits.count(UInt64(frees.explained.count))) (heapgen info TRACE lists every one's event)"
        }
        var text = ": " + failing.prefix(maxSitesPerLine).map(SiteText.strayFree).joined(separator: "; ")
        let more = frees.failingCount - UInt64(min(failing.count, maxSitesPerLine))
        if more > 0 { text += "; … and \(HumanUnits.count(more)) more" }
        return text
    }

    /// `A at f (x.c:1); B at g (y.c:2) (3 sites); … and 3 more`: sites that read the same
    /// (their stacks differ further out) are named once, with their count.
    static func siteList(_ findings: [Report.Finding]) -> String {
        var names: [(text: String, count: Int)] = []
        for text in findings.map(SiteText.site) {
            if let i = names.firstIndex(where: { $0.text == text }) { names[i].count += 1 } else { names.append((text, 1)) }
        }
        var text = names.prefix(maxSitesPerLine).map { $0.count == 1 ? $0.text : "\($0.text) (\($0.count) sites)" }
            .joined(separator: "; ")
        let more = names.dropFirst(maxSitesPerLine).reduce(0) { $0 + $1.count }
        if more > 0 { text += "; … and \(more) more" }
        return text
    }

    static func ruleOrigin(_ rule: Suppressions.Rule) -> String {
        rule.source.isEmpty ? "" : " (\(SiteText.baseName(rule.source)):\(rule.line))"
    }

    static func pad(_ s: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - s.count)) + s
    }
}
