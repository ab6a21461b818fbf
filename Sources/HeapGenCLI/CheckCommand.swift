// `heapgen check`: report on a trace, then apply the CI leak gate.

import ArgumentParser
import HeapGenGate
import HeapGenRecord
import HeapGenReport
import HeapGenTrace

/// `heapgen check TRACE [report options] [gate options]`: report on a trace, then gate.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Report on a trace and fail (exit 23) if it breaks a CI leak gate.",
        discussion: """
            heapgen report followed by the gate heapgen run applies with --fail-on: the report \
            goes to standard output (or --output), the verdict to standard error as \
            'heapgen: gate failed: …' and 'SUMMARY: heapgen: …' lines. Without --fail-on, \
            --max-bytes-per-cycle or --max-live-at-exit, check fails on any abandoned site.

            Exits 0 when the gate holds, 23 when it fails, 64 for a usage error (a bad \
            suppression or baseline file included), 65 if the trace is corrupt, 66 if it \
            cannot be opened, 125 if an output cannot be written.
            """
    )

    @Argument(help: ArgumentHelp("The trace file.", valueName: "trace"))
    var trace: String

    @OptionGroup var report: ReportOptions

    @OptionGroup(title: "Gate options") var gate: GateOptions

    func run() throws {
        let policy = try gate.loadPolicy(defaultCriteria: [.abandoned])
        var result: Report
        do {
            result = try report.makeReport(trace: trace)
        } catch {
            throw traceFailure(error)
        }
        let incomplete = TraceSalvageLog.wasSalvaged(trace)
        let verdict = gate.judge(&result, policy: policy)
        try report.emit(result)
        // Before the verdict, whose SUMMARY line stays the last.
        for warning in result.recordingWarnings ?? [] {
            standardError("heapgen: warning: the gate judged only what the recording saw: \(warning)\n")
        }
        try gate.finish(verdict, report: result)
        if incomplete {
            standardError("heapgen: note: the gate judged an incomplete trace (its collector was killed): only the records before the cut\n")
        }
        if verdict.failed && gate.enforcing { throw ExitCode(ExitCodes.gateFailed) }
    }
}
