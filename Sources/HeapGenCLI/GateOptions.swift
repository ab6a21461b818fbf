// The CI leak-gate options `run` and `check` share, and how they judge and report.

import ArgumentParser
import HeapGenGate
import HeapGenRecord
import HeapGenReport
import HeapGenUnits
#if canImport(Glibc)
import Glibc
#endif

/// The CI leak-gate options `run` and `check` share. Parsing only: the gate itself is
/// ``HeapGenGate/Gate``.
struct GateOptions: ParsableArguments {
    @Option(name: .customLong("fail-on"), help: ArgumentHelp(
        "Fail (exit 23) on: abandoned (a site growing more than --max-bytes-per-cycle), leaked, growth (the whole live heap growing more than --max-bytes-per-cycle), invalid-free (a double free, or a free of a pointer into a block). Comma-separated; repeatable.",
        valueName: "criteria"))
    var failOn: [String] = []

    @Option(name: .customLong("max-bytes-per-cycle"), help: ArgumentHelp(
        "Growth per judged cycle allowed to an abandoned site and, with --fail-on growth, to the heap (default 0; 64, 1KB, '1 KiB', 2MB; K = 1024). Alone it means --fail-on abandoned.",
        valueName: "size"))
    var maxBytesPerCycle: String?

    @Option(name: .customLong("max-live-at-exit"), help: ArgumentHelp(
        "Fail (exit 23) if more than SIZE bytes are live at exit, after suppressions.", valueName: "size"))
    var maxLiveAtExit: String?

    @Option(name: .customLong("suppressions"), help: ArgumentHelp(
        "Suppression file: KIND:PATTERN lines (leak:, function:, file:, module:, type:; free: for invalid frees, by the block's allocation stack), # comments. Repeatable.",
        valueName: "file"))
    var suppressions: [String] = []

    @Flag(name: .customLong("include-libraries"), help: "Let abandoned sites with no frame in your own code (growth inside the toolchain's or the system's libraries, shown apart in the report) fail the gate too.")
    var includeLibraries = false

    @Flag(name: .customLong("print-suppressions"), help: "Print each suppression with the findings and bytes it matched.")
    var printSuppressions = false

    @Option(help: ArgumentHelp("Findings listed in this heapgen-baseline/1 file do not fail the gate.", valueName: "file"))
    var baseline: String?

    @Option(name: .customLong("write-baseline"), help: ArgumentHelp(
        "Write today's abandoned and leaked findings (not suppressed) as a baseline.", valueName: "file"))
    var writeBaseline: String?

    @Option(help: ArgumentHelp("Write the verdict as JUnit XML.", valueName: "path"))
    var junit: String?

    @Option(help: ArgumentHelp("Append the verdict as Markdown (for $GITHUB_STEP_SUMMARY).", valueName: "path"))
    var summary: String?

    @Option(help: ArgumentHelp("Write the failing findings as SARIF 2.1.0.", valueName: "path"))
    var sarif: String?

    func validate() throws {
        for value in failOn {
            do { _ = try GatePolicy.parseCriteria(value) } catch { throw ValidationError("\(error)") }
        }
        for (flag, value) in [("--max-bytes-per-cycle", maxBytesPerCycle), ("--max-live-at-exit", maxLiveAtExit)] {
            if let value, ByteSize.parse(value) == nil {
                throw ValidationError("\(flag) takes a size such as 64, 1KB, '1 KiB' or 2MB, not '\(value)'.")
            }
        }
        for (flag, value) in [("--baseline", baseline), ("--write-baseline", writeBaseline), ("--junit", junit),
                              ("--summary", summary), ("--sarif", sarif)] {
            if let value, value.isEmpty { throw ValidationError("\(flag) needs a file name.") }
        }
        if suppressions.contains(where: \.isEmpty) { throw ValidationError("--suppressions needs a file name.") }
    }

    /// True if any gate option was given.
    var isUsed: Bool {
        !failOn.isEmpty || maxBytesPerCycle != nil || maxLiveAtExit != nil || !suppressions.isEmpty
            || printSuppressions || includeLibraries || baseline != nil || writeBaseline != nil || junit != nil || summary != nil || sarif != nil
    }

    /// The policy these options describe, its suppression and baseline files read. Without a
    /// criterion, `defaultCriteria` apply (`check`: abandoned). A file that cannot be read or
    /// parsed is a usage error: one line naming it (and the line), exit 64.
    func loadPolicy(defaultCriteria: Set<GatePolicy.Criterion> = []) throws -> GatePolicy {
        var policy = GatePolicy()
        for value in failOn { policy.failOn.formUnion((try? GatePolicy.parseCriteria(value)) ?? []) }
        policy.maxBytesPerCycle = maxBytesPerCycle.flatMap(ByteSize.parse) ?? 0
        policy.includeLibraries = includeLibraries
        policy.maxLiveAtExit = maxLiveAtExit.flatMap(ByteSize.parse).map { UInt64($0) }
        if policy.failOn.isEmpty && maxBytesPerCycle != nil { policy.failOn = [.abandoned] }
        if !policy.hasCriteria { policy.failOn = defaultCriteria }
        do {
            policy.suppressions = try Suppressions.load(paths: suppressions)
            if let baseline { policy.baseline = try Baseline.load(path: baseline) }
        } catch {
            standardError("heapgen: \(error)\n")
            throw ExitCode(ExitCodes.usage)
        }
        return policy
    }

