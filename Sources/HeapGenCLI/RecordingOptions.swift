// The recording flags `record` and `run` share, declared once as an option group.

import ArgumentParser
import HeapGenRecord
import HeapGenUnits

/// Supplies the help of `-q, --quiet`, the one recording flag whose text differs between
/// the commands: `run` adds that its temporary trace never prints the summary line.
protocol QuietFlagHelp {
    /// The help shown for `-q, --quiet`.
    static var quietHelp: ArgumentHelp { get }
}

/// How a program is recorded: which processes are followed, the ring size, timed marks,
/// the leak scan and the symbols stored in the trace.
///
/// `Command` only chooses the help text of `-q` (see ``QuietFlagHelp``); `-q` is in the
/// group so that the flags keep their order in `--help`. The output path is not here:
/// `record` calls it `-o/--output`, `run` calls it `--trace`.
struct RecordingOptions<Command: QuietFlagHelp>: ParsableArguments {
    @Flag(name: .customLong("no-follow-fork"), help: "Do not record children created with fork().")
    var noFollowFork = false

    @Flag(name: .customLong("no-follow-exec"), help: "Do not record programs started with exec() by the recorded processes.")
    var noFollowExec = false

    @Option(name: .customLong("ring-slots"), help: ArgumentHelp(
        "Slots in each process's event ring, a power of two from 1024 to 67108864 (default 262144): 16 bytes each; an allocation or free takes one, a Swift object's allocation two.", valueName: "n"))
    var ringSlots: Int?

    @Flag(name: [.short, .long], help: Command.quietHelp)
    var quiet = false

    @Option(name: .customLong("mark-every"), help: ArgumentHelp(
        "Mark a generation every DURATION (e.g. 2s, 500ms), for programs that cannot mark their own cycles.",
        valueName: "duration"))
    var markEvery: String?

    @Option(help: ArgumentHelp(
        "After the program's last mark, wait DURATION and mark 'heapgen.settle': the final snapshot, for objects released a little later.",
        valueName: "duration"))
    var settle: String?

    @Flag(name: .customLong("no-symbols"), help: "Do not store in the trace what its stacks symbolicate to (done once the program exited; it makes a trace report and diff the same after the program is rebuilt or on another machine).")
    var noSymbols = false

    @Flag(help: "At exit, find the blocks nothing references any more (a conservative reachability scan, like LeakSanitizer) and record them: the report calls sites with unreachable blocks at exit 'leaked', with their blocks and bytes.")
    var leaks = false

    @Flag(help: "At exit, take the reference graph of the live heap (who references each block, from which globals, stacks and registers) for retention paths, without judging leaks unless --leaks is given too.")
    var retention = false

    @Option(name: .customLong("retention-at"), help: ArgumentHelp(
        "Right after the program's mark LABEL (heapgen_mark), take the reference graph of the live heap there, with its threads stopped. Repeatable.",
        valueName: "label"))
    var retentionAt: [String] = []

    @Flag(help: "Bounded long runs: fold allocations and frees into per-site, per-generation counts written at each mark instead of one record per event, so the trace grows with marks and sites, not with run time. report, diff, export and check work on it; dump, --leaks and --retention need the individual blocks and refuse it.")
    var aggregate = false

    /// Checks the durations and the ring size. Not `validate()`: ArgumentParser runs a
    /// group's `validate()` while parsing, before the command's check of the program
    /// words, and a missing program must be reported first.
    func check() throws {
        for (flag, value) in [("--mark-every", markEvery), ("--settle", settle)] {
            if let value, DurationArgument.nanoseconds(value) == nil {
                throw ValidationError("\(flag) takes a duration such as 2s or 500ms, not '\(value)'.")
            }
        }
        // 0 would mean "never": say so instead of recording without the marks asked for.
        if let markEvery, DurationArgument.nanoseconds(markEvery) == 0 {
            throw ValidationError("--mark-every takes a duration above zero, such as 2s or 500ms, not '\(markEvery)'.")
        }
        for label in retentionAt where label.isEmpty || label.utf8.count > 512 || label.contains("\n") {
            throw ValidationError("--retention-at takes a mark label of 1 to 512 bytes without a newline, not '\(label)'.")
        }
        // The shim keeps the labels in a fixed 4 KiB buffer (no allocation in the target) and
        // ignores a longer list: refuse it here rather than take no graph at all.
        if retentionAt.reduce(0, { $0 + $1.utf8.count + 1 }) > 4095 {
            throw ValidationError("--retention-at labels take at most 4,094 bytes together (each counts its length plus one).")
        }
        // The scans name blocks by address; an aggregated trace keeps no addresses to match.
        if aggregate && (leaks || retention || !retentionAt.isEmpty) {
            let flag = leaks ? "--leaks" : retention ? "--retention" : "--retention-at"
            throw ValidationError("--aggregate cannot be combined with \(flag): an aggregated trace keeps no individual blocks for a scan to name.")
        }
        if let ringSlots, !Recorder.validRingSlots(ringSlots) {
            throw ValidationError("--ring-slots must be a power of two between \(Recorder.minRingSlots) and \(Recorder.maxRingSlots).")
        }
    }

    /// The `RecordOptions` for the validated program words `command` (a leading `--` is
    /// dropped) with these options, writing to `output`; `quiet` is passed apart because
    /// `run` also silences a temporary trace. Leak scan and stored symbols are as the
    /// flags say; `run` widens or narrows them. Exits with the usage status when there
    /// is no program.
    func recordOptions(command: [String], output: String?, quiet: Bool) throws -> RecordOptions {
        var program = command
        if program.first == "--" { program.removeFirst() }
        guard let name = program.first else { throw ExitCode(ExitCodes.usage) }
        var options = RecordOptions(program: name, arguments: Array(program.dropFirst()), output: output,
                                    followFork: !noFollowFork, followExec: !noFollowExec,
                                    ringSlots: ringSlots, quiet: quiet)
        options.markEveryNanoseconds = markEvery.flatMap(DurationArgument.nanoseconds) ?? 0
        options.settleNanoseconds = settle.flatMap(DurationArgument.nanoseconds) ?? 0
        options.scanLeaks = leaks
        options.retention = retention
        options.retentionAt = retentionAt
        options.storeSymbols = !noSymbols
        options.aggregate = aggregate
        if !self.quiet { options.progress = RecordingProgressLine.make() }
        return options
    }
}
