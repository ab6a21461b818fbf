import CHeapGenCollector
import HeapGenTrace
import HeapGenUnits
#if canImport(Glibc)
import Glibc
#endif

/// `heapgen record`: starts the program with the preload library, collects
/// every traced process image into its own trace file, and returns the exit
/// status to use (see ``ExitCodes``).
///
/// Diagnostics go to standard error as single lines prefixed `heapgen: `.
public final class Recorder {
    public let options: RecordOptions

    /// The root trace file, once known (after the program started).
    public private(set) var outputPath: String?

    /// After ``run()``: the program's own trace (its first image), if it was written completely.
    public private(set) var rootTracePath: String?
    /// After ``run()``: the other traces written completely (forked children, exec'd
    /// programs), in the order they started.
    public private(set) var otherTracePaths: [String] = []

    /// What the recorder needs from above the collector (control answers, symbol storing).
    let services: any RecordServices

    package init(options: RecordOptions, services: any RecordServices) {
        self.options = options
        self.services = services
    }

    /// Runs the recording to its end. Never throws and never traps on
    /// external data: every failure becomes one line and an exit status.
    public func run() -> Int32 {
        do {
            return try record()
        } catch let error as RecordError {
            printDiagnostic(error.message)
            return error.exitCode
        } catch {
            printDiagnostic("\(error)")
            return ExitCodes.heapgenFailed
        }
    }

    private func record() throws -> Int32 {
        let startNanoseconds = monotonicNanoseconds()
        if let slots = options.ringSlots, !Self.validRingSlots(slots) {
            throw RecordError("--ring-slots must be a power of two between \(Self.minRingSlots) and \(Self.maxRingSlots), not \(slots)",
                              exitCode: ExitCodes.usage)
        }
        let launcher = try ProgramLauncher(options: options)
        // `-o DIR`, an existing directory: the default name in it.
        let directory = options.output.flatMap { TracePaths.isDirectory($0) ? $0 : nil }
        func rootTrace(pid: Int32) -> String {
            let name = TracePaths.defaultOutput(program: options.program, pid: pid)
            return directory.map { ($0.hasSuffix("/") ? $0 : $0 + "/") + name } ?? options.output ?? name
        }
        try TracePaths.checkWritable(rootTrace(pid: 0))

        var rendezvous = hg_rendezvous()
        let rc = hg_rendezvous_open(&rendezvous)
        guard rc == 0 else {
            throw RecordError("cannot create the collector socket: \(errorString(-rc))", exitCode: ExitCodes.heapgenFailed)
        }
        // Removed however the recording ends.
        defer { hg_rendezvous_close(&rendezvous) }
        let socketPath = withUnsafeBytes(of: rendezvous.path) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }

        let keepIgnored = hg_initial_ignored_signals()
        hg_install_collector_signals()
        let env = launcher.environment(socketPath: socketPath, options: options)
        let pid = try launcher.spawn(arguments: options.arguments, argv0: options.program, environment: env,
                                     keepIgnored: keepIgnored)
        hg_set_forward_target(pid)
        hg_forward_ignored_signals()
        // Short idle sleeps should be short (the program inherited the default slack already).
        hg_set_timer_slack(10_000)
        // Each traced process costs the collector one fd (its pidfd); the
        // program was started with the limit it would have had without us.
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }

        let output = rootTrace(pid: pid)
        outputPath = output
        let pidfd = hg_pidfd_open(pid)
        guard pidfd >= 0 else {
            // Without a pidfd we cannot watch the program; wait for it and report.
            var signaled: Int32 = 0
            var code: Int32 = 0
            _ = hg_reap(pid, 1, &signaled, &code)
            throw RecordError("cannot watch the program (pidfd_open: \(errorString(-pidfd)))", exitCode: ExitCodes.heapgenFailed)
        }

        // The symbols stored at the end: their modules read while the program runs.
        let services = self.services
        let loop = RecordingLoop(listener: rendezvous.fd, rootPid: pid, rootPidfd: pidfd, paths: TracePaths(output: output),
                                 options: options, rootExecutable: launcher.executablePath,
                                 responder: services.controlResponder,
                                 moduleMapped: options.storeSymbols ? { services.moduleMapped($0) } : nil)
        loop.socketEntry = "HEAPGEN_SOCK=" + socketPath
        loop.run()
        hg_set_forward_target(0)

        // Self-contained traces: each stores what its own stacks symbolicate to.
        var finished = loop.finished
        var symbols: SymbolStoreOutcome?
        if options.storeSymbols {
            let outcome = services.storeSymbols(in: finished.filter { $0.failure == nil }.map {
                TraceSymbolInputs(path: $0.path, frameAddresses: $0.frameAddresses, modules: $0.modules)
            })
            for i in finished.indices { if let size = outcome.sizes[finished[i].path] { finished[i].bytes = size } }
            for failure in outcome.failures {
                printDiagnostic("warning: \(failure.path): symbols not stored in the trace (reports will symbolicate from the binaries): \(failure.reason)")
            }
            symbols = outcome
        }
        if options.stats {
            printStats(loop: loop, startNanoseconds: startNanoseconds, symbols: symbols)
        }
        let status = loop.rootStatus ?? .unknown
        let code = report(loop: loop, finished: finished, status: status)
        if let signal = loop.gaveUpAfterSignal {
            // The program is still running: say so last, and exit as a shell would for the signal.
            let left = loop.untracedAtStop
            if left.isEmpty {
                printDiagnostic("stopped recording after signal \(signal): the program (pid \(pid)) had not exited; it runs on untraced")
            } else {
                printDiagnostic("stopped recording after signal \(signal): the program (pid \(pid)) had exited, "
                    + "\(left.count == 1 ? "a process it started (pid \(left[0])) had not; it runs" : "\(left.count) processes it started (pids \(left.prefix(5).map(String.init).joined(separator: ", "))\(left.count > 5 ? ", …" : "")) had not; they run") on untraced")
            }
            return ExitCodes.killedBy(signal: signal)
        }
        return code
    }

    /// One `key=value` line for benchmarks: the collector's own cost.
    private func printStats(loop: RecordingLoop, startNanoseconds: UInt64, symbols: SymbolStoreOutcome?) {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let seconds = Double(monotonicNanoseconds() - startNanoseconds) / 1e9
        let busy = Double(loop.drainNanoseconds) / 1e9
        let events = loop.finished.reduce(UInt64(0)) { $0 + $1.events }
        let bytes = loop.finished.reduce(UInt64(0)) { $0 + $1.bytes }
        let waits = loop.finished.reduce(UInt64(0)) { $0 + $1.end.producerWaits }
        let waitNs = loop.finished.reduce(UInt64(0)) { $0 + $1.end.producerWaitNanoseconds }
        let rate = busy > 0 ? Double(loop.slotsDrained) / busy : 0
        let arena = loop.finished.reduce(UInt64(0)) { $0 + $1.arenaBytes }
        printDiagnostic("stats: events=\(events) seconds=\(Format.threeDecimals(seconds)) "
            + "drain_busy_seconds=\(Format.threeDecimals(busy)) slots_per_busy_second=\(Int(rate)) "
            + "peak_rss_kb=\(usage.ru_maxrss) trace_bytes=\(bytes) waits=\(waits) wait_ns=\(waitNs) arena_bytes=\(arena)"
            + " symbol_addresses=\(symbols?.addresses ?? 0) symbol_seconds=\(Format.threeDecimals(Double(symbols?.nanoseconds ?? 0) / 1e9))")
    }

    /// The closing lines; returns the exit status.
    private func report(loop: RecordingLoop, finished: [FinishedTrace], status: ExitStatus) -> Int32 {
        var failed = false
        if loop.acceptedCount == 0 && loop.finished.isEmpty {
            printDiagnostic("warning: the program was not traced (the preload library never connected)")
        }
        // The program's own trace first, then the others in the order they started.
        let traces = finished.sorted { ($0.origin == .root ? 0 : 1, $0.sequence) < ($1.origin == .root ? 0 : 1, $1.sequence) }
        for trace in traces where trace.failure == nil {
            if trace.origin == .root && rootTracePath == nil { rootTracePath = trace.path } else { otherTracePaths.append(trace.path) }
        }
        var sandboxed: [String] = []
        for trace in traces {
            if let failure = trace.failure {
                printDiagnostic("cannot write the trace \(trace.path): \(failure)")
                failed = true
                continue
            }
            if !options.quiet {
                printDiagnostic(Self.summaryLine(trace))
            }
            var problems: [String] = []
            if trace.badStacks > 0 { problems.append("\(HumanUnits.count(trace.badStacks)) allocations with an unreadable stack (kept without one)") }
            if trace.undefinedTypes > 0 { problems.append("\(HumanUnits.count(trace.undefinedTypes)) allocations naming an unknown type (kept without one)") }
            if trace.badRecords > 0 { problems.append("\(HumanUnits.count(trace.badRecords)) unreadable metadata records skipped") }
            if let cut = trace.end.cutShortBy {
                // Not a fault: a thread was inside malloc or free when its image ended.
                printDiagnostic("\(trace.path): \(HumanUnits.plural(trace.end.tornEvents, "allocator call")) cut short by \(cut) (a thread was inside), not recorded")
            } else if trace.end.tornEvents > 0 {
                problems.append("\(HumanUnits.count(trace.end.tornEvents)) half-written events discarded")
            }
            if trace.droppedCounters { problems.append("counters the program overwrote with impossible values were dropped") }
            if let stopped = trace.stoppedEarly { problems.insert(stopped, at: 0) }
            if !problems.isEmpty {
                let subject = options.temporaryTraces ? "the recording of pid \(trace.pid)" : trace.path
                printDiagnostic("warning: \(subject): " + problems.joined(separator: ", "))
            }
            if trace.end.stacksLost > 0 {
                printDiagnostic("warning: \(trace.path): " + StackCompleteness.lostWarning(trace.end.stacksLost))
            }
            // The notes below name the trace, or the process when the trace is not kept.
            let process = options.temporaryTraces ? "process \(trace.pid)" : trace.path
            if trace.sandboxed { sandboxed.append(process) }
            if trace.missedExitScan {
                let lost = options.scanLeaks ? "no verdict on its leaks" : "no reference graph"
                printDiagnostic("warning: \(process): no scan at exit, so \(lost): the process ended without "
                    + "asking for one (a vfork child's exit() used up its exit handlers, it made the exit system call "
                    + "itself, as Go programs do, or it called _exit in a signal handler that interrupted a heapgen "
                    + "request)")
            }
        }
        if !sandboxed.isEmpty { printDiagnostic("note: " + Self.sandboxNote(sandboxed)) }
        let untracedForks = loop.finished.flatMap(\.untracedForks)
        if !untracedForks.isEmpty {
            printDiagnostic("note: " + Self.untracedForkNote(untracedForks))
        }
        if !loop.untracedExecs.isEmpty {
            printDiagnostic("note: " + Self.untracedExecNote(loop.untracedExecs))
        }
        if status.reason == .signaled {
            // The shell prints nothing for a signal heapgen passed on as 128+N; without this
            // line a crash under `record` would read like a clean recording.
            printDiagnostic("the program (pid \(loop.rootPid)) was killed by " + HumanUnits.signal(status.status))
        }
        if failed { return ExitCodes.heapgenFailed }
        if status.reason == .unknown { return ExitCodes.heapgenFailed }
        return status.shellExitCode
    }

    static func summaryLine(_ trace: FinishedTrace) -> String {
        var line = "wrote \(trace.path) (\(HumanUnits.count(trace.events)) event\(trace.events == 1 ? "" : "s"), \(HumanUnits.bytes(trace.bytes))"
        if trace.end.producerWaits > 0 {
            line += "; the program waited \(HumanUnits.plural(trace.end.producerWaits, "time")) for the collector, \(HumanUnits.duration(nanoseconds: trace.end.producerWaitNanoseconds)) in all"
        }
        if trace.end.lostEvents > 0 {
            line += "; \(HumanUnits.count(trace.end.lostEvents)) events lost"
        }
        line += ")"
        return line
    }

    /// The ring sizes the shim accepts (it ignores others and uses its default).
    public static let minRingSlots = 1024
    public static let maxRingSlots = 1 << 26

    /// The one note for the processes that locked themselves into a seccomp sandbox (sshd's
    /// pre-auth child, one per connection): what heapgen does not do there, not a claim that
    /// something was lost.
    static func sandboxNote(_ subjects: [String]) -> String {
        let rule = "where heapgen makes no system calls of its own: a process forked there runs untraced, "
            + "and a stack that cannot be walked without one is cut short"
        if subjects.count == 1 { return "\(subjects[0]): the program locked itself into a seccomp sandbox, " + rule }
        let named = subjects.prefix(5).joined(separator: ", ") + (subjects.count > 5 ? ", …" : "")
        return "\(subjects.count) processes locked themselves into a seccomp sandbox (\(named)), " + rule
    }

    /// The closing note for children forked by traced processes that ran untraced: the shim
    /// could not connect for them (`errors`: the errno of each, 0 when unknown).
    static func untracedForkNote(_ errors: [Int32]) -> String {
        let n = errors.count
        let reasons = Set(errors.filter { $0 != 0 }).sorted().map { String(cString: strerror($0)) }
        let why = reasons.isEmpty ? "" : " (" + reasons.joined(separator: "; ") + ")"
        return (n == 1 ? "1 process forked by a traced process ran untraced: heapgen could not be reached from it"
            : "\(n) processes forked by traced processes ran untraced: heapgen could not be reached from them") + why
    }

    /// The closing note for programs exec'd by traced processes that never said hello,
    /// at most five named: each with its pid, and whether its environment dropped heapgen;
    /// for the others, what else keeps a program from saying hello.
    static func untracedExecNote(_ untraced: [Int32: Segment.ExecedProgram]) -> String {
        let named = untraced.sorted { $0.key < $1.key }.map { pid, program in
            let why = program.environmentDropped ? ": its environment did not preload heapgen"
                : program.killedEarlyBy.map { ": killed by signal \($0) right after its exec, before heapgen could start in it" } ?? ""
            return program.name.isEmpty ? "pid \(pid)\(why)" : "\(program.name) (pid \(pid)\(why))"
        }
        let shown = named.prefix(5).joined(separator: ", ") + (named.count > 5 ? " and \(named.count - 5) more" : "")
        let what = named.count == 1 ? "1 program exec'd by a traced process ran" : "\(named.count) programs exec'd by traced processes ran"
        var note = "\(what) untraced: \(shown)"
        let others = untraced.values.filter { !$0.environmentDropped && $0.killedEarlyBy == nil }.count
        if others > 0 {
            note += ". " + (others == untraced.count ? (others == 1 ? "It" : "They") : "The others")
                + " had heapgen in the environment but could not load or reach it: a setuid or static program, "
                + "heapgen's socket hidden (a new mount namespace over its directory), or no descriptor left "
                + "(RLIMIT_NOFILE)"
        }
        return note
    }

    public static func validRingSlots(_ n: Int) -> Bool {
        n >= minRingSlots && n <= maxRingSlots && n & (n - 1) == 0
    }
}

/// Numbers in the collector's lines come from the report's `HumanUnits`, so
/// every heapgen line reads alike; only the `--stats` precision is its own.
enum Format {
    /// `2.3174` → `"2.317"`: the fixed precision of the `--stats` line.
    static func threeDecimals(_ v: Double) -> String {
        let thousandths = Int((v * 1000).rounded())
        let fraction = String(thousandths % 1000)
        return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
