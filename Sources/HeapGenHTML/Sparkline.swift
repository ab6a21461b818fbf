// A finding's per-cycle sparkline, as inline SVG.

import HeapGenAnalysis
import HeapGenReport

/// Per-cycle growth of one site: a bar per cycle (warm-up cycles grey) and the running
/// total as a step line, so an abandoned site draws a staircase and a cache a plateau.
/// More than ``maxBars`` cycles are summed into buckets.
enum Sparkline {
    static let maxBars = 60
    static let width = 260.0
    static let height = 54.0

    /// The SVG for `series` (change per cycle, warm-up included) whose first `warmUp` cycles
    /// were not judged.
    static func render(_ series: CycleSeries, warmUp: Int, kind: Report.Finding.Kind, unit: (Int) -> String) -> String {
        let count = series.count
        var out = "<svg class=\"spark spark-\(kind.rawValue)\" viewBox=\"0 0 \(HTMLText.num(width)) \(HTMLText.num(height))\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\">"
        guard count > 0 else { return out + "</svg>" }
        let bucket = (count + maxBars - 1) / maxBars
        var bars: [(first: Int, value: Int)] = []
        var running: [Int] = []
        var total = 0
        var i = 0
        let values = series.dense
        while i < count {
            let end = min(count, i + bucket)
            var sum = 0
            for j in i..<end { sum += values[j] }
            bars.append((i, sum))
            total += sum
            running.append(total)
            i = end
        }
        out += "<title>\(HTMLText.escape(values.prefix(40).enumerated().map { ($0.offset < warmUp ? "[" : "") + unit($0.element) + ($0.offset < warmUp ? "]" : "") }.joined(separator: " ")))\(count > 40 ? " …" : "") per cycle; running total \(HTMLText.escape(unit(total)))</title>"
        let barMax = max(1, bars.map { abs($0.value) }.max() ?? 1)
        let runMax = max(1, running.map { abs($0) }.max() ?? 1)
        let w = width / Double(bars.count)
        let mid = height - 4.0
        let barH = height * 0.45
        // Bars as one path per class (warm-up, growth, shrink): a few hundred bytes per sparkline.
        var paths = ["bar warm": "", "bar": "", "bar neg": ""]
        for (k, b) in bars.enumerated() where b.value != 0 {
            let h = max(1, barH * Double(abs(b.value)) / Double(barMax))
            let cls = b.first < warmUp ? "bar warm" : (b.value < 0 ? "bar neg" : "bar")
            paths[cls, default: ""] += "M\(HTMLText.num(Double(k) * w + w * 0.15)) \(HTMLText.num(mid))v-\(HTMLText.num(h))h\(HTMLText.num(max(0.6, w * 0.7)))v\(HTMLText.num(h))z"
        }
        for cls in ["bar warm", "bar", "bar neg"] where !(paths[cls] ?? "").isEmpty {
            out += "<path class=\"\(cls)\" d=\"\(paths[cls]!)\"/>"
        }
        // Running total: a step line from 0.
        var d = "M0 \(HTMLText.num(mid))"
        var lastY = mid
        for (k, r) in running.enumerated() {
            let y = mid - (height - 10) * Double(max(0, r)) / Double(runMax)
            if y != lastY { d += "V\(HTMLText.num(y))" }
            d += "H\(HTMLText.num(Double(k + 1) * w))"
            lastY = y
        }
        out += "<path class=\"run\" d=\"\(d)\"/>"
        out += "<line class=\"base\" x1=\"0\" x2=\"\(HTMLText.num(width))\" y1=\"\(HTMLText.num(mid))\" y2=\"\(HTMLText.num(mid))\"/>"
        return out + "</svg>"
    }
}
