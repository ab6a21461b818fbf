// The one-screen text report.

import HeapGenAnalysis
import HeapGenTrace
import HeapGenUnits
import HeapGenSymbolication

/// Renders a ``Report`` as text for a terminal: a header, the generation table, the
/// findings (abandoned first, then leaked, then caches under their own heading), what was
/// live at exit as a LeakSanitizer-style `SUMMARY:` line, and the notes.
///
/// Long tables are shortened: the middle generations are elided beyond
/// ``maxGenerationRows`` rows, per-cycle series beyond ``maxSeriesEntries`` entries, and
/// stacks show ``maxStackFrames`` frames from the first frame in the program's own code.
public enum TextReport {
    /// Generation rows shown before the middle ones are elided.
    public static let maxGenerationRows = 16
    /// Per-cycle deltas shown before the middle ones are elided.
    public static let maxSeriesEntries = 20
    /// Frames of a finding's stack shown.
    public static let maxStackFrames = 5
    /// Abandoned or leaked findings shown in detail (the rest are summed on one line).
    public static let maxFindings = 10
    /// Cache lines (one per place in the program's code) shown.
    public static let maxCacheLines = 5
    /// Library-only growth findings shown in detail.
    public static let maxLibraryFindings = 3
    /// Live-at-exit sites listed under the summary line.
    public static let maxLiveSites = 5

    /// The text of `report`, ending with a newline; ANSI colour only if `color`.
    public static func render(_ report: Report, color: Bool = false) -> String {
        let style = TextStyle(enabled: color)
        var lines: [String] = []
        lines += header(report, style)
        lines.append("")
        lines += generationTable(report, style)
        lines.append("")
        lines += findings(report, style)
        lines.append("")
        lines += liveAtExit(report, style)
        if report.totals.untrackedFrees > 0 || !(report.strayFrees ?? []).isEmpty {
            lines.append("")
            lines += strayFrees(report.strayFrees ?? [], total: report.totals.untrackedFrees, style)
        }
        if !report.otherTraces.isEmpty {
            lines.append("")
            lines += otherTraces(report, style)
        }
        if !report.notes.isEmpty {
            lines.append("")
            lines.append(style.bold("Notes"))
            for note in report.notes { lines.append("  - " + note) }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Frees of addresses that were not live: each explained, with the block's allocation
    /// stack (from the program's own code, at most 2 frames, and the second only if it is the
    /// program's too: libc's start-up frames say nothing here), then how many more there were.
    static func strayFrees(_ strays: [Report.StrayFree], total: UInt64, _ style: TextStyle) -> [String] {
        let n = max(total, UInt64(strays.count))
        var lines = [style.bold("Frees of addresses that were not live") + " (\(HumanUnits.count(n)))"]
        for s in strays {
            lines.append("  " + s.summary)
            let shown = shownFrames(s.frames, from: s.userFrame, limit: 2).enumerated().filter { i, f in
                i == 0 || OwnCode.isOwnCode(module: f.module, function: f.function, file: f.file)
            }.map(\.element)
            for (i, frame) in shown.enumerated() {
                lines.append("      " + (i == 0 ? style.dim("allocated at ") : "             ") + frameText(frame, style))
            }
        }
        if strays.isEmpty {
            lines.append(style.dim("  " + Report.StrayFree.unexplainedReason))
        } else if n > UInt64(strays.count) {
            lines.append(style.dim("  … and \(HumanUnits.count(n - UInt64(strays.count))) more (heapgen info TRACE lists the first \(TraceSummary.maxProblemLines))"))
        }
        return lines
    }

    /// Other traces listed by name before "… and N more".
    public static let maxOtherTraces = 5

    /// The recording's other traces (children, exec'd programs), so none goes unnoticed.
    static func otherTraces(_ r: Report, _ style: TextStyle) -> [String] {
        let n = r.otherTraces.count
        var lines = [style.bold("Other traces") + " (\(n) more process image\(n == 1 ? "" : "s") in this recording; heapgen report TRACE)"]
        for path in r.otherTraces.prefix(maxOtherTraces) { lines.append("  " + path) }
        if n > maxOtherTraces { lines.append("  … and \(n - maxOtherTraces) more") }
        return lines
    }

    // MARK: - Header

    static func header(_ r: Report, _ style: TextStyle) -> [String] {
        let name = r.program.name
        var lines = [style.bold("heapgen: \(name)") + " (pid \(r.program.pid)) " + r.program.endingDescription]
        let t = r.totals
        lines.append("  \(HumanUnits.plural(t.allocations, "allocation")), \(HumanUnits.plural(t.frees, "free")), "
            + "\(HumanUnits.bytes(t.allocatedBytes)) allocated; peak \(HumanUnits.bytes(t.peakBytes)) in generation \(t.peakGeneration)")
        if t.producerWaits > 0 {
            lines.append("  the program waited \(HumanUnits.plural(t.producerWaits, "time")) for heapgen, "
                + "\(HumanUnits.duration(nanoseconds: t.producerWaitNanoseconds)) in all")
        }
        if t.lostEvents > 0 {
            lines.append(style.yellow("  \(HumanUnits.plural(t.lostEvents, "event")) lost: counts and findings may be off"))
        }
        if t.stacksLost > 0 {
            lines.append(style.yellow("  warning: " + StackCompleteness.lostWarning(t.stacksLost)))
        }
        if let scan = r.retentionScan {
            let at = scan.label.map { "at mark \($0)" } ?? "at \(scan.trigger)"
            lines.append("  retention scan \(at): \(HumanUnits.plural(scan.blocks, "block")), "
                + "\(HumanUnits.plural(scan.references, "reference")); read \(HumanUnits.bytes(scan.bytesRead)) in "
                + HumanUnits.duration(nanoseconds: scan.nanoseconds))
        }
        return lines
    }

    // MARK: - Generations

    static func generationTable(_ r: Report, _ style: TextStyle) -> [String] {
        let warm = r.cycles - r.judgedCycles - (r.idleCycles ?? 0)
        var title = "Generations"
        if r.cycles > 0 {
            title += " (\(HumanUnits.plural(r.cycles, "cycle"))"
            title += warm > 0 ? ", the first \(warm == 1 ? "is" : "\(warm) are") warm-up)" : ")"
        }
        var rows: [[String]] = [["gen", "label", "allocs", "frees", "allocated", "live", "bytes", "persistent", "bytes"]]
        let gens = r.generations
        var shown: [Report.Generation?] = gens
        if gens.count > maxGenerationRows {
            let head = maxGenerationRows / 2, tail = maxGenerationRows - head - 1
            shown = Array(gens.prefix(head)) + [nil] + Array(gens.suffix(tail))
        }
        var elidedRow: Int?
        for g in shown {
            guard let g else {
                elidedRow = rows.count
                rows.append([])
                continue
            }
            rows.append([
                String(g.index), generationLabel(g, r), HumanUnits.count(g.allocations), HumanUnits.count(g.frees),
                HumanUnits.bytes(g.allocatedBytes), HumanUnits.count(g.liveObjects), HumanUnits.bytes(g.liveBytes),
                HumanUnits.count(g.persistentObjects), HumanUnits.bytes(g.persistentBytes),
            ])
        }
        let columns = rows[0].count
        var widths = [Int](repeating: 0, count: columns)
        for row in rows where !row.isEmpty {
            for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) }
        }
        var lines = [style.bold(title)]
        for (n, row) in rows.enumerated() {
            if n == elidedRow {
                lines.append(style.dim("  " + pad("…", widths[0], right: true) + "  \(gens.count - maxGenerationRows + 1) more"))
                continue
            }
            var cells: [String] = []
            for (i, cell) in row.enumerated() {
                cells.append(pad(cell, widths[i], right: i != 1))
            }
            let line = "  " + cells.joined(separator: "  ")
            lines.append(n == 0 ? style.dim(line) : line)
        }
        return lines
    }

