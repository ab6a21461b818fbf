// How `run` shows the reports on several marked process images of one recording.

import HeapGenReport
import HeapGenUnits

/// The reports `run` made on the traces with generation marks, split into those worth a
/// whole report and those that found nothing.
///
/// With `--mark-every` every traced process image gets timer marks, including a wrapper's
/// helpers (pyenv's shims ran 78 images of bash, env and readlink before Python). A report on
/// each of them buries the program's. The first report (the program's) is always shown
/// whole, and so is every other one with something to act on; the rest become one summary.
struct MarkedReports {
    /// The reports shown whole: the first, then each other one with abandoned or leaked
    /// memory or a failed gate, in recording order.
    let whole: [Report]
    /// The other reports: nothing grew or leaked in them, and no gate failed.
    let quiet: [Report]
    /// False when the traces were temporary and are gone: nothing can be reported on later.
    let tracesKept: Bool

    /// - Parameter failing: indices into `reports` whose gate verdict failed.
    init(_ reports: [Report], failing: Set<Int> = [], tracesKept: Bool = true) {
        var whole: [Report] = [], quiet: [Report] = []
        for (i, report) in reports.enumerated() {
            if i == 0 || failing.contains(i) || Self.hasSomethingToActOn(report) {
                whole.append(report)
            } else {
                quiet.append(report)
            }
        }
        self.whole = whole
        self.quiet = quiet
        self.tracesKept = tracesKept
    }

    /// Abandoned or leaked memory; caches are not failures.
    static func hasSomethingToActOn(_ report: Report) -> Bool {
        report.findings.contains { $0.kind != .cache }
    }

    /// Rows of the quiet summary listed before "… N more programs".
    static let maxPrograms = 8

    /// `reports` by program name, in the order each name first appears.
    static func byProgram(_ reports: [Report]) -> [(name: String, reports: [Report])] {
        var groups: [(name: String, reports: [Report])] = []
        for report in reports {
            if let i = groups.firstIndex(where: { $0.name == report.program.name }) {
                groups[i].reports.append(report)
            } else {
                groups.append((report.program.name, [report]))
            }
        }
        return groups
    }

    /// The text printed after the whole reports: one heading line and a row per program
    /// (its images and their cycles); nil when every report is shown whole.
    var textSummary: String? {
        guard !quiet.isEmpty else { return nil }
        let n = quiet.count
        var lines = ["heapgen: \(HumanUnits.plural(n, "more process image")) had generation marks, and nothing grew or leaked in \(n == 1 ? "it" : "them"):"]
        let groups = Self.byProgram(quiet)
        let width = groups.prefix(Self.maxPrograms).map(\.name.count).max() ?? 0
        for group in groups.prefix(Self.maxPrograms) {
            let cycles = group.reports.map(\.cycles)
            let low = cycles.min() ?? 0, high = cycles.max() ?? 0
            let range = low == high ? HumanUnits.plural(high, "cycle") : "\(low)–\(high) cycles"
            let pad = String(repeating: " ", count: width - group.name.count)
            lines.append("  \(group.name)\(pad)  \(HumanUnits.plural(group.reports.count, "image")), \(range)")
        }
        if groups.count > Self.maxPrograms {
            let rest = groups.dropFirst(Self.maxPrograms)
            lines.append("  … \(HumanUnits.plural(rest.count, "more program")), \(HumanUnits.plural(rest.map(\.reports.count).reduce(0, +), "image"))")
        }
        lines.append(tracesKept
            ? "  (heapgen report TRACE reports on one: \(quiet[0].trace)\(n > 1 ? ", …" : ""))"
            : "  (their traces were temporary; --keep-trace keeps them)")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The note the first report carries in JSON and HTML, which show one report: the other
    /// reports with something to act on by trace, the quiet ones counted by program.
    func note(format: String) -> [String] {
        var notes: [String] = []
        let others = whole.dropFirst().map(\.trace)
        if !others.isEmpty {
            let location = tracesKept ? " (heapgen report TRACE --format \(format))" : " (in temporary traces: --keep-trace keeps them)"
            notes.append("\(others.count) more trace\(others.count == 1 ? " has" : "s have") generation marks and abandoned or leaked memory of \(others.count == 1 ? "its" : "their") own\(location): \(others.joined(separator: ", "))")
        }
        if !quiet.isEmpty {
            let names = Self.byProgram(quiet).map { "\($0.name) (\($0.reports.count))" }
            notes.append("\(HumanUnits.plural(quiet.count, "more process image")) had generation marks, and nothing grew or leaked in \(quiet.count == 1 ? "it" : "them"): \(names.joined(separator: ", ")).")
        }
        return notes
    }
}
