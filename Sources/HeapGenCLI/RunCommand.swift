// `heapgen run`: record a program, then report on (and gate) its trace.

import ArgumentParser
import HeapGenGate
import HeapGenRecord
import HeapGenRecordServices
import HeapGenReport
import HeapGenSymbolication
import HeapGenTrace
#if canImport(Glibc)
import Glibc
#endif

/// `heapgen run [record options] [report options] -- PROGRAM [ARGS...]`: record, then report.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a program, record its heap allocations, and report what grew in every cycle.",
        discussion: """
            Equivalent to heapgen record followed by heapgen report on the program's trace. \
            The program's standard input, output and error are untouched; the report goes to \
            standard output after the program has finished (or to --output), heapgen's own \
            messages to standard error. If the program exec'd another program, the report is \
            on the last program that process ran. If generations were marked in other \
            processes (children, a launcher's test binary), each of those with abandoned or \
            leaked memory gets a report too; the others share one summary, a line per program. \
            With a leak scan (--leaks, --fail-on leaked), so does every other process that \
            leaked.

            The trace is a temporary file, removed afterwards, unless --trace names it or \
            --keep-trace keeps it.

            heapgen exits with the program's status (128+N if signal N killed it); its own \
            failures are 64 (usage), 125 (heapgen failed), 126 (the program cannot be traced) \
            and 127 (not found). With a gate (--fail-on, --max-bytes-per-cycle, \
            --max-live-at-exit) it exits 23 when the gate fails, after the program has exited \
            and its output is complete; the verdict goes to standard error.
            """
    )

    // Recording, as in `heapgen record` (whose -o/--output is --trace here).
    @Option(name: .long, help: ArgumentHelp(
        "Write the program's trace here and keep it (default: a temporary file, removed afterwards).", valueName: "path"))
    var trace: String?

    @Flag(name: .customLong("keep-trace"), help: "Keep the temporary trace and print its name.")
    var keepTrace = false

    @OptionGroup var recording: RecordingOptions<RunCommand>

    @OptionGroup(title: "Report options") var report: ReportOptions

    @OptionGroup(title: "Gate options") var gate: GateOptions

    @Argument(parsing: .captureForPassthrough, help: ArgumentHelp(
        "The program to run and its arguments (put them after --).", valueName: "program"))
    var command: [String] = []

    static let usage = "heapgen run [options] -- PROGRAM [ARGS...]"

    mutating func validate() throws {
        try ProgramCommandLine.validate(self, command: &command, usage: Self.usage)
        try recording.check()
        if let trace, trace.isEmpty { throw ValidationError("--trace needs a file name.") }
        if trace != nil && keepTrace { throw ValidationError("--keep-trace is for the temporary trace; --trace already keeps it.") }
    }

    func run() throws {
        // The collector names sites for in-test assertions too: wrappers apply there as well.
        report.allocationFunctions.apply()
        let temporary = trace == nil
        var options = try recording.recordOptions(
            command: command, output: nil, quiet: recording.quiet || (temporary && !keepTrace))
        // Gate files are read before the program runs: a typo costs no run.
        let policy = gate.isUsed ? try gate.loadPolicy() : nil
        // Failing on leaks needs the scan that finds them.
        options.scanLeaks = recording.leaks || policy?.failOn.contains(.leaked) == true
        options.temporaryTraces = temporary && !keepTrace
        // A temporary trace is reported at once from the same binaries: symbols are stored
        // only in a trace that is kept.
        options.storeSymbols = !recording.noSymbols && (!temporary || keepTrace)

        // Where the trace goes.
        let tracePath: String
        if let trace {
            tracePath = trace
        } else {
            switch TemporaryTrace.create() {
            case .success(let path): tracePath = path
            case .failure(let message):
                standardError("heapgen: cannot create a temporary trace: \(message)\n")
                throw ExitCode(ExitCodes.heapgenFailed)
            }
        }

        // Record.
        options.output = tracePath
        let recorder = Recorder(options: options, services: RecordServiceProvider())
        let status = recorder.run()
        let written = (recorder.rootTracePath.map { [$0] } ?? []) + recorder.otherTracePaths
        let removeTraces = temporary && !keepTrace
        defer {
            if removeTraces {
                for path in Set(written + [tracePath]) { unlink(path) }
            }
        }

        guard let root = recorder.rootTracePath else {
            // The program did not start (the recorder said why), or was never traced.
            if temporary { unlink(tracePath) }
            if recorder.outputPath != nil {
                standardError("heapgen: no report: no trace of the program was recorded\n")
            }
            throw ExitCode(status)
        }

        // Report on the traces where generations were marked (a test binary run by a
        // launcher, a server started by a script), else on the last image of the
        // program's own process (its exec chain); the gate judges each of them.
        var subjects = TraceSelection.subjects(root: root, written: written)
        // With a leak scan, the other images that leaked are reported too (a test binary's
        // children, a server's workers): they were named only when a gate failed on them.
        if options.scanLeaks {
            subjects += written.filter { !subjects.contains($0) && TraceSelection.hasUnreachable($0) }
        }
        var notes: [String] = []
        if subjects == [root] || subjects.count > 1 {
            // nothing to explain
        } else if Self.isExecChain(subjects[0], of: root) {
            // A removed temporary trace is not named.
            notes.append("The program exec'd another program: this report is on the last one its process ran"
                + (removeTraces ? "." : "; \(root) has the first."))
        } else {
            notes.append(removeTraces ? "This report is on the trace with generation marks, not on the program heapgen started."
                : "This report is on \(subjects[0]), the trace with generation marks; \(root) is the program heapgen started.")
        }
        // Said of the whole recording: once, in the last report.
        let removal = !removeTraces ? nil : written.count > 1
            ? "The \(written.count) traces of this recording (one per process image) were temporary files and have been removed (--keep-trace or --trace keeps them)."
            : "The trace was a temporary file and has been removed (--keep-trace or --trace keeps it)."
        var results: [Report] = []
        for subject in subjects {
            do {
                // Removed traces are not listed: nothing could report on them.
                let last = subject == subjects.last
                results.append(try report.makeReport(trace: subject,
                                                     otherTraces: removeTraces ? [] : written.filter { $0 != subject },
                                                     notes: notes + (last ? removal.map { [$0] } ?? [] : [])))
            } catch {
                standardError("heapgen: cannot report on \(subject): \(error)\n")
                throw ExitCode(ExitCodes.heapgenFailed)
            }
        }
        var verdicts: [GateVerdict] = []
        if let policy {
            for i in results.indices { verdicts.append(gate.judge(&results[i], policy: policy)) }
        }
        try report.emit(MarkedReports(results, failing: Set(verdicts.indices.filter { verdicts[$0].failed }),
                                      tracesKept: !removeTraces))
        // Leaks and invalid frees are judged in every process image that has some (a forked
        // child that leaks or frees twice fails the run, as under LeakSanitizer and valgrind),
        // not only in the reported ones.
        var gated = results
        if var imagePolicy = policy, !imagePolicy.failOn.isDisjoint(with: [.leaked, .invalidFree]) {
            imagePolicy.failOn.formIntersection([.leaked, .invalidFree])
            imagePolicy.maxLiveAtExit = nil
            for other in written where !subjects.contains(other)
                && ((imagePolicy.failOn.contains(.leaked) && TraceSelection.hasUnreachable(other))
                    || (imagePolicy.failOn.contains(.invalidFree) && TraceSelection.hasStrayFrees(other))) {
                guard var extra = try? report.makeReport(trace: other, otherTraces: [], notes: []) else { continue }
                verdicts.append(gate.judge(&extra, policy: imagePolicy))
                gated.append(extra)
            }
        }
        if temporary && keepTrace {
            standardError("heapgen: kept the trace \(root)\(written.count > 1 ? " and \(written.count - 1) more next to it" : "")\n")
        }
        // The gate: the program has exited, so its output is complete whatever the verdict.
        if !verdicts.isEmpty {
            try gate.finish(verdicts, reports: gated, tracesKept: !removeTraces)
            if verdicts.contains(where: \.failed) && gate.enforcing { throw ExitCode(ExitCodes.gateFailed) }
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// True if `trace` is one of the images `root`'s own process exec'd.
    static func isExecChain(_ trace: String, of root: String) -> Bool {
        guard let pid = TraceSelection.rootPid(trace: root) else { return false }
        return trace.hasPrefix(TracePaths(output: root).path(pid: pid, image: 1, isRoot: true).dropLast())
    }
}

extension RunCommand: QuietFlagHelp {
    static var quietHelp: ArgumentHelp {
        "Do not print the collector's summary line when done (a temporary trace never prints it)."
    }
}

/// A private temporary trace file: `$TMPDIR/heapgen-XXXXXX.trace` (or under /tmp), created
/// with mkstemps, mode 0600.
enum TemporaryTrace {
    enum Outcome {
        case success(String)
        case failure(String)
    }

    static func create() -> Outcome {
        var directory = getenv("TMPDIR").map { String(cString: $0) } ?? ""
        if directory.isEmpty { directory = "/tmp" }
        while directory.count > 1 && directory.hasSuffix("/") { directory.removeLast() }
        let suffix = ".trace"
        var template = Array((directory + "/heapgen-XXXXXX" + suffix).utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemps($0.baseAddress!, Int32(suffix.utf8.count)) }
        guard fd >= 0 else { return .failure("\(directory): \(String(cString: strerror(errno)))") }
        close(fd)
        return .success(String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