    static func generationLabel(_ g: Report.Generation, _ r: Report) -> String {
        var label = g.label ?? (r.generations.count == 1 ? "(whole trace)" : "(after last mark)")
        if label.isEmpty { label = "(unlabelled)" }
        // A scope's label keeps its distinct end (`testLeaky() (LeakTests.swift:31) cycle 3/10`):
        // cut at the front if it must be cut, never down to `expectNoGrowth cy…`.
        if let scope = CycleScope.parse(label) {
            let step = scope.cycle == 0 ? "start" : label.split(separator: " ").suffix(2).joined(separator: " ")
            let text = scope.name.isEmpty ? "\(scope.kind) \(step)" : "\(scope.name) \(step)"
            return text.count <= maxScopeLabel ? text : "…" + String(text.suffix(maxScopeLabel - 1))
        }
        // A long label keeps its last word when that is short: the timer's `every 100.0 ms #125`
        // ends in what tells its marks apart (`every 100.0 ms #1…` was every mark past 99).
        guard label.count > 18, let space = label.lastIndex(of: " ") else { return truncate(label, 18) }
        let last = label[label.index(after: space)...]
        guard !last.isEmpty, last.count <= 8 else { return truncate(label, 18) }
        let head = label[..<space].prefix(18 - 2 - last.count).trimmingCharacters(in: .whitespaces)
        return head + "… " + last
    }

    /// Width of a scope's label in the generation table.
    public static let maxScopeLabel = 48

    // MARK: - Findings

    static func findings(_ r: Report, _ style: TextStyle) -> [String] {
        $heldContext.withValue(r) { findingLines(r, style) }
    }

