// The `heapgen` entry point: the top-level command and its subcommands.

import ArgumentParser

/// `heapgen`: record every heap allocation of a Linux program, with stacks.
@main
struct Heapgen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "heapgen",
        abstract: "Record the heap allocations of a Linux program and find what grows every cycle.",
        discussion: """
            heapgen run runs a program that marks a generation after each push/pop \
            cycle and reports the allocation sites that grew in every cycle (abandoned \
            memory), the caches that filled once, and what was live at exit. It is \
            heapgen record (a preload library records every malloc, free and friends with \
            its stack, including forked children and exec'd programs, into trace files) \
            followed by heapgen report; info and dump read traces too.
            """,
        subcommands: [RunCommand.self, RecordCommand.self, ReportCommand.self, CheckCommand.self, MarkCommand.self, InfoCommand.self, DumpCommand.self, DiffCommand.self, ExportCommand.self]
    )
}
