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
        "Where to write the program's trace (default: heapgen-<program>-<pid>.trace).", valueName: "path"))
    var output: String?

    @Flag(name: .customLong("no-follow-fork"), help: "Do not record children created with fork().")
    var noFollowFork = false

    @Flag(name: .customLong("no-follow-exec"), help: "Do not record programs started with exec() by the recorded processes.")
    var noFollowExec = false

    @Option(name: .customLong("ring-slots"), help: ArgumentHelp(
        "Slots in each process's event ring, a power of two from 1024 to 67108864 (default 262144).", valueName: "n"))
    var ringSlots: Int?

    @Flag(name: [.short, .long], help: "Do not print the summary line when done.")
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

    @Flag(help: "Print one 'heapgen: stats: key=value ...' line with the collector's own costs (peak RSS, drain rate).")
    var stats = false

    @Argument(parsing: .captureForPassthrough, help: ArgumentHelp(
        "The program to run and its arguments (put them after --).", valueName: "program"))
    var command: [String] = []

    static let usage = "heapgen record [options] -- PROGRAM [ARGS...]"

    mutating func validate() throws {
        try ProgramCommandLine.validate(self, command: &command, usage: Self.usage,
                                        markEvery: markEvery, settle: settle, ringSlots: ringSlots)
    }

    func run() throws {
        var options = try ProgramCommandLine.recordOptions(
            command: command, output: output, noFollowFork: noFollowFork, noFollowExec: noFollowExec,
            ringSlots: ringSlots, quiet: quiet, markEvery: markEvery, settle: settle)
        options.stats = stats
        options.scanLeaks = leaks
        options.storeSymbols = !noSymbols
        let status = Recorder(options: options, services: RecordServiceProvider()).run()
        if status != 0 { throw ExitCode(status) }
    }
}
