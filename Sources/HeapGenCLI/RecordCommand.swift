// `heapgen record`: run a program and write its trace.

import ArgumentParser
import HeapGenRecord
import HeapGenRecordServices

/// `heapgen record [options] -- PROGRAM [ARGS...]`
struct RecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Run a program and record its heap allocations.",
        discussion: """
            The program inherits heapgen's standard input, output and error. \
            Forked children and exec'd programs are recorded too, each into its own \
            file next to the output: OUTPUT.<pid>, and OUTPUT.<pid>.<n> for the n-th \
            program a process exec'd.

            heapgen exits with the program's status (128+N if signal N killed it); \
            its own failures are 125 (heapgen failed), 126 (the program cannot be \
            traced: statically linked, setuid, not executable) and 127 (not found).
            """
    )

    @Option(name: [.short, .long], help: ArgumentHelp(
        "Where to write the program's trace (default: heapgen-<program>-<pid>.trace; in a directory given here, that name in it).",
        valueName: "path"))
    var output: String?

    @OptionGroup var recording: RecordingOptions<RecordCommand>

    @Flag(help: "Print one 'heapgen: stats: key=value ...' line with the collector's own costs (peak RSS, drain rate).")
    var stats = false

    @Argument(parsing: .captureForPassthrough, help: ArgumentHelp(
        "The program to run and its arguments (put them after --).", valueName: "program"))
    var command: [String] = []

    static let usage = "heapgen record [options] -- PROGRAM [ARGS...]"

    mutating func validate() throws {
        try ProgramCommandLine.validate(self, command: &command, usage: Self.usage)
        try recording.check()
    }

    func run() throws {
        var options = try recording.recordOptions(command: command, output: output, quiet: recording.quiet)
        options.stats = stats
        let status = Recorder(options: options, services: RecordServiceProvider()).run()
        if status != 0 { throw ExitCode(status) }
    }
}

extension RecordCommand: QuietFlagHelp {
    static var quietHelp: ArgumentHelp { "Do not print the summary line when done." }
}
