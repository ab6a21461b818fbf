// The program words of the commands that run a program (`record`, `run`).

import ArgumentParser

/// Checks shared by the commands that run a program (`record`, `run`): the program words
/// captured with `.captureForPassthrough`. Their recording options are checked by
/// ``RecordingOptions/check()``.
enum ProgramCommandLine {
    /// Normalises `command` (drops a leading `--`) and checks it, as `record` does.
    /// `usage` is the synopsis shown in errors, e.g. `heapgen run [options] -- PROGRAM [ARGS...]`.
    static func validate(_ caller: ParsableCommand, command: inout [String], usage: String) throws {
        // Passthrough capture takes everything from the first word it does not know.
        if command.first == "-h" || command.first == "--help" { throw CleanExit.helpRequest(caller) }
        if let first = command.first, first.hasPrefix("-"), first != "--" {
            throw ValidationError("Unknown option '\(first)'. Put the program after --: \(usage)")
        }
        if command.first == "--" { command.removeFirst() }
        if command.isEmpty {
            throw ValidationError("Missing the program to run: \(usage)")
        }
    }
}