    static func findingLines(_ r: Report, _ style: TextStyle) -> [String] {
        var lines: [String] = []
        // Findings of scopes (expectNoGrowth and HeapGen.cycles calls) come after the others,
        // scope by scope; the scopes are read back from the generation labels.
        let scopes = CycleScope.find(labels: r.generations.map(\.label))
        // With a reference graph, findings held by another are shown under their holder.
        let outside = r.findings.filter { $0.scope == nil && $0.heldBy == nil }
        let all = outside.filter { $0.kind == .abandoned }, leaked = outside.filter { $0.kind == .leaked }
        // Caches of every scope are listed together: never failures.
        let caches = r.findings.filter { $0.kind == .cache }
        // Growth with no frame in the program's own code is the toolchain's (XCTest's timers,
        // libdispatch's bookkeeping): shown apart, after the program's own.
        let abandoned = all.filter { !$0.inLibraries }, inLibraries = all.filter(\.inLibraries)
        // Cycles outside the scopes: the ordinary marks not in a scope, less one, less the warm-up.
        let marks = max(0, r.generations.count - 1)
        let outsideMarks = marks - scopes.reduce(0) { $0 + $1.cycles + 1 }
        let outsideJudged = scopes.isEmpty ? r.judgedCycles : max(0, outsideMarks - 1 - r.options.warmUp)
        if abandoned.isEmpty && leaked.isEmpty {
            if outsideJudged >= 2 {
                let whose = inLibraries.isEmpty ? "" : " in your code"
                let where_ = scopes.isEmpty ? "" : " outside the scopes"
                lines.append(style.green(style.bold("No growth\(whose)\(where_) across \(HumanUnits.plural(outsideJudged, "cycle")).")))
            } else if !scopes.isEmpty {
                // Judged scope by scope below.
            } else if r.cycles == 0 {
                lines.append(style.bold("No cycles to judge: the program marked no generations.")
                    + " Mark one per push/pop cycle (HEAPGEN_MARK, HeapGen.mark) or use --mark-every.")
            } else {
                lines.append(style.bold("Too few cycles to judge growth: \(r.judgedCycles) after the warm-up, 2 needed."))
            }
        }
        if !abandoned.isEmpty {
            lines.append(style.red("Abandoned memory: \(HumanUnits.plural(abandoned.count, "site")) \(growthClaim(abandoned))"))
            lines += growthFindings(abandoned, style)
        }
        if !leaked.isEmpty {
            if !lines.isEmpty { lines.append("") }
            lines.append(style.red("Leaked: \(HumanUnits.plural(leaked.count, "site")) unreachable at exit"))
            lines += growthFindings(leaked, style)
            // LSan's total: every leaked finding outside the scopes, those shown under a holder too.
            let allLeaked = r.findings.filter { $0.scope == nil && $0.kind == .leaked }
            if let summary = Report.Finding.leakSummary(allLeaked) { lines.append("  SUMMARY: heapgen: " + summary) }
        }
        if !inLibraries.isEmpty {
            if !lines.isEmpty { lines.append("") }
            lines.append(style.yellow(style.bold("Growth in libraries only")) + " (\(HumanUnits.plural(inLibraries.count, "site")), no frame in your code; the gate judges it with --include-libraries)")
            lines += growthFindings(inLibraries, style, limit: maxLibraryFindings)
        }
        lines += scopeFindings(r, scopes: scopes, style, separated: !lines.isEmpty)
        if !caches.isEmpty {
            if !lines.isEmpty { lines.append("") }
            lines.append(style.yellow(style.bold("Caches (filled, then flat — not failures)")))
            lines += cacheLines(caches, style)
        }
        return lines
    }

    /// Each scope that grew with its findings, then one line for the scopes that did not.
    static func scopeFindings(_ r: Report, scopes: [CycleScope], _ style: TextStyle, separated: Bool) -> [String] {
        // Held findings are listed under their holder (retentionLines).
        let scoped = r.findings.filter { $0.scope != nil && $0.kind != .cache && $0.heldBy == nil }
        guard !scopes.isEmpty || !scoped.isEmpty else { return [] }
        var lines: [String] = []
        var titles: [String] = []
        for scope in scopes where !titles.contains(scope.title) { titles.append(scope.title) }
        for f in scoped where !titles.contains(f.scope!) { titles.append(f.scope!) }
        var clean: [String] = []
        for title in titles {
            let found = scoped.filter { $0.scope == title }
            let own = found.filter { !$0.inLibraries }, inLibraries = found.filter(\.inLibraries)
            guard !own.isEmpty || !inLibraries.isEmpty else {
                clean.append(title)
                continue
            }
            if separated || !lines.isEmpty { lines.append("") }
            if !own.isEmpty {
                lines.append(style.red("Abandoned memory in \(title): \(HumanUnits.plural(own.count, "site")) \(growthClaim(own))"))
                lines += growthFindings(own, style)
            }
            if !inLibraries.isEmpty {
                lines.append(style.yellow("Growth in libraries only in \(title)") + " (\(HumanUnits.plural(inLibraries.count, "site")), no frame in your code)")
                lines += growthFindings(inLibraries, style, limit: maxLibraryFindings)
            }
        }
        if !clean.isEmpty {
            if separated || !lines.isEmpty { lines.append("") }
            let judged = scopes.filter { clean.contains($0.title) }
            let tooShort = judged.filter { $0.judgedCycles < 2 }.map(\.title)
            let ok = clean.filter { !tooShort.contains($0) }
            if !ok.isEmpty {
                lines.append(style.green("No growth in \(HumanUnits.plural(ok.count, "scope")), each judged on its own cycles: ") + ok.joined(separator: "; "))
            }
            if !tooShort.isEmpty {
                lines.append(style.bold("Too few cycles to judge (2 after the warm-up needed): ") + tooShort.joined(separator: "; "))
            }
        }
        return lines
    }

