// The staircase chart: the whole heap at every generation mark, as inline SVG.

import HeapGenReport
import HeapGenUnits

/// Live bytes (and, switchable by CSS alone, live objects) at every generation mark, with
/// every mark drawn and labelled, the warm-up shaded, the judged window marked and the
/// peak drawn. Point k is the end of generation k-1 (point 0: the trace's start, empty),
/// so generation g spans points g to g+1.
struct StaircaseChart {
    /// Above this many generations labels are thinned (each mark keeps a tick and a tooltip).
    static let maxLabels = 30
    /// Above this many generations the points are bucketed: each bucket keeps its highest value.
    static let maxPoints = 1500

    let report: Report
    let width = 980.0
    let height = 330.0
    let left = 74.0, right = 24.0, top = 34.0, bottom = 92.0

    /// Both series, each in its own `<g>`: `.series-bytes` and `.series-objects`.
    func render() -> String {
        let gens = report.generations
        var out = "<svg class=\"staircase\" id=\"staircase\" viewBox=\"0 0 \(HTMLText.num(width)) \(HTMLText.num(height))\" role=\"img\" aria-label=\"Live heap at every generation mark\" xmlns=\"http://www.w3.org/2000/svg\">"
        guard !gens.isEmpty else {
            return out + "<text x=\"20\" y=\"40\" class=\"axis\">No generations in this trace.</text></svg>"
        }
        let n = gens.count                    // points 0...n
        let plotW = width - left - right, plotH = height - top - bottom
        func x(_ k: Int) -> Double { left + plotW * Double(k) / Double(max(n, 1)) }

        // Windows: warm-up cycles 1...warmUp, judged cycles after it up to the last cycle.
        let lastCycle = min(report.cycles, n - 1)
        let warmEnd = min(report.options.warmUp, lastCycle)
        if warmEnd >= 1 {
            out += "<rect class=\"warmup\" x=\"\(HTMLText.num(x(1)))\" y=\"\(HTMLText.num(top))\" width=\"\(HTMLText.num(x(warmEnd + 1) - x(1)))\" height=\"\(HTMLText.num(plotH))\"><title>warm-up: cycle\(warmEnd == 1 ? "" : "s") 1\(warmEnd == 1 ? "" : "–\(warmEnd)"), not judged</title></rect>"
            out += "<text class=\"window-label\" x=\"\(HTMLText.num((x(1) + x(warmEnd + 1)) / 2))\" y=\"\(HTMLText.num(top - 8))\" text-anchor=\"middle\">warm-up</text>"
        }
        if report.judgedCycles > 0 && lastCycle > warmEnd {
            let a = x(warmEnd + 1), b = x(lastCycle + 1)
            out += "<rect class=\"judged\" x=\"\(HTMLText.num(a))\" y=\"\(HTMLText.num(top))\" width=\"\(HTMLText.num(b - a))\" height=\"\(HTMLText.num(plotH))\"><title>judged: \(HumanUnits.plural(report.judgedCycles, "cycle"))</title></rect>"
            out += "<line class=\"judged-edge\" x1=\"\(HTMLText.num(a))\" x2=\"\(HTMLText.num(b))\" y1=\"\(HTMLText.num(top - 3))\" y2=\"\(HTMLText.num(top - 3))\"/>"
            out += "<text class=\"window-label judged-label\" x=\"\(HTMLText.num((a + b) / 2))\" y=\"\(HTMLText.num(top - 9))\" text-anchor=\"middle\">judged cycles (\(report.judgedCycles))</text>"
        }

        // Marks: a vertical line at every closing mark, labelled (thinned when there are many).
        let labelEvery = max(1, (n + Self.maxLabels - 1) / Self.maxLabels)
        let markStride = n > Self.maxPoints ? (n + Self.maxPoints - 1) / Self.maxPoints : 1
        out += "<g class=\"marks\(n > 80 ? " dense" : "")\">"
        for (i, g) in gens.enumerated() {
            guard let label = g.label else { continue }
            let shownLabel = i % labelEvery == 0 || i == n - 1
            guard shownLabel || i % markStride == 0 else { continue }
            let px = HTMLText.num(x(i + 1))
            out += "<g class=\"mark\">"
            if shownLabel {
                out += "<title>mark #\(i) \u{201C}\(HTMLText.escape(label))\u{201D}: closes generation \(g.index); live \(HumanUnits.bytes(g.liveBytes)), \(HumanUnits.count(g.liveObjects)) objects</title>"
            }
            out += "<line x1=\"\(px)\" x2=\"\(px)\" y1=\"\(HTMLText.num(top))\" y2=\"\(HTMLText.num(top + plotH))\"/>"
            if shownLabel {
                let ly = top + plotH + 10
                // Cut at the front: scope labels share their start (`expectNoGrowth test() (F.swift:9)`)
                // and differ at the end (`cycle 3/8`). The full label is in data-label and the title.
                let text = label.count > 18 ? "…" + String(label.suffix(17)) : label
                out += "<text class=\"mark-label\" data-label=\"\(HTMLText.escape(label))\" x=\"\(px)\" y=\"\(HTMLText.num(ly))\" transform=\"rotate(40 \(px) \(HTMLText.num(ly)))\">\(HTMLText.escape(text))</text>"
            }
            out += "</g>"
        }
        out += "</g>"

        out += series(values: [0] + gens.map(\.liveBytes), peak: report.totals.peakBytes, kind: "bytes", x: x,
                      plotH: plotH, format: { HumanUnits.bytes($0) })
        out += series(values: [0] + gens.map(\.liveObjects), peak: nil, kind: "objects", x: x, plotH: plotH,
                      format: { HumanUnits.count($0) })
        out += "<line class=\"axis-line\" x1=\"\(HTMLText.num(left))\" x2=\"\(HTMLText.num(left + plotW))\" y1=\"\(HTMLText.num(top + plotH))\" y2=\"\(HTMLText.num(top + plotH))\"/>"
        out += "<text class=\"axis\" x=\"\(HTMLText.num(left + plotW))\" y=\"\(HTMLText.num(height - 4))\" text-anchor=\"end\">generation marks →</text>"
        return out + "</svg>"
    }

