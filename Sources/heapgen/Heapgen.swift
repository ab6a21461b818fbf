import ArgumentParser

/// `heapgen`: record every heap allocation of a Linux program, with stacks.
@main
struct Heapgen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "heapgen",
        abstract: "Record and inspect the heap allocations of a Linux program.",
        discussion: """
            heapgen record runs a program with a preload library that records every \
            malloc, free and friends with its stack, including forked children and \
            exec'd programs, into trace files; info and dump read them.
            """,
        subcommands: [RecordCommand.self, MarkCommand.self, InfoCommand.self, DumpCommand.self]
    )
}