    /// What every site of `findings` did, in words that match their numbers: `grew in every
    /// judged cycle`, `grew in every judged cycle, missing at most 1`, `… from some cycle on`.
    static func growthClaim(_ findings: [Report.Finding]) -> String {
        let misses = findings.map { f in
            f.onsetCycle == nil ? f.cycles - f.cyclesWithGrowth
                                : f.cyclesSinceOnset - (f.cyclesWithGrowthSinceOnset ?? f.cyclesSinceOnset)
        }.max() ?? 0
        let late = findings.filter { $0.onsetCycle != nil }.count
        var text = findings.count == 1 && late == 1 ? "grew in every cycle" : "grew in every judged cycle"
        if misses > 0 { text += ", missing at most \(misses)" }
        if late == findings.count {
            text += " from some cycle on"
        } else if late > 0 {
            text += " (\(late) of them only from some cycle on)"
        }
        return text
    }

    /// Up to ``maxFindings`` findings in detail, then one line for the rest. Findings (of one
    /// kind) with the same title and the same shown frames (full function, file, line, column,
    /// module: not merely their short text) are shown as one entry with their deltas summed;
    /// their stacks differ only outside the frames shown, and the entry says so.
    static func growthFindings(_ findings: [Report.Finding], _ style: TextStyle, limit: Int = maxFindings) -> [String] {
        var merged: [(finding: Report.Finding, sites: Int, key: [String])] = []
        var index: [[String]: Int] = [:]
        for f in findings {
            let key = [title(f)] + shownFrames(f.frames, from: f.userFrame).map(frameIdentity)
            if let i = index[key] {
                merged[i].finding = summed(merged[i].finding, f)
                merged[i].sites += 1
            } else {
                index[key] = merged.count
                merged.append((f, 1, key))
            }
        }
        var lines: [String] = []
        for (i, entry) in merged.prefix(limit).enumerated() {
            lines += growthFinding(entry.finding, number: i + 1, sites: entry.sites, style)
        }
        if merged.count > limit {
            let rest = merged.dropFirst(limit)
            // Count sites, not entries: one entry may show several sites with one stack.
            let sites = rest.reduce(0) { $0 + $1.sites }
            let amount: String
            if rest.allSatisfy(\.finding.isLeakWithoutCycles) {
                // Leaks found at exit without cycles: what they leaked, not a growth.
                let bytes = rest.reduce(UInt64(0)) { $0 &+ ($1.finding.leakedBytes ?? 0) }
                amount = "\(HumanUnits.bytes(bytes)) leaked together"
            } else {
                let perCycle = rest.reduce(0) { $0 + $1.finding.averageBytesPerCycle }
                amount = "\(HumanUnits.signedBytes(perCycle)) per cycle together"
            }
            lines.append(style.dim("  … \(HumanUnits.plural(sites, "more site")), \(amount) (--format json lists every site)"))
        }
        return lines
    }

    /// Two findings of one kind shown as one entry: deltas and survivors summed, the cycles
    /// with growth and the average recounted on the sums; frames of the first.
    static func summed(_ a: Report.Finding, _ b: Report.Finding) -> Report.Finding {
        func add(_ x: [Int], _ y: [Int]) -> [Int] {
            (0..<max(x.count, y.count)).map { (x.indices.contains($0) ? x[$0] : 0) + (y.indices.contains($0) ? y[$0] : 0) }
        }
        var c = a
        c.cycles = max(a.cycles, b.cycles)
        c.objectsPerCycle = add(a.objectsPerCycle, b.objectsPerCycle)
        c.bytesPerCycle = add(a.bytesPerCycle, b.bytesPerCycle)
        let judged = max(0, min(c.cycles, c.objectsPerCycle.count))
        let start = c.objectsPerCycle.count - judged
        c.cyclesWithGrowth = (start..<c.objectsPerCycle.count).filter {
            c.objectsPerCycle[$0] > 0 || c.bytesPerCycle[$0] > 0
        }.count
        let judgedBytes = c.bytesPerCycle[start...].reduce(0, +)
        c.averageBytesPerCycle = judged > 0 ? Int((Double(judgedBytes) / Double(judged)).rounded()) : 0
        c.survivingObjects = a.survivingObjects + b.survivingObjects
        c.survivingBytes = a.survivingBytes + b.survivingBytes
        if a.leakedBlocks != nil || b.leakedBlocks != nil {
            c.leakedBlocks = (a.leakedBlocks ?? 0) + (b.leakedBlocks ?? 0)
            c.leakedBytes = (a.leakedBytes ?? 0) + (b.leakedBytes ?? 0)
        }
        if a.retainedBytes != nil || b.retainedBytes != nil {
            c.retainedBytes = (a.retainedBytes ?? 0) + (b.retainedBytes ?? 0)
        }
        if a.directBlocks != nil || b.directBlocks != nil {
            c.directBlocks = (a.directBlocks ?? 0) + (b.directBlocks ?? 0)
            c.directBytes = (a.directBytes ?? 0) + (b.directBytes ?? 0)
            c.indirectBlocks = (a.indirectBlocks ?? 0) + (b.indirectBlocks ?? 0)
            c.indirectBytes = (a.indirectBytes ?? 0) + (b.indirectBytes ?? 0)
        }
        return c
    }

