// heapgen-report/1 as one self-contained HTML page.

import HeapGenAnalysis
import HeapGenReport
import HeapGenUnits
import HeapGenSymbolication

/// Renders a ``Report`` as a single HTML file with everything inline (CSS, SVG, script):
/// the staircase chart, every finding with its sparkline and stack, an icicle of what the
/// judged cycles left behind, the generation table and what was live at exit. Nothing is
/// loaded from the network; without JavaScript every section is still there (the script
/// adds filters, sorting, zoom and the per-cycle icicle).
///
/// Large reports stay small: at most ``maxFindings`` findings are drawn in full, the
/// generation table keeps the first and last ``maxTableRows``/2 rows, and the chart
/// buckets its points (see ``StaircaseChart``).
public enum HTMLReport {
    /// Findings drawn with sparkline and stack (the rest are counted in a note).
    public static let maxFindings = 120
    /// Rows of the generation table written (first half and last half).
    public static let maxTableRows = 400
    /// Frames listed per stack: for the first ``fullStacks`` findings, then for the others.
    static let maxFrames = 24
    static let maxFramesAfter = 10
    static let fullStacks = 30
    /// Cycles the icicle's cycle picker offers.
    static let maxPickableCycles = 200

    /// The page for `report`.
    public static func render(_ report: Report) -> String {
        var out = head(title: "heapgen: \(programName(report))")
        out += "<main>"
        out += header(report)
        out += chartSection(report)
        out += findingsSection(report)
        out += flameSection(report)
        out += generationSection(report)
        out += liveSection(report)
        out += notesSection(report)
        out += "<footer>heapgen-report/1 · \(HTMLText.escape(report.trace)) · this page is self-contained: it loads nothing from the network.</footer>"
        out += "</main>"
        return out + tail()
    }

    // MARK: - Page frame

    static func head(title: String) -> String {
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            + "<title>\(HTMLText.escape(title))</title><style>\(PageAssets.css)</style></head><body>"
    }

    static func tail() -> String {
        "<script>\(PageAssets.script)</script></body></html>\n"
    }

    static func programName(_ report: Report) -> String {
        HTMLText.moduleName(report.program.path)
    }

    // MARK: - Header

