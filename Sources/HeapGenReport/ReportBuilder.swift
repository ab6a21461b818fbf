// Analysis + symbolication → Report.

import HeapGenAnalysis
import HeapGenSymbolication
import HeapGenTrace

/// Builds a ``Report`` from a generation ``Analysis``.
///
/// Every frame address is mapped to the module that held it when its stack was defined
/// (the module map replayed to ``Analysis/stackRecordIndices``), so a library unloaded and
/// another loaded at the same place later does not mix up names. All frames of all
/// findings and of the largest live-at-exit sites are symbolicated in one batch; every
/// frame is a return address (frame 0 too: the shim records the return address into the
/// caller of `malloc`). Inlined frames are kept.
///
/// ```swift
/// let analysis = try GenerationAnalyzer.analyze(path: path)
/// let report = ReportBuilder().build(analysis, trace: path)
/// print(TextReport.render(report, color: false))
/// ```
public struct ReportBuilder {
    /// How many live-at-exit sites a report lists (the largest by bytes).
    public static let maxLiveSites = 10

    /// The symbolizer used; a default one (llvm-symbolizer from the toolchain) if not given.
    public let symbolizer: Symbolizer

    /// Creates a builder that symbolicates with `symbolizer`.
    public init(symbolizer: Symbolizer = Symbolizer()) {
        self.symbolizer = symbolizer
    }

    /// Reads the trace at `path`, analyzes it with `options` and builds its report.
    ///
    /// - Throws: ``TraceError`` if the trace cannot be read or is invalid.
    public func build(tracePath path: String, options: AnalysisOptions = AnalysisOptions(),
                      otherTraces: [String] = []) throws -> Report {
        let analysis = try GenerationAnalyzer.analyze(path: path, options: options)
        return build(analysis, trace: path, otherTraces: otherTraces)
    }

    /// The report of `analysis`, made from the trace at `trace`; `otherTraces` are the traces
    /// of the recording's forked children and exec'd programs.
    public func build(_ analysis: Analysis, trace: String, otherTraces: [String] = []) -> Report {
        var notes = analysis.notes

        // The sites to show: every finding, and the largest live at exit (a few more than
        // listed, since sites on one source path are merged).
        let liveSites = analysis.sites
            .filter { $0.liveAtExitObjects > 0 }
            .sorted { a, b in
                if a.liveAtExitBytes != b.liveAtExitBytes { return a.liveAtExitBytes > b.liveAtExitBytes }
                if a.liveAtExitObjects != b.liveAtExitObjects { return a.liveAtExitObjects > b.liveAtExitObjects }
                if a.stackID != b.stackID { return a.stackID < b.stackID }
                return a.typeID < b.typeID
            }
            .prefix(Self.maxLiveSites * 5)
        var stackIDs: [UInt32] = []
        var seenStacks = Set<UInt32>()
        for id in analysis.findings.map(\.stackID) + liveSites.map(\.stackID) where seenStacks.insert(id).inserted {
            stackIDs.append(id)
        }

        let symbolicated = symbolicate(stackIDs, of: analysis)
        notes += symbolicated.notes
        let frames = symbolicated.frames

        let perSite = analysis.findings.sorted(by: HeapGenAnalysis.Finding.reportOrder).map { f -> Report.Finding in
            let stack = frames[f.stackID] ?? []
            return Report.Finding(
                kind: Report.Finding.Kind(f.kind), typeName: f.typeName, frames: stack,
                userFrame: OwnCode.firstUserFrame(stack), cycles: f.cycles, cyclesWithGrowth: f.cyclesWithGrowth,
                objectsPerCycle: f.objectsPerCycle, bytesPerCycle: f.bytesPerCycle,
                averageBytesPerCycle: Int(f.averageBytesPerCycle.rounded()),
                survivingObjects: f.survivingObjects, survivingBytes: f.survivingBytes)
        }
        let findings = SourceSites.merge(perSite)
        let sites = SourceSites.merge(liveSites.map {
            Report.Site(typeName: $0.typeName, objects: $0.liveAtExitObjects, bytes: $0.liveAtExitBytes,
                        frames: frames[$0.stackID] ?? [])
        }).prefix(Self.maxLiveSites)

        let t = analysis.totals
        let totals = Report.Totals(
            allocations: t.allocations, frees: t.frees, allocatedBytes: t.allocatedBytes, peakBytes: t.peakBytes,
            peakGeneration: t.peakGeneration, liveAtExitObjects: t.liveAtExitObjects,
            liveAtExitBytes: t.liveAtExitBytes, producerWaits: t.producerWaits,
            producerWaitNanoseconds: t.producerWaitNanoseconds, lostEvents: t.lostEvents,
            untrackedFrees: t.untrackedFrees)
        let generations = analysis.generations.map {
            Report.Generation(index: $0.index, label: $0.label, allocations: $0.allocations, frees: $0.frees,
                              allocatedBytes: $0.allocatedBytes, liveObjects: $0.liveObjects,
                              liveBytes: $0.liveBytes, persistentObjects: $0.persistentObjects,
                              persistentBytes: $0.persistentBytes)
        }

        let p = analysis.process
        var exitStatus: Int32?
        var signal: Int32?
        switch analysis.end?.reason {
        case .exited?: exitStatus = analysis.end?.status
        case .signaled?: signal = analysis.end?.status
        case .execed?: notes.append("The program exec'd another program; that program has its own trace.")
        case .collectorStopped?: notes.append("The program was still running when recording stopped.")
        case .unknown?: notes.append("How the program ended is unknown.")
        case nil: break
        }
        let program = Report.Program(path: p.executable, args: p.arguments, pid: p.pid,
                                     exitStatus: exitStatus, signal: signal)

        return Report(
            trace: trace, program: program,
            options: Report.Options(warmUp: analysis.options.warmUp, toleratedMisses: analysis.options.toleratedMisses),
            totals: totals, cycles: analysis.cycles, judgedCycles: analysis.judgedCycles,
            generations: generations, findings: findings,
            liveAtExit: Report.LiveAtExit(objects: t.liveAtExitObjects, bytes: t.liveAtExitBytes, sites: Array(sites)),
            otherTraces: otherTraces, notes: notes)
    }