    static func growthFinding(_ f: Report.Finding, number: Int, sites: Int = 1, _ style: TextStyle) -> [String] {
        // A leak found at exit in a run without cycles has no growth to show.
        let noCycles = f.cycles == 0 && f.objectsPerCycle.allSatisfy { $0 == 0 } && f.bytesPerCycle.allSatisfy { $0 == 0 }
        let perCycle = noCycles ? "" : "  \(objectsText(f.averageObjectsPerCycle)) / \(HumanUnits.signedBytes(f.averageBytesPerCycle)) per cycle"
        var lines = ["  \(number). " + style.bold(title(f)) + perCycle
            + (sites > 1 ? style.dim("  (\(sites) sites whose stacks differ only outside the frames shown)") : "")]
        let warm = max(0, f.objectsPerCycle.count - f.cycles)
        let useBytes = f.objectsPerCycle.suffix(f.cycles).allSatisfy { $0 == 0 }
        let staircase = series(useBytes ? f.bytesPerCycle.map(HumanUnits.signedBytes) : f.objectsPerCycle.map { String($0) },
                               warmUp: warm)
        var details: [String] = noCycles ? [] : ["per cycle: \(staircase)", growthCount(f)]
        if f.survivingObjects > 0 || f.survivingBytes > 0 {
            details.append("surviving: \(HumanUnits.plural(f.survivingObjects, "object")), \(HumanUnits.bytes(f.survivingBytes))")
        }
        if let blocks = f.leakedBlocks {
            details.append("leaked: \(HumanUnits.plural(blocks, "block")), \(HumanUnits.bytes(f.leakedBytes ?? 0))")
        }
        if !details.isEmpty { lines.append("     " + details.joined(separator: "   ")) }
        lines += leakSplitLines(f, indent: "     ")
        lines += stack(f.frames, from: f.userFrame, style)
        if let n = f.stackTruncatedAt {
            lines.append(style.dim("     " + StackCompleteness.truncated(frames: n, outermost: f.frames.last?.function)))
        }
        lines += retentionLines(f, style)
        return lines
    }

    /// The report whose held findings `retentionLines` lists (set while rendering findings).
    /// A task-local, so concurrent renderings never see each other's report.
    @TaskLocal static var heldContext: Report?

    /// LeakSanitizer's split, its words: "Direct leak of 24 byte(s) in 1 object(s)". Printed for
    /// every leaked finding, held ones included, so the lines add up as LSan's do.
    static func leakSplitLines(_ f: Report.Finding, indent: String) -> [String] {
        var lines: [String] = []
        if let blocks = f.directBlocks, blocks > 0 {
            lines.append(indent + "Direct leak of \(f.directBytes ?? 0) byte(s) in \(blocks) object(s)")
        }
        if let blocks = f.indirectBlocks, blocks > 0 {
            lines.append(indent + "Indirect leak of \(f.indirectBytes ?? 0) byte(s) in \(blocks) object(s)")
        }
        return lines
    }