    /// Judges `report` and adds notes on suppressed, known and fixed findings to it.
    func judge(_ report: inout Report, policy: GatePolicy) -> GateVerdict {
        var policy = policy
        // The program's __lsan_default_suppressions() lines join the user's (LeakSanitizer does so).
        if let text = report.programSuppressions {
            do {
                policy.suppressions.rules += try Suppressions.parse(text, source: GateMessages.programSuppressionsSource).rules
            } catch {
                standardError("heapgen: warning: the program's \(error); its suppressions are ignored\n")
            }
        }
        let verdict = Gate.evaluate(report, policy: policy)
        report.notes += GateMessages.reportNotes(verdict)
        return verdict
    }

    /// False while writing a baseline: recording today's findings is not a failure,
    /// so CI can create a baseline without `|| true`.
    var enforcing: Bool { writeBaseline == nil }

    /// `heapgen: git (pid 41: git prune --expire …; /tmp/t.trace.41.1):` names the image a
    /// verdict is on, by its command line (a test binary's or a worker's arguments tell which
    /// one it was); several images of one program with the same verdict, by their pids.
    static func imageLine(_ reports: [Report], tracesKept: Bool) -> String {
        let program = reports[0].program
        let name = program.path.split(separator: "/").last.map(String.init) ?? program.path
        guard reports.count == 1 else {
            let pids = reports.prefix(6).map { String($0.program.pid) }.joined(separator: ", ")
            return "heapgen: \(name) (pids \(pids)\(reports.count > 6 ? ", … \(reports.count) images" : "")): the same verdict in each:"
        }
        var command = Report.Program.shellQuoted([name] + program.args.dropFirst())
        if command.count > 72 { command = String(command.prefix(71)) + "…" }
        return "heapgen: \(name) (pid \(program.pid): \(command)\(tracesKept ? "; \(reports[0].trace)" : "")):"
    }

    /// Prints the verdict to standard error (after the suppression table with
    /// --print-suppressions) and writes the baseline, JUnit, Markdown and SARIF files.
    /// A file that cannot be written: one line, exit 125.
    func finish(_ verdict: GateVerdict, report: Report) throws {
        try finish([verdict], reports: [report])
    }

    /// The same for the verdicts on several traces of one recording (`verdicts[i]` on
    /// `reports[i]`): the first verdict's lines and every failed one's, each under a line
    /// naming its program, then one line for the other passed ones (a wrapper's helpers under
    /// `--mark-every`); the baseline holds the findings of all of them; JUnit, Markdown and
    /// SARIF describe the first failing verdict (else the first). Failed verdicts after the
    /// first that read the same in images of one program (a leak every forked child of a
    /// server inherited) are one entry naming their pids. `tracesKept`: false when `run`
    /// removed the traces, whose paths are then not named.
    func finish(_ verdicts: [GateVerdict], reports: [Report], tracesKept: Bool = true) throws {
        guard !verdicts.isEmpty, verdicts.count == reports.count else { return }
        var lines: [String] = []
        var passedOthers: [Report] = []
        var entries: [(reports: [Report], lines: [String])] = []
        for (i, (verdict, report)) in zip(verdicts, reports).enumerated() {
            if i > 0 && !verdict.failed {
                passedOthers.append(report)
                continue
            }
            let body = (printSuppressions ? GateMessages.suppressionTable(verdict) : []) + GateMessages.verdictLines(verdict)
            if i > 0, let same = entries.indices.dropFirst().first(where: {
                entries[$0].lines == body && entries[$0].reports[0].program.path == report.program.path
            }) {
                entries[same].reports.append(report)
                continue
            }
            entries.append(([report], body))
        }
        for entry in entries {
            if verdicts.count > 1 { lines.append(Self.imageLine(entry.reports, tracesKept: tracesKept)) }
            lines += entry.lines
        }
        if !passedOthers.isEmpty {
            lines.append("heapgen: gate passed on \(HumanUnits.plural(passedOthers.count, "more process image")): "
                + MarkedReports.byProgram(passedOthers).map { "\($0.name) (\($0.reports.count))" }.joined(separator: ", "))
        }
        standardError(lines.joined(separator: "\n") + "\n")
        let primary = verdicts.firstIndex(where: \.failed) ?? 0
        let verdict = verdicts[primary]
        let report = reports[primary]
        do {
            if let writeBaseline {
                var entries = verdicts.flatMap(\.findings).filter {
                    if case .suppressed = $0.status { return false } else { return true }
                }.map { Baseline.Entry($0.finding) }
                if verdicts.allSatisfy({ $0.judgedCycles < 2 }), let old = verdict.policy.baseline {
                    standardError("heapgen: too few cycles to judge: the baseline keeps its \(old.entries.count) entries\n")
                    entries = old.entries
                }
                var seen = Set<BaselineSignature>()
                entries = entries.filter { seen.insert($0.signature).inserted }
                    .sorted { $0.signature.canonicalText < $1.signature.canonicalText }
                try GateFile.write(try Baseline(entries: entries).encoded(), to: writeBaseline)
                standardError("heapgen: wrote \(entries.count) baseline entr\(entries.count == 1 ? "y" : "ies") to \(writeBaseline)\n")
                if verdicts.contains(where: \.failed) {
                    standardError("heapgen: not failing: --write-baseline records today's findings (gate with --baseline \(writeBaseline))\n")
                }
            }
            if let junit { try GateFile.write(JUnitWriter.render(verdict, report: report), to: junit) }
            if let summary { try GateFile.write(MarkdownSummary.render(verdict, report: report), to: summary, append: true) }
            if let sarif {
                let cwd = getcwd(nil, 0).map { p -> String in defer { free(p) }; return String(cString: p) }
                try GateFile.write(try SARIFWriter.render(verdict, report: report, sourceRoot: cwd), to: sarif)
            }
        } catch {
            standardError("heapgen: cannot write \(error)\n")
            throw ExitCode(ExitCodes.heapgenFailed)
        }
    }
}
