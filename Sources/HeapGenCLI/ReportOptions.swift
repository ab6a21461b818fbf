// The report options `report`, `check` and `run` share: judging growth and where the report goes.

import ArgumentParser
import HeapGenAnalysis
import HeapGenHTML
import HeapGenRecord
import HeapGenReport
import HeapGenSymbolication
#if canImport(Glibc)
import Glibc
#endif

/// The options `report` and `run` share: how to judge growth and where the report goes.
struct ReportOptions: ParsableArguments {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json, html
    }

    @Option(name: .long, help: "Report format: text (one screen), json (heapgen-report/1, see docs/report-schema.md) or html (one self-contained page).")
    var format: Format = .text

    @Option(name: .long, help: ArgumentHelp(
        "Also write the report as one self-contained HTML page to this file (created owner-only).", valueName: "path"))
    var html: String?

    @Option(name: .long, help: ArgumentHelp(
        "Write the report to this file (created owner-only) instead of standard output.", valueName: "path"))
    var output: String?

    @Option(name: .customLong("warm-up"), help: ArgumentHelp(
        "Leading cycles not judged for growth: caches and lazy singletons fill there.", valueName: "n"))
    var warmUp: Int = AnalysisOptions().warmUp

    @Option(name: .customLong("tolerate"), help: ArgumentHelp(
        "Judged cycles a site may skip growing and still count as abandoned.", valueName: "n"))
    var tolerate: Int = AnalysisOptions().toleratedMisses

    @OptionGroup var allocationFunctions: AllocationFunctionOptions

    @Option(name: .long, help: ArgumentHelp(
        "Judge only the cycles from this generation mark on: its position among the marks (0 = the first) or its label.",
        valueName: "mark"))
    var from: String?

    @Option(name: .long, help: ArgumentHelp(
        "Judge only the cycles up to this generation mark (position or label); it is the window's final snapshot.",
        valueName: "mark"))
    var to: String?

    func validate() throws {
        if warmUp < 0 { throw ValidationError("--warm-up takes a number of cycles, 0 or more.") }
        if tolerate < 0 { throw ValidationError("--tolerate takes a number of cycles, 0 or more.") }
        if let output, output.isEmpty { throw ValidationError("--output needs a file name.") }
        if let html, html.isEmpty { throw ValidationError("--html needs a file name.") }
    }

    /// The analysis settings these options ask for.
    var analysisOptions: AnalysisOptions {
        var options = AnalysisOptions(warmUp: warmUp, toleratedMisses: tolerate)
        options.from = from
        options.to = to
        return options
    }

    /// Analyzes `trace` and builds its report.
    ///
    /// - Throws: ``TraceError`` when the trace cannot be read.
    func makeReport(trace: String, otherTraces: [String] = [], notes: [String] = []) throws -> Report {
        allocationFunctions.apply()
        var report = try TerminalProgress.whileReadingTraces {
            try ReportBuilder().build(tracePath: trace, options: analysisOptions, otherTraces: otherTraces)
        }
        report.notes += notes
        for name in OwnCode.unmatchedAllocationFunctions() {
            report.notes.append("--alloc-fn \(name) matched no function in the stacks (a typo, or a frame of a stripped "
                + "binary, which has no name to match): no site was renamed by it.")
        }
        for salvaged in reportSalvagedTraces() {
            report.notes.append("The trace \(salvaged.file) is incomplete (\(salvaged.notice)): this report covers the records before the cut.")
        }
        return report
    }

    /// Prints `report` in the chosen format to standard output or writes it to ``output``.
    /// Failures print one line and become exit status 125.
    func emit(_ report: Report) throws {
        try emit(MarkedReports([report]))
    }

    /// Prints the reports on several traces of one recording: in text each one shown whole
    /// (each names its program), then the summary of the rest; in JSON (one heapgen-report/1
    /// document) and HTML the first, with notes on the others.
    func emit(_ reports: MarkedReports) throws {
        guard var first = reports.whole.first else { return }
        if let html {
            var page = first
            page.notes += reports.note(format: "html")
            try OutputFile.emit(HTMLReport.render(page), to: html, what: "HTML report")
        }
        let text: String
        switch format {
        case .text:
            let color = output == nil && TextStyle.shouldColor(fileDescriptor: 1)
            text = (reports.whole.map { TextReport.render($0, color: color) } + [reports.textSummary].compactMap { $0 })
                .joined(separator: "\n")
        case .json:
            first.notes += reports.note(format: "json")
            do {
                text = try JSONReport.render(first)
            } catch {
                standardError("heapgen: cannot encode the report: \(error)\n")
                throw ExitCode(ExitCodes.heapgenFailed)
            }
        case .html:
            first.notes += reports.note(format: "html")
            text = HTMLReport.render(first)
        }
        try OutputFile.emit(text, to: output, what: "report")
    }
}
