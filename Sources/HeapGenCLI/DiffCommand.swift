// `heapgen diff`: how the live heap changed between two points of a trace, or two traces.

import ArgumentParser
import HeapGenAnalysis
import HeapGenDiff
import HeapGenHTML
import HeapGenRecord
import HeapGenSymbolication

/// `heapgen diff TRACE --from A --to B` and `heapgen diff BASE NEW [--at POINT]`
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Show how the live heap changed between two marks of a trace, or between two traces.",
        discussion: """
            With one trace, --from and --to name two points of it: a mark label, a mark \
            index (0 = the first mark; heapgen info lists them), start or end. Per allocation \
            site and Swift type: objects and bytes added (allocated after --from, live at \
            --to), removed (live at --from, freed by --to) and the net change.

            With two traces (say, before and after a change), the live heap at --at in each \
            (default last-mark: the final snapshot, or the end of a trace without marks) is \
            compared. Sites are matched by their symbolicated frames (function, file and line \
            of up to --depth frames from the program's own frame) and Swift type, never by \
            address, so the match survives ASLR and rebuilds.

            Text lists the --limit largest changes by bytes; --format json prints \
            heapgen-diff/1 (docs/diff-schema.md) with every site. Exits with 64 if a point \
            is not in the trace, 65 if a trace is corrupt or not a trace, 66 if it cannot \
            be opened, 125 if the output cannot be written.
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json, html
    }

    @Argument(help: ArgumentHelp("One trace (with --from and --to), or a base trace and a new trace.",
                                 valueName: "trace"))
    var traces: [String] = []

    @Option(name: .long, help: ArgumentHelp("One trace: the earlier point (mark label or index, start, end).",
                                            valueName: "point"))
    var from: String?

    @Option(name: .long, help: ArgumentHelp("One trace: the later point (mark label or index, start, end).",
                                            valueName: "point"))
    var to: String?

    @Option(name: .long, help: ArgumentHelp(
        "Two traces: where to compare them: end, last-mark (default) or a mark label or index.", valueName: "point"))
    var at: String?

    @Option(name: .long, help: ArgumentHelp("Frames from the program's own frame that identify a site.",
                                            valueName: "n"))
    var depth: Int = HeapDiffer.defaultDepth

    @Option(name: .long, help: ArgumentHelp(
        "Sites listed, largest change first: 20 in text, all in JSON unless given; 0 = all.", valueName: "n"))
    var limit: Int?

    @Option(name: .long, help: "Output format: text, json (heapgen-diff/1, see docs/diff-schema.md) or html (one self-contained page).")
    var format: Format = .text

    @Option(name: .long, help: ArgumentHelp(
        "Write the diff to this file (created owner-only) instead of standard output.", valueName: "path"))
    var output: String?

    @OptionGroup var allocationFunctions: AllocationFunctionOptions

    func validate() throws {
        switch traces.count {
        case 1:
            guard from != nil, to != nil else {
                throw ValidationError("With one trace, give --from and --to (a mark label or index, start, end).")
            }
            if at != nil { throw ValidationError("--at compares two traces; with one trace use --from and --to.") }
        case 2:
            if from != nil || to != nil {
                throw ValidationError("--from and --to diff two points of one trace; to compare two traces use --at.")
            }
        default:
            throw ValidationError("Give one trace (with --from and --to) or two traces (base, then new).")
        }
        if depth < 1 { throw ValidationError("--depth takes a number of frames, 1 or more.") }
        if let limit, limit < 0 { throw ValidationError("--limit takes a number of sites, 0 (all) or more.") }
        if let output, output.isEmpty { throw ValidationError("--output needs a file name.") }
        for (name, value) in [("--from", from), ("--to", to), ("--at", at)] where value?.isEmpty == true {
            throw ValidationError("\(name) needs a mark label or index, start or end.")
        }
    }

    func run() throws {
        allocationFunctions.apply()
        let differ = HeapDiffer(depth: depth)
        var diff: HeapDiff
        do {
            diff = try TerminalProgress.whileReadingTraces {
                if traces.count == 1 {
                    try differ.diff(trace: traces[0], from: TracePoint(parsing: from!), to: TracePoint(parsing: to!))
                } else {
                    try differ.diff(base: traces[0], new: traces[1], at: at.map(TracePoint.init(parsing:)) ?? .finalSnapshot)
                }
            }
        } catch {
            throw pointOrTraceFailure(error)
        }
        reportSalvagedTraces()
        let text: String
        switch format {
        case .text:
            text = DiffText.render(diff, limit: limit ?? DiffText.defaultLimit)
        case .json:
            if let limit, limit > 0 { diff.entries = Array(diff.entries.prefix(limit)) }
            do {
                text = try DiffJSON.render(diff)
            } catch {
                standardError("heapgen: cannot encode the diff: \(error)\n")
                throw ExitCode(ExitCodes.heapgenFailed)
            }
        case .html:
            if let limit, limit > 0 { diff.entries = Array(diff.entries.prefix(limit)) }
            text = HTMLDiff.render(diff)
        }
        try OutputFile.emit(text, to: output, what: "diff")
    }
}