    /// "Why is it alive": the path holding the finding, its cycle, what it retains and the
    /// findings it holds (one line each, indented).
    static func retentionLines(_ f: Report.Finding, _ style: TextStyle) -> [String] {
        // Reports without a graph stop here (no lookup of the finding among the others).
        guard f.retention != nil || f.cycle != nil || f.retainedBytes != nil || f.heldBy != nil else { return [] }
        var lines: [String] = []
        if let path = f.retention {
            lines.append("     held by: " + RetentionText.path(path))
        } else if f.cycle != nil || f.retainedBytes != nil {
            lines.append("     held by: nothing (unreachable from every root)")
        }
        if let cycle = f.cycle { lines.append("     cycle: " + RetentionText.cycle(cycle)) }
        guard let r = heldContext, let me = r.findings.firstIndex(of: f) else {
            if let bytes = f.retainedBytes { lines.append("     retains \(HumanUnits.bytes(bytes))") }
            return lines
        }
        let held = r.findings.indices.filter { i in
            var h = r.findings[i].heldBy, steps = 0
            while let x = h, x != me, steps < r.findings.count { h = r.findings[x].heldBy; steps += 1 }
            return h == me && i != me
        }
        if let bytes = f.retainedBytes {
            lines.append("     retains \(HumanUnits.bytes(bytes))" + (held.isEmpty ? "" : ", holding \(HumanUnits.plural(held.count, "more finding")):"))
        }
        for i in held {
            let h = r.findings[i]
            let why = h.heldReason == "sameCycle" ? "same cycle" : "only through it"
            let objects = h.leakedBlocks ?? h.survivingObjects
            let bytes = h.leakedBytes ?? h.survivingBytes
            var line = "       - " + title(h)
            if let u = h.userFrameValue, case let site = RetentionNames.site(u), !line.hasSuffix(" " + site) {
                line += " (\(site))"
            }
            line += ": \(HumanUnits.plural(objects, "object")), \(HumanUnits.bytes(bytes)) (\(why))"
            lines.append(line)
            lines += leakSplitLines(h, indent: "         ")
        }
        return lines
    }

    /// `grew in 11 of 12 judged cycles`, or for a leak that started mid-run
    /// `since cycle 9: grew in 8 of 8 cycles (15 judged)`.
    static func growthCount(_ f: Report.Finding) -> String {
        if let onset = f.onsetCycle {
            let since = f.cyclesSinceOnset
            return "since cycle \(onset): grew in \(f.cyclesWithGrowthSinceOnset ?? since) of \(since) cycles (\(f.cycles) judged)"
        }
        return "grew in \(f.cyclesWithGrowth) of \(HumanUnits.plural(f.cycles, "judged cycle"))"
    }

    /// Caches that fill at one place in the program's code, summed.
    struct CacheGroup {
        var location: String
        var typeNames: [String] = []
        var sites = 0
        var objects = 0
        var bytes = 0
        var lastGrowth = 0
    }

    /// Caches grouped by their first own-code frame (one line each), largest first.
    static func cacheGroups(_ caches: [Report.Finding], _ style: TextStyle) -> [CacheGroup] {
        var groups: [String: CacheGroup] = [:]
        var order: [String] = []
        for f in caches {
            let location: String
            if let frame = f.userFrameValue ?? f.frames.first {
                location = frameText(frame, style)
            } else {
                location = "an unknown site"
            }
            if groups[location] == nil {
                groups[location] = CacheGroup(location: location)
                order.append(location)
            }
            groups[location]!.sites += 1
            groups[location]!.objects += f.objectsSeries.sum()
            groups[location]!.bytes += f.bytesSeries.sum()
            if let typeName = f.typeName, !groups[location]!.typeNames.contains(typeName) {
                groups[location]!.typeNames.append(typeName)
            }
            let n = min(f.objectsSeries.count, f.bytesSeries.count)
            if let last = (f.objectsSeries.nonzero + f.bytesSeries.nonzero)
                .filter({ $0.index < n && $0.value > 0 }).map(\.index).max() {
                groups[location]!.lastGrowth = max(groups[location]!.lastGrowth, last + 1)
            }
        }
        return order.compactMap { groups[$0] }.enumerated()
            .sorted { ($0.element.bytes, -$0.offset) > ($1.element.bytes, -$1.offset) }
            .map(\.element)
    }

    static func cacheLines(_ caches: [Report.Finding], _ style: TextStyle) -> [String] {
        let groups = cacheGroups(caches, style)
        var lines: [String] = []
        for g in groups.prefix(maxCacheLines) {
            var line = "  - " + g.location + "  " + style.bold(HumanUnits.signedBytes(g.bytes))
            line += " in " + Report.Finding.filledBlocksText(objects: g.objects, bytes: g.bytes)
            if g.sites > 1 { line += " from \(g.sites) sites" }
            if g.lastGrowth > 0 { line += ", filled by cycle \(g.lastGrowth)" }
            if !g.typeNames.isEmpty {
                let names = g.typeNames.prefix(2).joined(separator: ", ") + (g.typeNames.count > 2 ? ", …" : "")
                line += style.dim(" [\(names)]")
            }
            lines.append(line)
        }
        if groups.count > maxCacheLines {
            let rest = groups.dropFirst(maxCacheLines)
            let bytes = rest.reduce(0) { $0 + $1.bytes }
            lines.append(style.dim("  … \(HumanUnits.plural(rest.count, "more place")), \(HumanUnits.signedBytes(bytes)) in all (--format json lists every site)"))
        }
        return lines
    }

