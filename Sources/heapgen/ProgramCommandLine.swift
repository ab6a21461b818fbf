import ArgumentParser
import HeapGenRecord

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
        if let ringSlots, !Recorder.validRingSlots(ringSlots) {
            throw ValidationError("--ring-slots must be a power of two between \(Recorder.minRingSlots) and \(Recorder.maxRingSlots).")
        }
    }
}
