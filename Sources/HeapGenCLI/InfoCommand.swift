// `heapgen info`: a summary of one trace.

import ArgumentParser
import HeapGenReport
import HeapGenTrace
import HeapGenUnits
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `heapgen info TRACE [--format text|json]`
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Summarize a trace: process, totals, live heap at the end, peak, marks.",
        discussion: """
            A trace whose collector was killed (no end record, or a last chunk cut short) is \
            summarized up to its last whole chunk, with a warning. Exits with 65 if the trace \
            is corrupt or not a trace, 66 if it cannot be opened or is not a regular file.
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Argument(help: ArgumentHelp("The trace file.", valueName: "trace"))
    var trace: String

    @Option(name: .long, help: "Output format: text (a short table) or json (every field, sorted keys).")
    var format: Format = .text

    func run() throws {
        let summary: TraceSummary
        do {
            summary = try TraceSummary.load(path: trace)
        } catch {
            throw traceFailure(error)
        }
        reportSalvagedTraces()
        let out = OutputBuffer()
        switch format {
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data: Data
            do {
                data = try encoder.encode(summary)
            } catch {
                standardError("heapgen: cannot encode the summary: \(error)\n")
                throw ExitCode(125)
            }
            out.line(String(decoding: data, as: UTF8.self))
        case .text:
            for line in SummaryTable.lines(summary) { out.line(line) }
        }
        out.flush()
    }
}

/// The text form of `info`.
enum SummaryTable {
    static func lines(_ s: TraceSummary) -> [String] {
        var rows: [(String, String)] = []
        let p = s.process
        rows.append(("process", "\(p.pid) (parent \(p.ppid), \(originName(p.origin)))"))
        rows.append(("executable", p.executable))
        if !p.arguments.isEmpty { rows.append(("arguments", Report.Program.shellQuoted(p.arguments))) }
        rows.append(("ended", endDescription(s.end)))
        for warning in s.recordingWarnings ?? [] { rows.append(("warning", warning)) }
        rows.append(("events", HumanUnits.count(s.eventCount)))
        if s.aggregated == true {
            rows.append(("aggregated", "counts per site, size and generation (record --aggregate): calls count as malloc and free, no addresses"))
        }
        let inheritedName = AllocationFunction.inherited.name
        let allocated = s.allocations.filter { $0.key != inheritedName }.values.reduce(UInt64(0)) { $0 &+ $1.bytes }
        rows.append(("allocations", "\(HumanUnits.count(s.allocationCount)) (\(HumanUnits.bytes(allocated)))"))
        for (name, totals) in s.allocations.sorted(by: { $0.key < $1.key }) {
            rows.append(("  " + name, "\(HumanUnits.count(totals.calls)) (\(HumanUnits.bytes(totals.bytes)))"))
        }
        rows.append(("frees", HumanUnits.count(s.freeCount)))
        for (name, calls) in s.frees.sorted(by: { $0.key < $1.key }) {
            rows.append(("  " + name, HumanUnits.count(calls)))
        }
        if s.reallocUndoCount > 0 { rows.append(("failed reallocs", HumanUnits.count(s.reallocUndoCount))) }
        if s.freeNullCalls > 0 { rows.append(("free(NULL)", HumanUnits.count(s.freeNullCalls))) }
        rows.append(("live at end", "\(HumanUnits.count(s.liveObjects)) blocks, \(HumanUnits.bytes(s.liveBytes))"))
        rows.append(("peak", s.aggregated == true
            ? "at least \(HumanUnits.bytes(s.peakLiveBytes)) (aggregated: the order within a generation is not kept)"
            : "\(HumanUnits.bytes(s.peakLiveBytes)) at event \(HumanUnits.count(s.peakEventPosition))"))
        rows.append(("stacks", HumanUnits.count(UInt64(s.stackCount))))
        if s.truncatedStackCount > 0 {
            rows.append(("  truncated", "\(HumanUnits.count(UInt64(s.truncatedStackCount))) (cut at the frame limit, which HEAPGEN_MAX_FRAMES raises, or where unwinding stopped)"))
        }
        if s.end.stacksLost > 0 {
            rows.append(("stacks lost", "warning: " + StackCompleteness.lostWarning(s.end.stacksLost)))
        }
        if !s.types.isEmpty { rows.append(("types", HumanUnits.count(UInt64(s.types.count)))) }
        rows.append(("modules", HumanUnits.count(UInt64(s.modules.count))))
        rows.append(("threads", HumanUnits.count(UInt64(s.threadCount))))
        for mark in s.marks {
            let label = mark.label.isEmpty ? "#\(mark.index)" : "#\(mark.index) \(mark.label)"
            rows.append(("mark", "\(label): \(HumanUnits.count(mark.liveObjects)) blocks, \(HumanUnits.bytes(mark.liveBytes)) live at event \(HumanUnits.count(mark.eventPosition))"))
        }
        let e = s.end
        if e.producerWaits > 0 {
            rows.append(("program waited", "\(HumanUnits.plural(e.producerWaits, "time")), \(HumanUnits.duration(nanoseconds: e.producerWaitNanoseconds))"))
        }
        if e.lostEvents > 0 || s.lostEvents > 0 { rows.append(("lost events", HumanUnits.count(max(e.lostEvents, s.lostEvents)))) }
        if e.tornEvents > 0 { rows.append(("torn events", HumanUnits.count(e.tornEvents))) }
        if e.arenaFull > 0 { rows.append(("arena full", HumanUnits.count(e.arenaFull))) }
        if e.unwindFallbacks > 0 { rows.append(("stacks cut short", HumanUnits.count(e.unwindFallbacks))) }
        let problemCount = s.unknownFrees + s.doubleAllocations + s.badUndos
        if problemCount > 0 {
            rows.append(("problems", "\(HumanUnits.count(s.unknownFrees)) unknown frees, \(HumanUnits.count(s.doubleAllocations)) double allocations, \(HumanUnits.count(s.badUndos)) bad undos"))
        }
        let width = rows.map(\.0.count).max() ?? 0
        var lines = rows.map { $0.0 + String(repeating: " ", count: width - $0.0.count) + "  " + $0.1 }
        lines.append(contentsOf: s.problems.map { "  " + $0 })
        return lines
    }

    static func originName(_ o: ProcessOrigin) -> String {
        switch o {
        case .root: "the recorded program"
        case .fork: "forked"
        case .exec: "exec'd"
        }
    }

    static func endDescription(_ e: EndRecord) -> String {
        switch e.reason {
        case .exited: "exited with status \(e.status)"
        case .signaled: "killed by " + HumanUnits.signal(e.status)
        case .execed: "exec'd another program"
        case .collectorStopped: "still running when heapgen stopped"
        case .unknown: e.salvage.map { "unknown: the trace is incomplete (\($0.notice))" } ?? "unknown"
        case .corrupt: "the program corrupted its recording segment; recording stopped there"
        }
    }
}