    /// The type name, else the short function of the user frame, else its `module+0xOFFSET`
    /// (a stripped binary's: each finding its own, as the gate names it).
    static func title(_ f: Report.Finding) -> String {
        if let typeName = f.typeName { return typeName }
        guard let frame = f.userFrameValue ?? f.frames.first else { return "blocks from an unknown site" }
        if let name = frame.shortFunction ?? frame.function { return "blocks from " + displayFunction(name) }
        return "blocks from " + (frame.moduleAndOffset ?? Report.Frame.formatAddress(frame.address))
    }

    static func objectsText(_ mean: Double) -> String {
        let text = HumanUnits.mean(mean)
        return "\(mean > 0 ? "+" : "")\(text) object\(text == "1" || text == "-1" ? "" : "s")"
    }

    /// `1 | 1 1 1 1`: the warm-up cycles before the bar; the middle elided when long.
    static func series(_ values: [String], warmUp: Int) -> String {
        func join(_ slice: ArraySlice<String>, offset: Int) -> String {
            var out = ""
            for (i, v) in slice.enumerated() {
                let index = offset + i
                if index > offset { out += index == warmUp ? " | " : " " }
                out += v
            }
            return out
        }
        if values.count <= maxSeriesEntries { return join(values[...], offset: 0) }
        let keep = maxSeriesEntries / 2
        let head = join(values.prefix(keep), offset: 0)
        let tail = join(values.suffix(keep), offset: values.count - keep)
        return head + " … " + tail
    }

    /// Up to `limit` frames from `from` (or 0): `at f (file:line)`, then indented callers.
    static func stack(_ frames: [Report.Frame], from start: Int?, _ style: TextStyle, limit: Int = maxStackFrames) -> [String] {
        guard !frames.isEmpty else { return [style.dim("     (no stack)")] }
        let first = min(start ?? 0, frames.count - 1)
        var lines: [String] = []
        for (i, frame) in frames[first...].prefix(limit).enumerated() {
            let lead = i == 0 ? "     at " : "        "
            var text = frameText(frame, style)
            if frame.inlined { text += style.dim(" [inlined]") }
            lines.append(lead + text)
        }
        return lines
    }

    /// The frames ``stack(_:from:_:limit:)`` shows.
    static func shownFrames(_ frames: [Report.Frame], from start: Int?, limit: Int = maxStackFrames) -> ArraySlice<Report.Frame> {
        guard !frames.isEmpty else { return [] }
        return frames[min(start ?? 0, frames.count - 1)...].prefix(limit)
    }

    /// Everything that tells two frames apart but their address.
    static func frameIdentity(_ f: Report.Frame) -> String {
        let fields: [String] = [f.function ?? Report.Frame.formatAddress(f.address), f.file ?? "", f.line.map(String.init) ?? "",
                                f.column.map(String.init) ?? "", f.module ?? "", f.inlined ? "inlined" : ""]
        return fields.joined(separator: "\u{1f}")
    }

    /// `function (dir/file:line)`, else `function (module)`, else `module+0xOFFSET` (the same
    /// in every run, for addr2line), else `0xADDR`.
    static func frameText(_ frame: Report.Frame, _ style: TextStyle) -> String {
        if frame.function == nil && frame.shortFunction == nil, let place = frame.moduleAndOffset {
            return place
        }
        var text = frame.shortFunction.map(displayFunction) ?? frame.function.map(displayFunction)
            ?? Report.Frame.formatAddress(frame.address)
        var place: String?
        if let file = frame.file {
            place = shortPath(file) + (frame.line.map { ":\($0)" } ?? "")
        } else if let module = frame.module {
            place = OwnCode.baseName(module)
        }
        if let place { text += " " + style.dim("(\(place))") }
        return text
    }

    /// Closures at top level come out as `closure #2 in `: name the context.
    /// GCC's clone suffixes (`lookup.isra.0`, `f.constprop.1`, `g.part.0`, `h.cold`) go too.
    static func displayFunction(_ name: String) -> String {
        if name.count > maxFunctionWidth { return displayFunction(shortened(name)) }
        if name.hasSuffix(" in ") { return name + "top-level code" }
        if name.hasSuffix(" in") { return name + " top-level code" }
        var name = Substring(name)
        while let dot = name.lastIndex(of: "."), !name.contains(" "), !name.contains("(") || name.last != ")" {
            let suffix = name[name.index(after: dot)...]
            let isNumber = !suffix.isEmpty && suffix.allSatisfy(\.isNumber)
            guard isNumber || ["isra", "constprop", "part", "cold", "lto_priv", "localalias"].contains(suffix) else { break }
            name = name[..<dot]
        }
        return String(name)
    }

    /// Longest function name shown whole; longer ones (C++ template instances run to
    /// thousands of characters) are shortened by ``shortened(_:)``.
    public static let maxFunctionWidth = 120

    /// A long C++ or Swift name made to fit ``maxFunctionWidth``, as the short forms do:
    /// template arguments become `<…>`, then parameter lists `(…)` (`(anonymous namespace)`
    /// stays), and what is still too long is cut with `…`.
    static func shortened(_ name: String) -> String {
        var s = elide(name, open: "<", close: ">")
        if s.count > maxFunctionWidth { s = elide(s, open: "(", close: ")") }
        if s.count > maxFunctionWidth { s = String(s.prefix(maxFunctionWidth - 1)) + "…" }
        return s
    }

