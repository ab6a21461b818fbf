import ArgumentParser
import HeapGenAnalysis
import HeapGenRecord
import HeapGenReport
import HeapGenSymbolication
#if canImport(Glibc)
import Glibc
#endif

/// The options `report` and `run` share: how to judge growth and where the report goes.
struct ReportOptions: ParsableArguments {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(name: .long, help: "Report format: text (one screen) or json (heapgen-report/1, see docs/report-schema.md).")
    var format: Format = .text

    @Option(name: .long, help: ArgumentHelp(
        "Write the report to this file (created owner-only) instead of standard output.", valueName: "path"))
    var output: String?

    @Option(name: .customLong("warm-up"), help: ArgumentHelp(
        "Leading cycles not judged for growth: caches and lazy singletons fill there.", valueName: "n"))
    var warmUp: Int = AnalysisOptions().warmUp

    @Option(name: .customLong("tolerate"), help: ArgumentHelp(
        "Judged cycles a site may skip growing and still count as abandoned.", valueName: "n"))
    var tolerate: Int = AnalysisOptions().toleratedMisses

    func validate() throws {
        if warmUp < 0 { throw ValidationError("--warm-up takes a number of cycles, 0 or more.") }
        if tolerate < 0 { throw ValidationError("--tolerate takes a number of cycles, 0 or more.") }
        if let output, output.isEmpty { throw ValidationError("--output needs a file name.") }
    }

    /// The analysis settings these options ask for.
    var analysisOptions: AnalysisOptions {
        AnalysisOptions(warmUp: warmUp, toleratedMisses: tolerate)
    }

    /// Analyzes `trace` and builds its report.
    ///
    /// - Throws: ``TraceError`` when the trace cannot be read.
    func makeReport(trace: String, otherTraces: [String] = [], notes: [String] = []) throws -> Report {
        var report = try ReportBuilder().build(tracePath: trace, options: analysisOptions, otherTraces: otherTraces)
        report.notes += notes
        for salvaged in reportSalvagedTraces() {
            report.notes.append("The trace \(salvaged.file) is incomplete (\(salvaged.notice)): this report covers the records before the cut.")
        }
        return report
    }

    /// Prints `report` in the chosen format to standard output or writes it to ``output``.
    /// Failures print one line and become exit status 125.
    func emit(_ report: Report) throws {
        let text: String
        switch format {
        case .text:
            let color = output == nil && TextStyle.shouldColor(fileDescriptor: 1)
            text = TextReport.render(report, color: color)
        case .json:
            do {
                text = try JSONReport.render(report)
            } catch {
                standardError("heapgen: cannot encode the report: \(error)\n")
                throw ExitCode(ExitCodes.heapgenFailed)
            }
        }
        try OutputFile.emit(text, to: output, what: "report")
    }
}
