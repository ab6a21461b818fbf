// `heapgen report`: the report on one trace.

import ArgumentParser
import HeapGenReport

/// `heapgen report TRACE [--format text|json] [--output PATH] [--warm-up N] [--tolerate N]`
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Report the allocation sites that grew in every cycle of a trace, the caches, and what was live at exit.",
        discussion: """
            A cycle is what the program does between two generation marks (HEAPGEN_MARK, \
            HeapGen.mark, or heapgen record --mark-every). Sites that grew in every judged \
            cycle are abandoned memory; sites that filled early and then stayed flat are \
            caches, listed apart and never a failure.

            A trace whose collector was killed is reported up to its last whole chunk, with \
            a warning. Exits with 65 if the trace is corrupt or not a trace, 66 if it cannot \
            be opened or is not a regular file, 125 if the report cannot be written (also when \
            a JSON report would list more than 8,000,000 per-cycle values: tens of thousands of \
            findings over thousands of marks).
            """
    )

    @Argument(help: ArgumentHelp("The trace file.", valueName: "trace"))
    var trace: String

    @OptionGroup var report: ReportOptions

    func run() throws {
        let result: Report
        do {
            // Traces the same recording wrote for children and exec'd programs.
            result = try report.makeReport(trace: trace, otherTraces: TraceSelection.siblings(of: trace))
        } catch {
            throw traceFailure(error)
        }
        try report.emit(result)
    }
}