    /// `name` with the contents of every outermost `open`…`close` pair replaced by `…`;
    /// `operator<`, `operator<<`, `operator()` and `(anonymous namespace)` are kept.
    static func elide(_ name: String, open: Character, close: Character) -> String {
        let chars = Array(name)
        var out = ""
        var depth = 0
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if depth == 0 && out.hasSuffix("operator") {
                // operator<, operator<<, operator<=, operator(), operator>…: part of the name.
                var j = i
                while j < chars.count, "<>=()[]-+*/&|!~^%,".contains(chars[j]), j - i < 3 {
                    if chars[j] == "(" && j + 1 < chars.count && chars[j + 1] != ")" && j > i { break }
                    j += 1
                }
                if j > i {
                    out += String(chars[i..<j])
                    i = j
                    continue
                }
            }
            if c == "(" && open == "(" && String(chars[i...].prefix(21)) == "(anonymous namespace)" && depth == 0 {
                out += "(anonymous namespace)"
                i += 21
                continue
            }
            if c == open {
                if depth == 0 { out.append(open); out += "…" }
                depth += 1
            } else if c == close && depth > 0 {
                depth -= 1
                if depth == 0 { out.append(close) }
            } else if depth == 0 {
                out.append(c)
            }
            i += 1
        }
        return depth == 0 ? out : name
    }

    /// The last two components: `Sources/App/main.swift` → `App/main.swift`.
    static func shortPath(_ path: String) -> String {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        return parts.suffix(2).joined(separator: "/")
    }

    // MARK: - Live at exit

    static func liveAtExit(_ r: Report, _ style: TextStyle) -> [String] {
        let live = r.liveAtExit
        // An image that exec'd did not exit: the exec threw its heap away whole (no leak).
        let execed = r.program.ending == .exec
        let when = execed ? "live at the exec" : "live at exit"
        var lines = [style.bold(execed ? "Live at the exec (which discarded it)" : "Live at exit")]
        lines.append("  SUMMARY: heapgen: \(HumanUnits.count(live.bytes)) byte\(live.bytes == 1 ? "" : "s") \(when) in "
            + "\(HumanUnits.plural(live.objects, "allocation")).")
        // Sites that read the same (type and location) are one line.
        var merged: [(key: String, objects: UInt64, bytes: UInt64)] = []
        for site in live.sites {
            var what = site.typeName ?? ""
            if let u = OwnCode.firstUserFrame(site.frames) ?? (site.frames.isEmpty ? nil : 0) {
                what += (what.isEmpty ? "" : " ") + style.dim("at ") + frameText(site.frames[u], style)
            }
            if let i = merged.firstIndex(where: { $0.key == what }) {
                merged[i].objects += site.objects
                merged[i].bytes += site.bytes
            } else {
                merged.append((what, site.objects, site.bytes))
            }
        }
        merged.sort { $0.bytes > $1.bytes }
        let sites = merged.prefix(maxLiveSites)
        let startup = live.startup
        let startupLine = startup.objects == 0 ? nil : style.dim("    start-up runtime blocks: \(HumanUnits.plural(startup.objects, "block")), "
            + "\(HumanUnits.count(startup.bytes)) byte\(startup.bytes == 1 ? "" : "s") ("
            + startup.parts.prefix(2).map(\.name).joined(separator: ", ")
            + (startup.parts.count > 2 ? " and \(startup.parts.count - 2) more" : "") + ", allocated as their libraries loaded; not listed)")
        guard !sites.isEmpty else { return lines + (startupLine.map { [$0] } ?? []) }
        let sizes = sites.map { HumanUnits.bytes($0.bytes) }
        let counts = sites.map { "in \(HumanUnits.plural($0.objects, "block"))" }
        let w1 = sizes.map(\.count).max() ?? 0, w2 = counts.map(\.count).max() ?? 0
        for (i, site) in sites.enumerated() {
            lines.append("    " + pad(sizes[i], w1, right: true) + " " + pad(counts[i], w2, right: false) + "  " + site.key)
        }
        if merged.count > sites.count || live.objects > live.sites.reduce(startup.objects, { $0 + $1.objects }) {
            lines.append(style.dim("    (largest sites; --format json lists \(live.sites.count))"))
        }
        if let startupLine { lines.append(startupLine) }
        return lines
    }

    // MARK: - Helpers

    static func pad(_ s: String, _ width: Int, right: Bool) -> String {
        let fill = String(repeating: " ", count: max(0, width - s.count))
        return right ? fill + s : s + fill
    }

    static func truncate(_ s: String, _ width: Int) -> String {
        s.count <= width ? s : String(s.prefix(width - 1)) + "…"
    }
}