    /// One series: grid and y labels, the area and line through the marks, a dot per mark
    /// (bucketed when there are very many), and the peak.
    private func series(values: [UInt64], peak: UInt64?, kind: String, x: (Int) -> Double, plotH: Double,
                        format: (UInt64) -> String) -> String {
        let top = self.top, left = self.left, plotW = width - left - right
        let maxValue = max(values.max() ?? 0, peak ?? 0, 1)
        let scale = niceCeiling(maxValue)
        func y(_ v: UInt64) -> Double { top + plotH - plotH * Double(v) / Double(scale) }
        var out = "<g class=\"series series-\(kind)\">"
        for step in 0...4 {
            let v = scale / 4 * UInt64(step)
            let gy = HTMLText.num(y(v))
            out += "<line class=\"grid\" x1=\"\(HTMLText.num(left))\" x2=\"\(HTMLText.num(left + plotW))\" y1=\"\(gy)\" y2=\"\(gy)\"/>"
            out += "<text class=\"axis\" x=\"\(HTMLText.num(left - 8))\" y=\"\(HTMLText.num(y(v) + 4))\" text-anchor=\"end\">\(HTMLText.escape(format(v)))</text>"
        }
        // Points, bucketed above maxPoints (a bucket keeps its largest value: peaks stay visible).
        let bucket = values.count > Self.maxPoints ? (values.count + Self.maxPoints - 1) / Self.maxPoints : 1
        var pts: [(Int, UInt64)] = []
        var k = 0
        while k < values.count {
            let end = min(values.count, k + bucket)
            var best = k
            for j in k..<end where values[j] > values[best] { best = j }
            pts.append((best, values[best]))
            k = end
        }
        if pts.last?.0 != values.count - 1 { pts.append((values.count - 1, values[values.count - 1])) }
        let line = pts.map { "\(HTMLText.num(x($0.0))),\(HTMLText.num(y($0.1)))" }.joined(separator: " ")
        let base = HTMLText.num(y(0))
        out += "<polygon class=\"area\" points=\"\(HTMLText.num(x(0))),\(base) \(line) \(HTMLText.num(x(values.count - 1))),\(base)\"/>"
        out += "<polyline class=\"line\" points=\"\(line)\"/>"
        if pts.count <= 400 {
            for (k, v) in pts.dropFirst() {
                out += "<circle class=\"dot\" cx=\"\(HTMLText.num(x(k)))\" cy=\"\(HTMLText.num(y(v)))\" r=\"3.2\"><title>generation \(k - 1): \(HTMLText.escape(format(v))) live at its closing mark</title></circle>"
            }
        }
        if let peak, peak > 0 {
            let py = HTMLText.num(y(peak))
            let generation = report.totals.peakGeneration
            let px = x(min(generation + 1, values.count - 1))
            out += "<g class=\"peak\"><title>peak: \(HumanUnits.bytes(peak)) live, first reached in generation \(generation)</title>"
            out += "<line x1=\"\(HTMLText.num(left))\" x2=\"\(HTMLText.num(left + plotW))\" y1=\"\(py)\" y2=\"\(py)\"/>"
            out += "<path d=\"M\(HTMLText.num(px)) \(HTMLText.num(y(peak) - 1)) l-5 -8 h10 z\"/>"
            let nearRight = px + 170 > left + plotW
            out += "<text x=\"\(HTMLText.num(nearRight ? px - 10 : px + 8))\" y=\"\(HTMLText.num(y(peak) - 6))\" text-anchor=\"\(nearRight ? "end" : "start")\">peak \(HumanUnits.bytes(peak)) (generation \(generation))</text></g>"
        }
        return out + "</g>"
    }

    /// The top of the axis: four grid steps of 1, 2 or 5 times a power of ten, at least `v`.
    private func niceCeiling(_ v: UInt64) -> UInt64 {
        var p: UInt64 = 1
        while p < UInt64.max / 100 {
            for m: UInt64 in [1, 2, 5] where p * m * 4 >= v { return p * m * 4 }
            p *= 10
        }
        return v
    }
}
