import ArgumentParser
import HeapGenRecord
import HeapGenUnits

/// Checks shared by the commands that run a program (`record`, `run`): the program words
/// captured with `.captureForPassthrough`, and the recording options.
enum ProgramCommandLine {
    /// Normalises `command` (drops a leading `--`) and checks it and the recording options,
    /// as `record` does. `usage` is the synopsis shown in errors, e.g.
    /// `heapgen run [options] -- PROGRAM [ARGS...]`.
    static func validate(_ caller: ParsableCommand, command: inout [String], usage: String,
                         markEvery: String?, settle: String?, ringSlots: Int?) throws {
        // Passthrough capture takes everything from the first word it does not know.
        if command.first == "-h" || command.first == "--help" { throw CleanExit.helpRequest(caller) }
        if let first = command.first, first.hasPrefix("-"), first != "--" {
            throw ValidationError("Unknown option '\(first)'. Put the program after --: \(usage)")
        }
        if command.first == "--" { command.removeFirst() }
        if command.isEmpty {
            throw ValidationError("Missing the program to run: \(usage)")
        }
        for (flag, value) in [("--mark-every", markEvery), ("--settle", settle)] {
            if let value, DurationArgument.nanoseconds(value) == nil {
                throw ValidationError("\(flag) takes a duration such as 2s or 500ms, not '\(value)'.")
            }
        }
        // 0 would mean "never": say so instead of recording without the marks asked for.
        if let markEvery, DurationArgument.nanoseconds(markEvery) == 0 {
            throw ValidationError("--mark-every takes a duration above zero, such as 2s or 500ms, not '\(markEvery)'.")
        }
        if let ringSlots, !Recorder.validRingSlots(ringSlots) {
            throw ValidationError("--ring-slots must be a power of two between \(Recorder.minRingSlots) and \(Recorder.maxRingSlots).")
        }
    }

    /// The `RecordOptions` for the validated program words `command` (a leading `--`
    /// is dropped) and the recording options shared by `record` and `run`;
    /// exits with the usage status when there is no program.
    static func recordOptions(command: [String], output: String?, noFollowFork: Bool, noFollowExec: Bool,
                              ringSlots: Int?, quiet: Bool, markEvery: String?, settle: String?) throws -> RecordOptions {
        var program = command
        if program.first == "--" { program.removeFirst() }
        guard let name = program.first else { throw ExitCode(ExitCodes.usage) }
        var options = RecordOptions(program: name, arguments: Array(program.dropFirst()), output: output,
                                    followFork: !noFollowFork, followExec: !noFollowExec,
                                    ringSlots: ringSlots, quiet: quiet)
        options.markEveryNanoseconds = markEvery.flatMap(DurationArgument.nanoseconds) ?? 0
        options.settleNanoseconds = settle.flatMap(DurationArgument.nanoseconds) ?? 0
        return options
    }
}