    /// Symbolicates the frames of `stackIDs` in one batch.
    func symbolicate(_ stackIDs: [UInt32], of analysis: Analysis)
        -> (frames: [UInt32: [Report.Frame]], notes: [String]) {
        // Each distinct (module, address) once.
        struct Key: Hashable {
            var module: Module
            var address: UInt64
        }
        var requestIndex: [Key: Int] = [:]
        var requests: [SymbolizationRequest] = []
        /// Per stack, per raw frame: the request index, or the address when no module held it.
        var plans: [UInt32: [(request: Int?, address: UInt64)]] = [:]
        var modulesByRecord: [UInt64: [UInt64: Module]] = [:]   // record index → address → module
        for id in stackIDs {
            let addresses = analysis.stacks[id] ?? []
            let record = analysis.stackRecordIndices[id] ?? UInt64.max
            var memo = modulesByRecord[record] ?? [:]
            var plan: [(request: Int?, address: UInt64)] = []
            plan.reserveCapacity(addresses.count)
            for address in addresses {
                let module: Module?
                if let known = memo[address] {
                    module = known
                } else if let m = analysis.module(containing: address, atRecord: record) {
                    module = Module(path: m.path, buildID: m.buildID, loadBias: m.loadBias)
                    memo[address] = module
                } else {
                    module = nil
                }
                guard let module else {
                    plan.append((nil, address))
                    continue
                }
                let key = Key(module: module, address: address)
                if let i = requestIndex[key] {
                    plan.append((i, address))
                } else {
                    requestIndex[key] = requests.count
                    plan.append((requests.count, address))
                    requests.append(SymbolizationRequest(module: module, address: address, isReturnAddress: true))
                }
            }
            modulesByRecord[record] = memo
            plans[id] = plan
        }

        let answers = requests.isEmpty ? [] : symbolizer.symbolize(requests)

        var notes: [String] = []
        if !requests.isEmpty && symbolizer.backend == .none {
            notes.append("No symbolizer was found (llvm-symbolizer or addr2line; HEAPGEN_SYMBOLIZER names one): frames show addresses only.")
        }
        var staleModules = Set<String>()
        for frames in answers { for f in frames where f.stale { staleModules.insert(f.module) } }
        if !staleModules.isEmpty {
            let names = staleModules.sorted().prefix(3).joined(separator: ", ")
            let more = staleModules.count > 3 ? " and \(staleModules.count - 3) more" : ""
            notes.append("Changed or missing since the recording, so their frames may lack names: \(names)\(more).")
        }

        var out: [UInt32: [Report.Frame]] = [:]
        var unmapped = 0
        for id in stackIDs {
            var frames: [Report.Frame] = []
            for step in plans[id] ?? [] {
                guard let r = step.request else {
                    unmapped += 1
                    frames.append(Report.Frame(module: nil, address: step.address))
                    continue
                }
                for s in answers[r] {
                    frames.append(Report.Frame(function: s.function, shortFunction: s.shortFunction, file: s.file,
                                               line: s.line, column: s.column, module: s.module,
                                               address: s.address, inlined: s.inlined))
                }
            }
            out[id] = frames
        }
        if unmapped > 0 {
            notes.append("\(unmapped) frame address\(unmapped == 1 ? " was" : "es were") in no recorded module (generated code?): shown without a module.")
        }
        return (out, notes)
    }
}

extension Report.Finding.Kind {
    /// The report kind of an analysis finding kind.
    init(_ kind: HeapGenAnalysis.Finding.Kind) {
        switch kind {
        case .abandoned: self = .abandoned
        case .leaked: self = .leaked
        case .cache: self = .cache
        }
    }
}
