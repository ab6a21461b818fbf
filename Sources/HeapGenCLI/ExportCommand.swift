// `heapgen export`: a trace's heap profile as pprof or collapsed stacks.

import ArgumentParser
import HeapGenAnalysis
import HeapGenDiff
import HeapGenExport
import HeapGenRecord
#if canImport(Glibc)
import Glibc
#endif

/// `heapgen export TRACE --format pprof|collapsed [--output PATH] [--sample S] [--at POINT]`
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export a trace's heap profile for pprof, or as folded stacks for flame graphs.",
        discussion: """
            pprof: a gzipped profile.proto with the sample types alloc_objects, alloc_space, \
            inuse_objects and inuse_space (in use = live at the end of the trace, or at --at; \
            allocations are counted up to the same point) and a label "generation" on every \
            sample: the mark that ends the generation its allocations came from. Try \
            `go tool pprof -top heap.pb.gz` or `-tags`.

            collapsed: one line per stack, outermost frame first, `main;work;make_buffer 4096`, \
            for flamegraph.pl, speedscope or inferno; the value is --sample (default \
            inuse_space).

            Exits with 64 if the --at point is not in the trace, 65 if the trace is corrupt \
            or not a trace, 66 if it cannot be opened, 125 if the output cannot be written.
            """
    )

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case pprof, collapsed
    }

    @Argument(help: ArgumentHelp("The trace file.", valueName: "trace"))
    var trace: String

    @Option(name: .long, help: "pprof (gzipped profile.proto) or collapsed (folded stacks).")
    var format: Format

    @Option(name: .long, help: ArgumentHelp(
        "Write to this file (created owner-only) instead of standard output.", valueName: "path"))
    var output: String?

    @Option(name: .long, help: ArgumentHelp(
        "collapsed only: the value of each line: inuse_space (default), inuse_objects, alloc_space or alloc_objects.",
        valueName: "type"))
    var sample: String?

    @Option(name: .long, help: ArgumentHelp(
        "Measure in-use memory at this point: end (default), last-mark, or a mark label or index.",
        valueName: "point"))
    var at: String?

    func validate() throws {
        if let sample {
            guard format == .collapsed else {
                throw ValidationError("--sample chooses the value of collapsed stacks; a pprof profile has all four.")
            }
            guard HeapSample(rawValue: sample) != nil else {
                throw ValidationError("--sample takes one of: " + HeapSample.allCases.map(\.rawValue).joined(separator: ", ") + ".")
            }
        }
        if let output, output.isEmpty { throw ValidationError("--output needs a file name.") }
        if let at, at.isEmpty { throw ValidationError("--at needs a mark label or index, end or last-mark.") }
    }

    func run() throws {
        if format == .pprof && output == nil && isatty(1) == 1 {
            standardError("heapgen: a pprof profile is binary: give --output PATH or redirect standard output.\n")
            throw ExitCode(ExitCodes.usage)
        }
        let profile: HeapProfile
        do {
            profile = try TerminalProgress.whileReadingTraces {
                try HeapProfile.load(trace: trace, at: at.map(TracePoint.init(parsing:)) ?? .end)
            }
        } catch {
            throw pointOrTraceFailure(error)
        }
        reportSalvagedTraces()
        // The output is made only now, with the trace read: a trace that cannot be read
        // leaves no empty file behind. Its pieces are written as they are made.
        let notes: [String]
        do {
            notes = try OutputFile.writing(to: output) { sink in
                try TerminalProgress.whileReadingTraces {
                    switch format {
                    case .pprof:
                        try PprofExport.write(profile, to: sink)
                    case .collapsed:
                        try CollapsedExport.write(profile, sample: sample.flatMap(HeapSample.init(rawValue:)) ?? .inuseSpace, to: sink)
                    }
                }
            }
        } catch let failure as OutputFile.Failure {
            standardError("heapgen: cannot write \(output ?? "standard output"): \(failure.problem)\n")
            throw ExitCode(ExitCodes.heapgenFailed)
        } catch {
            throw pointOrTraceFailure(error)
        }
        for note in notes { standardError("heapgen: note: \(note)\n") }
    }
}
