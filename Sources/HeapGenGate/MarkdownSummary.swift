// The verdict as GitHub-flavoured Markdown, for $GITHUB_STEP_SUMMARY.

import HeapGenReport
import HeapGenUnits

/// Renders a ``GateVerdict`` as GitHub-flavoured Markdown (`--summary PATH`): a heading with
/// the verdict, the `SUMMARY` line, a table of the abandoned and leaked findings (status,
/// kind, type, per-cycle growth, bytes left behind, user frame with file:line), the whole-heap
/// criteria, fixed baseline entries, and the failing findings' stacks in a `<details>` block.
public enum MarkdownSummary {
    /// No finding: what that covers, no more (2 judged cycles for abandoned memory, a leak
    /// scan for leaks), as the HTML page's verdict says it.
    static func nothingFound(judgedCycles: Int, leakScanned: Bool) -> String {
        let cycles = HumanUnits.plural(judgedCycles, "judged cycle")
        switch (judgedCycles >= 2, leakScanned) {
        case (true, true): return "No abandoned or leaked memory over \(cycles)."
        case (true, false): return "No abandoned memory over \(cycles); leaks not judged (record with --leaks)."
        case (false, true): return "No leaked memory at exit; abandoned memory not judged (\(cycles), 2 needed)."
        case (false, false): return "Nothing judged: \(cycles) (2 needed) and no leak scan."
        }
    }

    /// The Markdown text, ending with a blank line (so that appended summaries stay apart).
    public static func render(_ v: GateVerdict, report: Report) -> String {
        var lines: [String] = []
        lines.append(v.failed ? "### ❌ heapgen: leak gate failed" : "### ✅ heapgen: leak gate passed")
        lines.append("")
        lines.append("`\(report.program.args.first.map(SiteText.baseName) ?? report.program.path)` — "
                     + GateMessages.summary(v).replacingPipes)
        lines.append("")
        if !v.findings.isEmpty {
            lines.append("| status | kind | type | per cycle | left behind | where |")
            lines.append("|---|---|---|--:|--:|---|")
            for r in v.findings {
                let f = r.finding
                let frame = f.userFrameValue ?? f.frames.first
                let cells = [status(r, v), f.kind.rawValue, f.typeName.map(code) ?? "—",
                             f.isLeakWithoutCycles ? "—" : cell(SiteText.growth(f).replacingOccurrences(" per cycle", "")),
                             ByteSize.exact(f.survivingBytes),
                             frame.map { code(SiteText.functionName($0)) + place($0) } ?? "—"]
                lines.append("| " + cells.joined(separator: " | ") + " |")
            }
            lines.append("")
        } else if v.judgesFindings || (v.growth == nil && v.liveAtExit == nil && v.invalidFrees == nil) {
            lines.append(nothingFound(judgedCycles: v.judgedCycles, leakScanned: report.totals.leakScanned))
            lines.append("")
        }
        if let g = v.growth {
            lines.append("- \(g.failed ? "❌" : "✅") \(cell(GateMessages.growthPhrase(g)))")
        }
        if let live = v.liveAtExit {
            lines.append("- \(live.failed ? "❌" : "✅") \(cell(GateMessages.livePhrase(live)))")
        }
        if let frees = v.invalidFrees {
            if frees.failed {
                lines.append("- ❌ \(cell(GateMessages.invalidFreesPhrase(frees)))")
            } else {
                lines.append("- ✅ no invalid frees" + (frees.suppressedCount > 0 ? " (\(HumanUnits.plural(frees.suppressedCount, "suppressed")))" : ""))
            }
            for r in frees.explained {
                let status = r.suppressedBy.map { "🔇 suppressed (" + code(v.policy.suppressions.rules[$0].description) + "): " } ?? ""
                lines.append("  - \(status)\(cell(SiteText.strayFree(r.free)))")
            }
            if frees.unexplained > 0 {
                lines.append("  - \(HumanUnits.plural(frees.unexplained, "more")) not explained (heapgen info TRACE lists their events)")
            }
        }
        if v.growth != nil || v.liveAtExit != nil || v.invalidFrees != nil { lines.append("") }
        if !v.fixedEntries.isEmpty {
            lines.append("**Fixed — remove from the baseline:**")
            for e in v.fixedEntries { lines.append("- \(cell(e.site))") }
            lines.append("")
        }
        for w in v.warnings { lines.append("> ⚠️ \(cell(w))") }
        if !v.warnings.isEmpty { lines.append("") }
        let failing = v.failingFindings
        if !failing.isEmpty {
            lines.append("<details><summary>Stacks of the failing sites</summary>")
            lines.append("")
            for r in failing {
                lines.append("**\(cell(SiteText.site(r.finding)))** — \(cell(SiteText.amount(r.finding)))")
                lines.append("```")
                lines += SiteText.stack(r.finding).map { $0.replacingOccurrences("```", "'''") }
                lines.append("```")
            }
            lines.append("</details>")
            lines.append("")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func status(_ r: GateVerdict.FindingResult, _ v: GateVerdict) -> String {
        switch r.status {
        case .failing: return "❌ failing"
        case .suppressed(let rule): return "🔇 suppressed (" + code(v.policy.suppressions.rules[rule].description) + ")"
        case .known: return "📌 known (baseline)"
        case .belowLimit: return "✅ below limit"
        case .notGated: return "➖ not gated"
        case .inLibraries: return "📚 in libraries (not judged)"
        }
    }

    /// ` (file:line)` by file base name, else ` (module)`.
    static func place(_ frame: Report.Frame) -> String {
        SiteText.place(frame) { cell(SiteText.baseName($0)) }
    }

    /// A code span safe inside a table cell (no backticks, pipes escaped, one line).
    static func code(_ s: String) -> String {
        "`" + s.replacingOccurrences("`", "'").replacingOccurrences("\n", " ").replacingPipes + "`"
    }

    /// Text safe inside a table cell: pipes escaped, no newlines, no HTML.
    static func cell(_ s: String) -> String {
        s.replacingPipes.replacingOccurrences("\n", " ").replacingOccurrences("<", "&lt;").replacingOccurrences("`", "'")
    }
}

extension String {
    var replacingPipes: String { replacingOccurrences("|", "\\|") }

    /// Replaces every `target` with `replacement` (no Foundation).
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        guard !target.isEmpty, contains(target) else { return self }
        var out = ""
        var rest = self[...]
        while let r = rest.firstRange(of: target) {
            out += rest[..<r.lowerBound]
            out += replacement
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}
