// `heapgen mark`: mark a generation in a process being recorded.

import ArgumentParser
import HeapGenRecord

/// `heapgen mark PID [LABEL]`
struct MarkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mark",
        abstract: "Mark a generation in a running process that heapgen is recording.",
        discussion: """
            For programs you cannot change: run one push/pop cycle (open and close \
            a screen, send a request), then `heapgen mark PID`. The mark is ordered \
            with the program's own allocations. Mark once before the first cycle \
            too: what that cycle fills (a cache) is then told apart from start-up. \
            Exits 69 if PID is not being recorded (or is heapgen itself).
            """
    )

    @Argument(help: "The process id of the recorded program (or of a recorded child).")
    var pid: Int32

    @Argument(help: "A label for the generation that ends here.")
    var label: String = ""

    func run() throws {
        do {
            try ExternalMark.mark(pid: pid, label: label)
        } catch {
            standardError("heapgen: \(error.description)\n")
            throw ExitCode(error.exitCode)
        }
    }
}
