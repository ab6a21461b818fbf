// Analysis + symbolication → Report.

import HeapGenAnalysis
import HeapGenSymbolication
import HeapGenTrace

/// Builds a ``Report`` from a generation ``Analysis``.
///
/// All frames of all findings, of every site that can change a finding once sites of one
/// source path are summed, and of the largest live-at-exit sites are symbolicated in one
/// batch by ``StackSymbolication`` (each address named from the module that held it when its
/// stack was defined; inlined frames kept).
///
/// ```swift
/// let analysis = try GenerationAnalyzer.analyze(path: path)
/// let report = ReportBuilder().build(analysis, trace: path)
/// print(TextReport.render(report, color: false))
/// ```
public struct ReportBuilder {
    /// How many live-at-exit sites a report lists (the largest by bytes).
    public static let maxLiveSites = 10
    /// How many of the largest live-at-exit stacks are symbolicated and summed into those
    /// sites: a site's figures are exact unless its blocks come from more stacks than this.
    static let liveStacksRead = 500

    /// The symbolizer used; a default one (llvm-symbolizer from the toolchain) if not given.
    public var symbolizer: Symbolizer { symbolication.symbolizer }
    /// The batch symbolicator every stack of the report goes through.
    let symbolication: StackSymbolication

    /// Creates a builder that symbolicates with `symbolizer`.
    public init(symbolizer: Symbolizer = Symbolizer()) {
        symbolication = StackSymbolication(symbolizer: symbolizer)
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
    ///
    /// Findings are judged per source path: the stacks of every site that can change a
    /// verdict (``Analysis/regroupingCandidates``) are symbolicated, sites whose stacks are one
    /// source path (``SourceSites``) are summed and judged as one site
    /// (``Analysis/regrouped(by:)``), so a call the compiler duplicated reads like the source.
    public func build(_ analysis: Analysis, trace: String, otherTraces: [String] = []) -> Report {
        var notes = analysis.notes

        // Start-up runtime blocks (libstdc++'s emergency pool) are summed apart; the largest
        // other sites live at exit are listed (a few more than shown, since sites on one
        // source path are merged).
        let (startup, startupStacks) = Self.startupBlocks(of: analysis)
        let liveSites = analysis.sites
            .filter { $0.liveAtExitObjects > 0 && !startupStacks.contains($0.stackID) }
            .sorted { a, b in
                if a.liveAtExitBytes != b.liveAtExitBytes { return a.liveAtExitBytes > b.liveAtExitBytes }
                if a.liveAtExitObjects != b.liveAtExitObjects { return a.liveAtExitObjects > b.liveAtExitObjects }
                if a.stackID != b.stackID { return a.stackID < b.stackID }
                return a.typeID < b.typeID
            }
            .prefix(Self.liveStacksRead)
        // Stacks to symbolicate: every finding, every site that can change a verdict once
        // grouped, and the live sites.
        var stackIDs: [UInt32] = []
        var seenStacks = Set<UInt32>()
        for id in analysis.findings.map(\.stackID) where seenStacks.insert(id).inserted { stackIDs.append(id) }
        for site in analysis.regroupingCandidates where seenStacks.insert(site.stackID).inserted {
            stackIDs.append(site.stackID)
        }
        for id in liveSites.map(\.stackID) where seenStacks.insert(id).inserted { stackIDs.append(id) }
        for id in analysis.strayFrees.compactMap(\.blockStack) where seenStacks.insert(id).inserted { stackIDs.append(id) }

        // The symbols the trace stored when it was recorded come first (StoredSymbols).
        let symbolicated = symbolication.symbolicate(stackIDs, of: analysis, trace: trace)
        notes += symbolicated.notes
        let frames = symbolicated.stacks.mapValues(\.frames)

        var (findings, members) = Self.findingsAndMembers(of: analysis, frames: frames)
        let retentionScan = addRetention(to: &findings, members: members, analysis: analysis, trace: trace)
        if !analysis.canRegroup && !findings.isEmpty {
            notes.append("The analysis has no site curves (it was decoded): each stack is judged alone, so a call the compiler duplicated may show as several findings.")
        }
        // Merged by source path first, so that each keeps the frames of its largest path.
        let sites = SourceSites.mergeByAllocationPoint(SourceSites.merge(liveSites.map {
            Report.Site(typeName: $0.typeName, objects: $0.liveAtExitObjects, bytes: $0.liveAtExitBytes,
                        frames: frames[$0.stackID] ?? [])
        })).prefix(Self.maxLiveSites)

        let t = analysis.totals
        // Frees made: a realloc that failed (its undo matched) freed nothing, as info counts.
        let totals = Report.Totals(
            allocations: t.allocations, frees: t.frees &- (t.reallocUndos &- t.unmatchedReallocUndos), allocatedBytes: t.allocatedBytes, peakBytes: t.peakBytes,
            peakGeneration: t.peakGeneration, liveAtExitObjects: t.liveAtExitObjects,
            liveAtExitBytes: t.liveAtExitBytes, producerWaits: t.producerWaits,
            producerWaitNanoseconds: t.producerWaitNanoseconds, lostEvents: t.lostEvents,
            untrackedFrees: t.untrackedFrees, stacksLost: t.stacksLost, leakScanned: t.leakScanned)
        let generations = analysis.generations.map {
            Report.Generation(index: $0.index, label: $0.label, allocations: $0.allocations, frees: $0.frees,
                              allocatedBytes: $0.allocatedBytes, liveObjects: $0.liveObjects,
                              liveBytes: $0.liveBytes, persistentObjects: $0.persistentObjects,
                              persistentBytes: $0.persistentBytes)
        }

        let p = analysis.process
        var exitStatus: Int32?
        var signal: Int32?
        var ending: Report.Program.Ending?
        switch analysis.end?.reason {
        case .exited?: exitStatus = analysis.end?.status; ending = .exited
        case .signaled?: signal = analysis.end?.status; ending = .killed
        case .execed?:
            ending = .exec
            notes.append("The program exec'd another program; that program has its own trace.")
        case .collectorStopped?:
            ending = .running
            notes.append("The program was still running when recording stopped.")
        case .unknown?:
            ending = .unknown
            notes.append("How the program ended is unknown.")
        case .corrupt?:
            ending = .corrupt
            notes.append("The program wrote over its own recording segment: recording stopped there.")
        case nil: break
        }
        if analysis.totals.stacksLost > 0 {
            notes.append("Warning: " + StackCompleteness.lostWarning(analysis.totals.stacksLost) + ".")
        }
        let program = Report.Program(path: p.executable, args: p.arguments, pid: p.pid,
                                     exitStatus: exitStatus, signal: signal, ending: ending)

        var report = Report(
            trace: trace, program: program,
            options: Report.Options(warmUp: analysis.options.warmUp, toleratedMisses: analysis.options.toleratedMisses),
            totals: totals, cycles: analysis.cycles, judgedCycles: analysis.judgedCycles,
            generations: generations, findings: findings,
            liveAtExit: Report.LiveAtExit(objects: t.liveAtExitObjects, bytes: t.liveAtExitBytes, sites: Array(sites),
                                          startup: startup),
            otherTraces: otherTraces, notes: notes, programSuppressions: analysis.programSuppressions)
        report.retentionScan = retentionScan
        if !analysis.recordingWarnings.isEmpty { report.recordingWarnings = analysis.recordingWarnings }
        if analysis.idleCycles > 0 { report.idleCycles = analysis.idleCycles }
        if !analysis.strayFrees.isEmpty {
            report.strayFrees = analysis.strayFrees.map { s in
                Report.StrayFree(cause: s.cause, function: s.function, address: s.address, event: s.event,
                                 blockAddress: s.blockAddress, blockSize: s.blockSize,
                                 blockFreedAtEvent: s.blockFreedAtEvent,
                                 typeName: s.blockType.flatMap { $0 == 0 ? nil : analysis.typeNames[$0] },
                                 frames: s.blockStack.flatMap { frames[$0] } ?? [])
            }
        }
        return report
    }

    /// The findings of `analysis` with the sites of one source path judged as one, in report
    /// order; `frames` are the symbolicated stacks (a site whose stack is not there stays alone).
    static func findings(of analysis: Analysis, frames: [UInt32: [Report.Frame]]) -> [Report.Finding] {
        findingsAndMembers(of: analysis, frames: frames).findings
    }

    /// As ``findings(of:frames:)``, with the sites each report finding sums.
    static func findingsAndMembers(of analysis: Analysis, frames: [UInt32: [Report.Frame]])
        -> (findings: [Report.Finding], members: [[SiteID]]) {
        var paths: [[String]: Int] = [:]
        var pathOfStack: [UInt32: Int] = [:]   // -1: the stack stays alone
        let grouped = analysis.regrouped { stackID, typeID -> SourceSites.Key? in
            let path: Int
            if let known = pathOfStack[stackID] {
                path = known
            } else {
                if let key = frames[stackID].flatMap(SourceSites.pathKey) {
                    if let i = paths[key] {
                        path = i
                    } else {
                        path = paths.count
                        paths[key] = path
                    }
                } else {
                    path = -1
                }
                pathOfStack[stackID] = path
            }
            guard path >= 0 else { return nil }
            return SourceSites.Key(path: path, typeID: typeID, typeName: analysis.typeNames[typeID])
        }
        // Which report finding holds each site, for the owners of indirect leaks.
        var findingOfSite: [SiteID: Int] = [:]
        for (i, group) in grouped.enumerated() { for m in group.members { findingOfSite[m] = i } }
        let findings = grouped.map { group in
            let f = group.finding
            let stack = frames[f.stackID] ?? []
            var finding = Report.Finding(
                kind: Report.Finding.Kind(f.kind), typeName: f.typeName, frames: stack,
                userFrame: OwnCode.firstUserFrame(stack), cycles: f.cycles, cyclesWithGrowth: f.cyclesWithGrowth,
                objectsSeries: f.objectsSeries, bytesSeries: f.bytesSeries,
                averageBytesPerCycle: Int(f.averageBytesPerCycle.rounded()),
                survivingObjects: f.survivingObjects, survivingBytes: f.survivingBytes,
                stackTruncatedAt: analysis.truncatedStacks[f.stackID])
            finding.scope = f.scope
            finding.onsetCycle = f.onsetCycle
            finding.cyclesWithGrowthSinceOnset = f.cyclesWithGrowthSinceOnset
            finding.leakedBlocks = f.leakedObjects
            finding.leakedBytes = f.leakedBytes
            if let blocks = f.leakedObjects, let bytes = f.leakedBytes {
                let indirect = f.indirectObjects ?? 0, indirectBytes = f.indirectBytes ?? 0
                finding.directBlocks = blocks &- indirect
                finding.directBytes = bytes &- indirectBytes
                finding.indirectBlocks = indirect
                finding.indirectBytes = indirectBytes
                if let owners = f.leakOwners {
                    let indices = Set(owners.compactMap { findingOfSite[$0] })
                    if !indices.isEmpty { finding.ownerFindings = indices.sorted() }
                }
            }
            return finding
        }
        return (findings, grouped.map(\.members))
    }

    /// Live-at-exit blocks allocated at start-up by the platform's libraries: every frame of
    /// the stack lies in a platform module (``OwnCode/isRuntimeModule(_:)``: libstdc++, libc,
    /// the Swift runtime…) and one of them in the dynamic loader, which called a library's
    /// static initialiser before `main` (`_dl_init`). The program's own initialisers and
    /// `dlopen` calls have a frame in the program, so they never qualify. Summed per library
    /// (the innermost frame's module), libstdc++'s pool apart; returns the summary and the
    /// stacks it covers.
    static func startupBlocks(of analysis: Analysis) -> (Report.Startup, Set<UInt32>) {
        let candidates = analysis.sites.filter { $0.liveAtExitObjects > 0 }
        guard !candidates.isEmpty else { return (Report.Startup(), []) }
        let stackIDs = Set(candidates.map(\.stackID))
        let ordered = stackIDs.map { ($0, analysis.recordIndex(ofStack: $0) ?? UInt64.max) }
            .sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }
        var modules = ModuleTimeline(events: analysis.modules).cursor()
        var libraryOf: [UInt32: String] = [:]
        for (id, record) in ordered {
            guard let addresses = analysis.frames(ofStack: id), !addresses.isEmpty else { continue }
            modules.advance(to: record)
            var paths: [String] = []
            var fromLoader = false
            var platformOnly = true
            // Innermost first, up to the loader that ran the constructor: who made the loader
            // load the library (start-up, or a dlopen by the program, as the java launcher's
            // LoadJavaVM loads libjvm and with it libstdc++) does not matter.
            for address in addresses {
                guard let module = modules.module(containing: address), OwnCode.isRuntimeModule(module.path) else {
                    platformOnly = false
                    break
                }
                let stem = OwnCode.libraryStem(OwnCode.baseName(module.path))
                if stem.hasPrefix("ld-") || stem.hasPrefix("ld.") {
                    fromLoader = true
                    break
                } else if stem != "HeapGenShim" {
                    paths.append(module.path)
                }
            }
            if platformOnly && fromLoader, let library = paths.first { libraryOf[id] = library }
        }
        var parts: [String: Report.StartupPart] = [:]
        for site in candidates {
            guard let library = libraryOf[site.stackID] else { continue }
            // libstdc++'s pool is one block of tens of kilobytes (72,704 B with libstdc++ 12);
            // its other start-up blocks (a few small ones in Swift programs) are named plainly.
            let isPool = OwnCode.libraryStem(OwnCode.baseName(library)) == "stdc++"
                && site.liveAtExitObjects == 1 && site.liveAtExitBytes >= 16 << 10
            let name = isPool ? "libstdc++ emergency exception-handling pool" : "start-up blocks of \(OwnCode.baseName(library))"
            parts[name, default: Report.StartupPart(name: name, module: library, objects: 0, bytes: 0)].objects += site.liveAtExitObjects
            parts[name]!.bytes += site.liveAtExitBytes
        }
        let list = parts.values.sorted { ($0.bytes, $1.name) > ($1.bytes, $0.name) }
        let summary = Report.Startup(objects: list.reduce(0) { $0 + $1.objects }, bytes: list.reduce(0) { $0 + $1.bytes },
                                     parts: list)
        return (summary, Set(libraryOf.keys))
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
