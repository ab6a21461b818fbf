// `heapgen dump`: every record of a trace, one line each.

import ArgumentParser
import HeapGenRecord
import HeapGenTrace

/// `heapgen dump TRACE`
struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print every record of a trace, one per line (for debugging and scripts).",
        discussion: """
            Lines start with the record name: process, alloc, free, undo, stack, type, \
            module, unload, mark, thread, lost, end. Addresses are hexadecimal and absolute. \
            A trace whose collector was killed ends with the reader's own end line \
            (salvaged=BYTES) and a warning. Exits with 65 if the trace is corrupt (after \
            printing the records before the problem), 66 if it cannot be opened or is not a \
            regular file, 64 for an aggregated trace (record --aggregate), which keeps \
            counts, not records.
            """
    )

    @Argument(help: ArgumentHelp("The trace file.", valueName: "trace"))
    var trace: String

    func run() throws {
        let out = OutputBuffer()
        do {
            var reader = try TraceReader(path: trace)
            if reader.isAggregated {
                // Its events are made up from counts: printing them would pass them off as recorded.
                standardError("heapgen: \(trace): an aggregated trace (record --aggregate) keeps counts per site and generation, not the individual records dump prints; use report, diff or export\n")
                throw ExitCode(ExitCodes.usage)
            }
            try reader.forEach { out.line(Self.line($0)) }
        } catch let refusal as ExitCode {
            throw refusal
        } catch {
            out.flush()
            throw traceFailure(error)
        }
        out.flush()
        reportSalvagedTraces()
    }

    static func line(_ record: TraceRecord) -> String {
        switch record {
        case let .process(p):
            return "process pid=\(p.pid) ppid=\(p.ppid) origin=\(p.origin) start=\(p.startUnixNanoseconds) exe=\(quoted(p.executable)) args=[\(p.arguments.map(quoted).joined(separator: " "))]"
        case let .allocation(function, address, size, stack, type):
            return "alloc \(function.name) \(hex(address)) size=\(size) stack=\(stack) type=\(type)"
        case let .free(function, address):
            return "free \(function.name) \(hex(address))"
        case let .reallocUndo(address):
            return "undo \(hex(address))"
        case let .stack(id, frames):
            return "stack \(id) " + frames.map(hex).joined(separator: " ")
        case let .stackTruncated(id):
            return "truncated \(id)"
        case let .type(id, metadata, name):
            return "type \(id) \(hex(metadata)) \(quoted(name))"
        case let .moduleLoad(m):
            let segs = m.segments.map { "\(hex($0.vaddr))+\(hex($0.memsz)):\($0.flags)" }.joined(separator: ",")
            let id = m.buildID.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
            return "module \(hex(m.loadBias)) \(quoted(m.path)) buildid=\(id.isEmpty ? "-" : id) segments=\(segs.isEmpty ? "-" : segs)"
        case let .moduleUnload(loadBias):
            return "unload \(hex(loadBias))"
        case let .mark(label, time, origin):
            return "mark \(quoted(label)) time=\(time) origin=\(origin)"
        case let .threadStart(tid):
            return "thread \(tid)"
        case let .lost(count):
            return "lost \(count)"
        case let .unreachable(addresses):
            return "unreachable \(addresses.count) " + addresses.map(hex).joined(separator: " ")
        case let .programSuppressions(text):
            return "program_suppressions \(quoted(text))"
        case let .recordingWarning(text):
            return "recording_warning \(quoted(text))"
        case let .indirectLeaks(leaks):
            return "indirect \(leaks.count) " + leaks.map { "\(hex($0.address))<-\(hex($0.owner))" }.joined(separator: " ")
        case let .referenceGraph(g):
            // A summary: the graph itself can hold millions of edges.
            let trigger: String
            switch g.trigger {
            case .exit: trigger = "exit"
            case .request: trigger = "request"
            case .mark(let label): trigger = "mark:" + quoted(label)
            }
            return "reference_graph trigger=\(trigger) blocks=\(g.blocks.count) edges=\(g.edges.count) regions=\(g.roots.count) root_edges=\(g.rootEdges.count) field_types=\(g.fieldNames.count) bytes_read=\(g.bytesRead) ns=\(g.nanoseconds)"
        case let .end(e):
            var line = "end reason=\(e.reason) status=\(e.status) events=\(e.eventCount) waits=\(e.producerWaits) wait_ns=\(e.producerWaitNanoseconds) lost=\(e.lostEvents) torn=\(e.tornEvents) arena_full=\(e.arenaFull) free_null=\(e.freeNullCalls) unwind_fallbacks=\(e.unwindFallbacks) stacks_lost=\(e.stacksLost)"
            // Not in the file: the reader's stand-in for a trace cut short.
            if let s = e.salvage { line += " salvaged=\(s.readBytes) ignored_bytes=\(s.ignoredBytes)" }
            return line
        }
    }

    /// A string in double quotes with \, " and control characters escaped.
    static func quoted(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 || u.value == 0x7F {
                    out += "\\x" + (u.value < 16 ? "0" : "") + String(u.value, radix: 16)
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