    private static func header(_ report: Report) -> String {
        let abandoned = report.findings(.abandoned), leaked = report.findings(.leaked), caches = report.findings(.cache)
        let ownAbandoned = abandoned.filter { !$0.inLibraries }
        var out = "<header><h1>heapgen · \(HTMLText.escape(programName(report)))</h1>"
        out += "<p class=\"sub mono\">\(HTMLText.escape(report.program.args.joined(separator: " "))) — pid \(report.program.pid), "
        out += HTMLText.escape(report.program.endingDescription)
        out += "</p>"
        if ownAbandoned.isEmpty && leaked.isEmpty && report.judgedCycles < 2 {
            // Nothing found because nothing could be judged is not a clean bill of health.
            let scanned = report.totals.leakScanned
            out += "<p class=\"verdict none\">\(scanned ? "No leaked memory at exit" : "Nothing judged"): "
            out += "abandoned memory needs 2 judged cycles, this run has \(report.judgedCycles) "
            out += "(mark a generation per cycle)\(scanned ? "" : ", and leaks need --leaks").</p>"
        } else if ownAbandoned.isEmpty && leaked.isEmpty {
            let what = report.totals.leakScanned ? "No abandoned or leaked memory" : "No abandoned memory"
            out += "<p class=\"verdict ok\">\(what) in \(HumanUnits.plural(report.judgedCycles, "judged cycle"))"
            if !report.totals.leakScanned { out += " (leaks not judged: record with --leaks)" }
            out += caches.isEmpty ? ".</p>" : " · \(HumanUnits.plural(caches.count, "cache")) (bounded, not a failure).</p>"
        } else {
            var parts: [String] = []
            if !ownAbandoned.isEmpty {
                let perCycle = ownAbandoned.reduce(0) { $0 + $1.averageBytesPerCycle }
                parts.append("\(HumanUnits.plural(ownAbandoned.count, "abandoned site")) (+\(HumanUnits.bytes(perCycle)) per cycle)")
            }
            if !leaked.isEmpty { parts.append("\(HumanUnits.plural(leaked.count, "leaked site"))") }
            if !caches.isEmpty { parts.append("\(HumanUnits.plural(caches.count, "cache"))") }
            out += "<p class=\"verdict bad\">\(parts.joined(separator: " · "))</p>"
        }
        let t = report.totals
        let stats: [(String, String)] = [
            ("\(report.cycles) (\(report.judgedCycles) judged)", "cycles"),
            (HumanUnits.bytes(t.peakBytes), "peak live heap (gen \(t.peakGeneration))"),
            ("\(HumanUnits.bytes(t.liveAtExitBytes))", "live at exit (\(HumanUnits.count(t.liveAtExitObjects)) objects)"),
            (HumanUnits.count(t.allocations), "allocations"),
            (HumanUnits.bytes(t.allocatedBytes), "allocated in all"),
            (HumanUnits.count(t.frees), "frees"),
        ]
        out += "<div class=\"stats\">" + stats.map { "<div class=\"stat\"><b>\(HTMLText.escape($0.0))</b><span>\(HTMLText.escape($0.1))</span></div>" }.joined() + "</div>"
        out += "<nav class=\"toc\"><a href=\"#chart\">Live heap</a><a href=\"#findings\">Findings (\(report.findings.count))</a><a href=\"#flame\">Left behind</a><a href=\"#generations\">Generations</a><a href=\"#live-at-exit\">Live at exit</a>\(report.notes.isEmpty && report.otherTraces.isEmpty && (report.strayFrees ?? []).isEmpty && report.totals.untrackedFrees == 0 ? "" : "<a href=\"#notes\">Notes</a>")</nav>"
        return out + "</header>"
    }

    // MARK: - Chart

    private static func chartSection(_ report: Report) -> String {
        var out = "<section class=\"card\" id=\"chart\"><h2>Live heap at every generation mark</h2>"
        out += "<input class=\"switch-input\" type=\"radio\" name=\"series\" id=\"show-bytes\" checked><input class=\"switch-input\" type=\"radio\" name=\"series\" id=\"show-objects\">"
        out += "<div class=\"switch\"><label for=\"show-bytes\">Bytes</label><label for=\"show-objects\">Objects</label></div>"
        out += "<figure class=\"chart\" style=\"margin:0\">" + StaircaseChart(report: report).render() + "</figure>"
        out += "<div class=\"legend\"><span><i style=\"background:#ff922b\"></i>live heap at each mark</span><span><i style=\"background:#e9ecef\"></i>warm-up (not judged)</span><span><i style=\"background:#ffe8cc\"></i>judged cycles</span><span><i style=\"background:#c92a2a;height:2px\"></i>peak</span><span>A staircase that climbs every judged cycle is memory left behind; a step that stays flat is a cache.</span></div>"
        return out + "</section>"
    }

    // MARK: - Findings

    private static func findingsSection(_ report: Report) -> String {
        var out = "<section class=\"card\" id=\"findings\"><h2>Findings</h2>"
        guard !report.findings.isEmpty else {
            return out + "<p class=\"empty\">No site grew in every judged cycle, leaked, or filled a cache.</p></section>"
        }
        let modules = Set(report.findings.compactMap { $0.userFrameValue?.module ?? $0.frames.first?.module }).sorted()
        out += "<div class=\"toolbar\"><b>Show</b>"
        for kind in Report.Finding.Kind.allCases where !report.findings(kind).isEmpty {
            out += "<label><input type=\"checkbox\" class=\"kind-filter\" value=\"\(kind.rawValue)\" checked> \(kind.rawValue) (\(report.findings(kind).count))</label>"
        }
        out += "<select id=\"module-filter\"><option value=\"\">all modules</option>"
        out += modules.map { "<option value=\"\(HTMLText.escape($0))\">\(HTMLText.escape(HTMLText.moduleName($0)))</option>" }.joined()
        out += "</select><input type=\"search\" id=\"text-filter\" placeholder=\"type or function…\">"
        out += "<label>sort <select id=\"sort-findings\"><option value=\"report\">report order</option><option value=\"bytes\">bytes per cycle</option><option value=\"surviving\">bytes left behind</option><option value=\"function\">function</option><option value=\"type\">type</option></select></label>"
        out += "<span id=\"finding-count\" class=\"loc\"></span></div><div id=\"finding-list\">"
        for (i, f) in report.findings.prefix(maxFindings).enumerated() {
            out += finding(f, id: "finding-\(i + 1)", warmUp: report.options.warmUp,
                           frames: i < fullStacks ? maxFrames : maxFramesAfter,
                           retention: retention(report, index: i))
        }
        out += "</div>"
        if report.findings.count > maxFindings {
            out += "<p class=\"empty\">\(report.findings.count - maxFindings) more findings are not drawn here (heapgen report --format json lists them all).</p>"
        }
        return out + "</section>"
    }

    /// "Why is it alive" under a finding: what holds it (a link to the holding finding), its
    /// path from a root and its cycle as lists, what it retains, and the findings it holds
    /// nested as links. Empty without a reference graph. Every name is escaped.
    static func retention(_ report: Report, index i: Int) -> String {
        let f = report.findings[i]
        guard f.retention != nil || f.cycle != nil || f.heldBy != nil || f.retainedBytes != nil else { return "" }
        func link(_ k: Int) -> String {
            let h = report.findings[k]
            let name = h.typeName ?? h.userFrameValue.map(HTMLText.frameName) ?? "finding \(k + 1)"
            return "<a href=\"#finding-\(k + 1)\">\(HTMLText.escape(name))</a>"
        }
        func steps(_ list: [Report.RetentionStep]) -> String {
            "<ol class=\"mono\">" + list.map { "<li>\(HTMLText.escape($0.text))</li>" }.joined() + "</ol>"
        }
        var out = "<div class=\"retention\">"
        if let h = f.heldBy {
            out += "<p>Held by \(link(h))" + (f.heldReason == "sameCycle" ? " (same reference cycle)" : " (reachable only through it)") + "</p>"
        }
        if let path = f.retention {
            out += "<details open><summary>held by (\(HumanUnits.plural(path.count, "step")) from a root)</summary>\(steps(path))</details>"
        } else if f.heldBy == nil {
            out += "<p>Unreachable from every root.</p>"
        }
        if let cycle = f.cycle {
            out += "<details open><summary>cycle: \(HTMLText.escape(RetentionText.cycle(cycle)))</summary>\(steps(cycle))</details>"
        }
        let held = report.findings.indices.filter { report.findings[$0].heldBy == i }
        if let bytes = f.retainedBytes { out += "<p>Retains <b>\(HumanUnits.bytes(bytes))</b>.</p>" }
        if !held.isEmpty { out += "<ul class=\"held\">" + held.map { "<li>holds \(link($0))</li>" }.joined() + "</ul>" }
        return out + "</div>"
    }

    private static func finding(_ f: Report.Finding, id: String, warmUp: Int, frames limit: Int, retention: String = "") -> String {
        let user = f.userFrame.flatMap { f.frames.indices.contains($0) ? $0 : nil } ?? (f.frames.isEmpty ? nil : 0)
        let frame = user.map { f.frames[$0] }
        let name = frame.map(HTMLText.frameName) ?? "unknown site"
        let module = frame?.module ?? ""
        var out = "<article class=\"finding kind-\(f.kind.rawValue)\" id=\"\(id)\" data-kind=\"\(f.kind.rawValue)\" data-module=\"\(HTMLText.escape(module))\" data-type=\"\(HTMLText.escape(f.typeName ?? ""))\" data-function=\"\(HTMLText.escape(name))\" data-bytes=\"\(f.averageBytesPerCycle)\" data-surviving=\"\(f.survivingBytes)\">"
        out += "<div class=\"fhead\"><span class=\"badge \(f.kind.rawValue)\">\(f.kind.rawValue)</span>"
        if f.inLibraries { out += "<span class=\"badge lib\" title=\"no frame of the stack is the program's own code\">in libraries</span>" }
        let target = user.map { "#\(id)-frame-\($0)" } ?? "#\(id)"
        out += "<a class=\"fn mono\" href=\"\(target)\">\(HTMLText.escape(name))</a>"
        if let loc = frame.flatMap(HTMLText.location) { out += "<span class=\"loc mono\">\(HTMLText.escape(loc))</span>" }
        if let type = f.typeName { out += "<span class=\"type mono\">\(HTMLText.escape(type))</span>" }
        out += "</div><div class=\"fbody\"><div class=\"nums\">"
        switch f.kind {
        case .cache:
            let filled = f.bytesSeries.sum()
            out += "Filled <b>\(HumanUnits.bytes(max(0, filled)))</b> (\(Report.Finding.filledBlocksText(objects: max(0, f.objectsSeries.sum()), bytes: filled))) early, then flat: grew in \(f.cyclesWithGrowth) of \(f.cycles) judged cycles — a plateau, not a failure."
        case .abandoned, .leaked:
            out += "<b>+\(HumanUnits.bytes(f.averageBytesPerCycle))</b> per cycle (\(HTMLText.num(f.averageObjectsPerCycle)) objects), grew in <b>\(f.cyclesWithGrowth) of \(f.cycles)</b> judged cycles; the judged cycles left <b>\(HumanUnits.plural(f.survivingObjects, "object"))</b> (\(HumanUnits.bytes(f.survivingBytes))) behind"
            out += f.kind == .leaked ? ", unreachable at exit." : ", still referenced at the end."
        }
        out += "</div>" + Sparkline.render(f.bytesSeries, warmUp: warmUp, kind: f.kind, unit: { HumanUnits.signedBytes($0) }) + "</div>"
        out += "<details\(f.kind == .cache ? "" : " open")><summary>stack (\(HumanUnits.plural(f.frames.count, "frame")))</summary>"
        out += stack(f.frames, user: f.userFrame, id: id, limit: limit)
        out += "</details>" + retention + "</article>"
        return out
    }

    /// A stack as an ordered list, innermost first, each frame with an anchor `ID-frame-K`.
    static func stack(_ frames: [Report.Frame], user: Int?, id: String, limit: Int = maxFramesAfter) -> String {
        var out = "<ol class=\"stack mono\" start=\"0\">"
        for (k, fr) in frames.prefix(max(limit, (user ?? 0) + 1)).enumerated() {
            let lib = !OwnCode.isOwnCode(module: fr.module, function: fr.function, file: fr.file)
            let cls = k == user ? "user" : (lib ? "lib" : "")
            out += "<li id=\"\(id)-frame-\(k)\"\(cls.isEmpty ? "" : " class=\"\(cls)\"")>"
            let name = HTMLText.frameName(fr)
            if let full = fr.function, full != name {
                out += "<span title=\"\(HTMLText.escape(full))\">\(HTMLText.escape(name))</span>"
            } else {
                out += HTMLText.escape(name)
            }
            if fr.inlined { out += "<span class=\"inl\">inlined</span>" }
            var where_: [String] = []
            if let file = fr.file { where_.append(file + (fr.line.map { ":\($0)" } ?? "") + (fr.column.map { ":\($0)" } ?? "")) }
            where_.append(HTMLText.moduleName(fr.module))
            where_.append(Report.Frame.formatAddress(fr.address))
            out += "<span class=\"where\">\(HTMLText.escape(where_.joined(separator: " · ")))</span></li>"
        }
        let shown = max(limit, (user ?? 0) + 1)
        if frames.count > shown { out += "<li class=\"lib\">… \(frames.count - shown) more frames (the JSON report has them all)</li>" }
        return out + "</ol>"
    }

    // MARK: - Icicle

    private static func flameSection(_ report: Report) -> String {
        var icicle = Icicle(rootName: "left behind by the judged cycles")
        let warm = report.options.warmUp
        let pickable = report.cycles - warm <= maxPickableCycles
        for (i, f) in report.findings.prefix(maxFindings).enumerated() where f.kind != .cache {
            var per: [Int] = []
            if pickable {
                let dense = f.bytesSeries.dense
                per = Array(dense.dropFirst(min(warm, dense.count)))
            }
            icicle.add(frames: f.frames, bytes: f.survivingBytes, anchor: "finding-\(i + 1)", perCycle: per)
        }
        var out = "<section class=\"card\" id=\"flame\"><h2>What the judged cycles left behind</h2>"
        out += "<p class=\"loc\">Abandoned and leaked sites by bytes still live at the end, outermost frame at the top. Click a bar to zoom in, the top bar to zoom out; a bar links to its finding.</p>"
        out += "<div class=\"flame\" data-src=\"flame-data\" data-root=\"\(HTMLText.escape(icicle.root.name))\">"
        if pickable && report.judgedCycles > 0 {
            out += "<div class=\"toolbar\"><label>cycle <select class=\"cycle\"><option value=\"-1\">all judged cycles</option>"
            for c in 0..<(report.cycles - warm) {
                out += "<option value=\"\(c)\">cycle \(warm + c + 1)</option>"
            }
            out += "</select></label></div>"
        }
        out += icicle.svg(id: "flame-svg") + "<div class=\"flame-info\"></div></div>"
        out += "<script type=\"application/json\" id=\"flame-data\">\(icicle.json())</script>"
        return out + "</section>"
    }

    // MARK: - Tables

    private static func generationSection(_ report: Report) -> String {
        var out = "<section class=\"card\" id=\"generations\"><h2>Generations</h2><div class=\"scroll\"><table class=\"sortable\"><thead><tr><th>gen</th><th class=\"l\">closing mark</th><th>allocations</th><th>frees</th><th>allocated</th><th>live objects</th><th>live bytes</th><th>persistent objects</th><th>persistent bytes</th></tr></thead><tbody>"
        let gens = report.generations
        let half = maxTableRows / 2
        let rows: [ArraySlice<Report.Generation>] = gens.count > maxTableRows ? [gens.prefix(half), gens.suffix(half)] : [gens[...]]
        let warm = report.options.warmUp
        for (part, slice) in rows.enumerated() {
            if part == 1 { out += "<tr><td class=\"l\" colspan=\"9\">… \(gens.count - maxTableRows) generations not shown …</td></tr>" }
            for g in slice {
                var cls: [String] = []
                if g.index >= 1 && g.index <= min(warm, report.cycles) { cls.append("warm") }
                else if g.index > warm && g.index <= report.cycles { cls.append("judged") }
                if g.index == report.totals.peakGeneration { cls.append("peak") }
                out += "<tr\(cls.isEmpty ? "" : " class=\"\(cls.joined(separator: " "))\"")>"
                out += "<td data-v=\"\(g.index)\">\(g.index)</td><td class=\"l mono\">\(HTMLText.escape(g.label ?? (g.index == 0 ? "—" : "(end of trace)")))\(g.index == 0 ? " <span class=\"loc\">setup</span>" : "")\(cls.contains("warm") ? " <span class=\"loc\">warm-up</span>" : "")</td>"
                for (v, text) in [(g.allocations, HumanUnits.count(g.allocations)), (g.frees, HumanUnits.count(g.frees)),
                                  (g.allocatedBytes, HumanUnits.bytes(g.allocatedBytes)), (g.liveObjects, HumanUnits.count(g.liveObjects)),
                                  (g.liveBytes, HumanUnits.bytes(g.liveBytes)), (g.persistentObjects, HumanUnits.count(g.persistentObjects)),
                                  (g.persistentBytes, HumanUnits.bytes(g.persistentBytes))] {
                    out += "<td data-v=\"\(v)\">\(text)</td>"
                }
                out += "</tr>"
            }
        }
        return out + "</tbody></table></div></section>"
    }

    private static func liveSection(_ report: Report) -> String {
        let live = report.liveAtExit
        var out = "<section class=\"card\" id=\"live-at-exit\"><h2>Live at exit: \(HumanUnits.bytes(live.bytes)) in \(HumanUnits.plural(live.objects, "object"))</h2>"
        guard !live.sites.isEmpty else { return out + "<p class=\"empty\">Nothing was live at the end of the trace.</p></section>" }
        out += "<table class=\"sortable\"><thead><tr><th>bytes</th><th>objects</th><th class=\"l\">function</th><th class=\"l\">type</th><th class=\"l\">where</th></tr></thead><tbody>"
        for (i, s) in live.sites.enumerated() {
            let id = "live-\(i + 1)"
            let user = s.frames.firstIndex { OwnCode.isOwnCode(module: $0.module, function: $0.function, file: $0.file) } ?? 0
            let frame = s.frames.indices.contains(user) ? s.frames[user] : nil
            out += "<tr id=\"\(id)\"><td data-v=\"\(s.bytes)\">\(HumanUnits.bytes(s.bytes))</td><td data-v=\"\(s.objects)\">\(HumanUnits.count(s.objects))</td>"
            out += "<td class=\"l mono\"><details><summary>\(HTMLText.escape(frame.map(HTMLText.frameName) ?? "?"))</summary>\(stack(s.frames, user: frame == nil ? nil : user, id: id, limit: 8))</details></td>"
            out += "<td class=\"l mono\">\(HTMLText.escape(s.typeName ?? ""))</td><td class=\"l mono\">\(HTMLText.escape(frame.flatMap(HTMLText.location) ?? HTMLText.moduleName(frame?.module)))</td></tr>"
        }
        return out + "</tbody></table></section>"
    }

    private static func notesSection(_ report: Report) -> String {
        let strays = report.strayFrees ?? []
        let unexplained = report.totals.untrackedFrees - min(report.totals.untrackedFrees, UInt64(strays.count))
        guard !report.notes.isEmpty || !report.otherTraces.isEmpty || !strays.isEmpty || unexplained > 0 else { return "" }
        var out = "<section class=\"card\" id=\"notes\"><h2>Notes</h2><ul class=\"notes\">"
        out += report.notes.map { "<li>\(HTMLText.escape($0))</li>" }.joined()
        for s in strays {
            let at = s.allocationFrame.map { ", allocated at " + HTMLText.frameName($0) + (HTMLText.location($0).map { " (\($0))" } ?? "") } ?? ""
            out += "<li>Free of an address that was not live: <code>\(HTMLText.escape(s.summary + at))</code></li>"
        }
        if unexplained > 0 {
            out += "<li>\(strays.isEmpty ? "" : "And ")\(HTMLText.escape(HumanUnits.plural(unexplained, "free"))) of addresses that were not live"
                + (strays.isEmpty ? " (\(HTMLText.escape(Report.StrayFree.unexplainedReason)))" : " (heapgen info TRACE lists their events)") + ".</li>"
        }
        if !report.otherTraces.isEmpty {
            out += "<li>Other traces of this recording: " + report.otherTraces.map { "<code>\(HTMLText.escape($0))</code>" }.joined(separator: ", ") + "</li>"
        }
        return out + "</ul></section>"
    }
}
