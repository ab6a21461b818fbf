// Writes a few valid traces (made by TraceWriter) as seeds for the fuzzer.
// Built by scripts/fuzz-trace with the HeapGenTrace sources; argument: output directory.

@main
struct MakeSeeds {
    static func main() throws {
        let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "."
        let process = ProcessRecord(pid: 42, ppid: 1, origin: .fork, executable: "/usr/bin/app",
                                    arguments: ["app", "-v", "ünïcødé"], startUnixNanoseconds: 1_700_000_000_000_000_000)

        // Every record type.
        var w = try TraceWriter(path: "\(directory)/all-records.trace", process: process)
        w.threadStart(tid: 7)
        w.moduleLoad(ModuleRecord(loadBias: 0x7F00_0000_0000, path: "/lib/libc.so.6", buildID: [0xAB, 0xCD],
                                  segments: [.init(vaddr: 0, memsz: 0x1000, flags: 5), .init(vaddr: 0x2000, memsz: 0x100, flags: 6)]))
        w.defineStack(id: 1, frames: [0x40_1000, 0x7F00_0000_1234])
        w.defineType(id: 1, metadata: 0x5000, name: "App.Node")
        w.appendAllocation(.malloc, address: 0x1000, size: 32, stack: 1, type: 1)
        w.appendFree(.realloc, address: 0x1000)
        w.appendReallocUndo(address: 0x1000)
        w.mark(label: "gen 1", timeNanoseconds: 1000, origin: .program)
        w.appendFree(.realloc, address: 0x1000)
        w.appendAllocation(.realloc, address: 0x2000, size: 64, stack: 1, type: 0)
        w.lost(count: 3)
        w.appendFree(.free, address: 0x2000)
        w.moduleUnload(loadBias: 0x7F00_0000_0000)
        try w.finish(EndRecord(reason: .signaled, status: 9, freeNullCalls: 2))

        // Minimal.
        w = try TraceWriter(path: "\(directory)/empty.trace", process: process)
        try w.finish(EndRecord(reason: .exited))

        // Several chunks of mixed events.
        w = try TraceWriter(path: "\(directory)/mixed.trace", process: process)
        var state: UInt64 = 0x1234_5678
        func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        for id in 1...8 as ClosedRange<UInt32> {
            w.defineStack(id: id, frames: (0..<Int(id)).map { _ in next() })
            w.defineType(id: id, metadata: next(), name: "T\(id)")
        }
        for i in 0..<300 {
            switch next() % 5 {
            case 0: w.appendFree(.free, address: next() & 0xFFFF_FFF0)
            case 1: w.mark(label: "m\(i)", timeNanoseconds: next(), origin: .timer)
            default:
                w.appendAllocation(AllocationFunction.allCases[Int(next() % 9)], address: next() & 0xFFFF_FFF0,
                                   size: next() % 4096, stack: UInt32(next() % 9), type: UInt32(next() % 9))
            }
        }
        try w.finish(EndRecord(reason: .exited))

        // Compact events in column chunks, their streams compressed (and the same plain): frees of recent
        // allocations (short and long form), frees and reallocs by slot, two arenas.
        for (name, level) in [("compressed.trace", Int32(1)), ("compact-plain.trace", nil)] as [(String, Int32?)] {
            w = try TraceWriter(path: "\(directory)/\(name)", process: process, compressionLevel: level)
            w.defineStack(id: 1, frames: [0x40_1000, 0x40_2000])
            var live: [UInt64] = []
            for i in 0..<2000 {
                let arena: UInt64 = i % 3 == 0 ? 0x7F00_0000_0000 : 0x5555_0000_0000
                let address = arena + (next() % 4096) * 16
                w.appendAllocation(i % 50 == 0 ? .calloc : .malloc, address: address, size: 16 + next() % 241,
                                   stack: 1, type: 0)
                live.append(address)
                if i % 2 == 1 { w.appendFree(.free, address: live.removeFirst()) }
                if i % 97 == 0, let last = live.popLast() { w.appendFree(.realloc, address: last); w.appendReallocUndo(address: last); live.append(last) }
            }
            for address in live { w.appendFree(.free, address: address) }
            try w.finish(EndRecord(reason: .exited))
        }
        // Aggregated (`record --aggregate`): counts per group at marks, expanded by the reader.
        w = try TraceWriter(path: "\(directory)/aggregated.trace", process: process)
        try w.markAggregated()
        w.defineStack(id: 1, frames: [0x40_1000, 0x40_2000])
        w.defineStack(id: 2, frames: [0x40_3000])
        w.appendAllocation(.inherited, address: 0x9000, size: 16, stack: 2, type: 0)
        w.aggregate(epoch: 0, untrackedFrees: 2, entries: [
            AggregateEntry(stack: 1, type: 0, size: 48, birth: 0, allocated: 9, freed: 4, undone: 1),
            AggregateEntry(stack: 2, type: 0, size: 1000, birth: 0, allocated: 2, freed: 0),
        ])
        w.mark(label: "cycle", timeNanoseconds: 10, origin: .program)
        w.appendFree(.free, address: 0x9000)
        w.aggregate(epoch: 1, untrackedFrees: 0, entries: [
            AggregateEntry(stack: 1, type: 0, size: 48, birth: 0, allocated: 0, freed: 3, undone: 2),
            AggregateEntry(stack: 2, type: 0, size: 1000, birth: 1, allocated: 5, freed: 5),
        ])
        try w.finish(EndRecord(reason: .exited))
    }
}
