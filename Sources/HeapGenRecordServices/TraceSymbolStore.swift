// Stores in each finished trace what its stacks symbolicate to, at the end of a recording
// (the collector's "store symbols" hook, implemented above it).

import HeapGenRecord
import HeapGenSymbolication
import HeapGenTrace
#if canImport(Glibc)
import Glibc
#endif

/// At the end of a recording, stores in each finished trace what its own stacks symbolicate
/// to (``SymbolsRecord``), so that the trace reports and diffs the same after its binaries
/// were rebuilt or on another machine.
///
/// Runs after the recording loop returned (never while a program is being drained): every
/// distinct frame address of a trace (kept by its writer as it defined the stacks, so the
/// trace is not read again), in every module of its module map that holds it, is looked up
/// once (one symbolizer, one batch per trace), and the records are added before the
/// trace's `end` record by ``TraceSymbolAppender``. A trace that cannot be read or
/// changed keeps working without stored symbols: reports then symbolicate from the files.
enum TraceSymbolStore {
    /// `traces` are the ones written completely.
    static func store(in traces: [TraceSymbolInputs], symbolizer: Symbolizer = Symbolizer()) -> SymbolStoreOutcome {
        let start = monotonicNanoseconds()
        var outcome = SymbolStoreOutcome()
        for trace in traces {
            do {
                let records = symbols(addresses: trace.frameAddresses, modules: trace.modules, symbolizer: symbolizer)
                guard !records.isEmpty else { continue }
                outcome.sizes[trace.path] = try TraceSymbolAppender.append(records, to: trace.path)
                outcome.addresses += records.reduce(0) { $0 + $1.entries.count }
            } catch {
                outcome.failures.append((trace.path, "\(error)"))
            }
        }
        outcome.nanoseconds = monotonicNanoseconds() - start
        return outcome
    }

    private struct ModuleKey: Hashable {
        var path: String
        var buildID: [UInt8]
        var loadBias: UInt64
    }

    /// The symbols records for `addresses` (a trace's distinct frame addresses) in `modules`
    /// (its module loads, in order): one per module with resolved addresses.
    static func symbols(addresses: Set<UInt64>, modules moduleLoads: [ModuleRecord],
                        symbolizer: Symbolizer) -> [SymbolsRecord] {
        var modules: [ModuleKey: ModuleRecord] = [:]
        var order: [ModuleKey] = []
        for m in moduleLoads {
            let key = ModuleKey(path: m.path, buildID: m.buildID, loadBias: m.loadBias)
            if modules.updateValue(m, forKey: key) == nil { order.append(key) }
        }
        guard !addresses.isEmpty else { return [] }
        let sorted = addresses.sorted()
        // Every module that holds an address (a reader maps an address to the module that
        // held it when its stack was defined: storing it for each candidate covers that).
        var requests: [SymbolizationRequest] = []
        var owners: [ModuleKey] = []
        for key in order {
            guard let m = modules[key] else { continue }
            let module = Module(path: m.path, buildID: m.buildID, loadBias: m.loadBias)
            var seen = Set<UInt64>()
            for segment in m.segments where segment.memsz > 0 {
                let low = m.loadBias &+ segment.vaddr
                var i = lowerBound(sorted, low)
                while i < sorted.count && sorted[i] &- low < segment.memsz {
                    if seen.insert(sorted[i]).inserted {
                        requests.append(SymbolizationRequest(module: module, address: sorted[i], isReturnAddress: true))
                        owners.append(key)
                    }
                    i += 1
                }
            }
        }
        guard !requests.isEmpty else { return [] }
        let answers = symbolizer.symbolize(requests)
        var entries: [ModuleKey: [SymbolsRecord.Entry]] = [:]
        for (i, answer) in answers.enumerated() {
            // Only what the files answered for this very build: nothing stale, nothing empty.
            guard !answer.stale,
                  answer.frames.contains(where: { $0.function != nil || $0.file != nil }) else { continue }
            entries[owners[i], default: []].append(SymbolsRecord.Entry(
                offset: answer.moduleOffset,
                frames: answer.frames.map { StoredFrame(function: $0.function, shortFunction: $0.shortFunction,
                                                 file: $0.file, line: $0.line, column: $0.column) }))
        }
        return order.compactMap { key in
            guard var list = entries[key], !list.isEmpty else { return nil }
            list.sort { $0.offset < $1.offset }
            return SymbolsRecord(loadBias: key.loadBias, path: key.path, buildID: key.buildID, entries: list)
        }
    }

    /// The first index of `sorted` whose value is at least `value`.
    private static func lowerBound(_ sorted: [UInt64], _ value: UInt64) -> Int {
        var low = 0, high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid] < value { low = mid + 1 } else { high = mid }
        }
        return low
    }
}

