// "Why is it alive": retention paths, cycles and held findings from the trace's reference graph.

import Foundation
import HeapGenAnalysis
import HeapGenSymbolication
import HeapGenTrace

extension ReportBuilder {
    /// Adds ``Report/Finding/retention``, ``Report/Finding/cycle``, ``Report/Finding/heldBy``
    /// and ``Report/Finding/retainedBytes`` to the abandoned and leaked findings when the
    /// analysis kept a reference graph (``Analysis/retentionGraph``); returns the scan's cost.
    /// `members[i]` are the sites report finding `i` sums. Nothing changes without a graph.
    ///
    /// A block counts as library (paths avoid it) when its site has no frame in the user's
    /// own code (``OwnCode/isLibraryOnly(_:)``) or is unknown; a finding's nodes are the graph
    /// blocks of its sites, oldest first.
    func addRetention(to findings: inout [Report.Finding], members: [[SiteID]], analysis: Analysis,
                      trace: String) -> Report.RetentionScan? {
        guard let g = analysis.retentionGraph else { return nil }
        let record = g.record
        let n = g.blockCount
        let trigger: String, label: String?
        switch record.trigger {
        case .exit: (trigger, label) = ("exit", nil)
        case .mark(let l): (trigger, label) = ("mark", l)
        case .request: (trigger, label) = ("request", nil)
        }
        let scan = Report.RetentionScan(trigger: trigger, label: label, bytesRead: record.bytesRead,
                                        nanoseconds: record.nanoseconds, blocks: n, references: record.edges.count)
        // Nothing to explain: skip the graph analyses (seconds on millions of blocks).
        guard findings.contains(where: { $0.kind == .abandoned || $0.kind == .leaked }) else { return scan }

        // The sites of the graph's blocks, symbolicated once.
        var stackIDs: [UInt32] = []
        var seen = Set<UInt32>()
        for s in g.stacks where s != RetentionGraph.unknown && seen.insert(s).inserted { stackIDs.append(s) }
        let frames = symbolication.symbolicate(stackIDs, of: analysis, trace: trace).stacks.mapValues(\.frames)
        let graph = ReferenceGraph(record: record, sizes: g.sizes,
                                   stacks: g.stacks.map { $0 == RetentionGraph.unknown ? nil : $0 }, frames: frames)

        // Finding nodes: the blocks of each abandoned or leaked finding's sites, oldest first.
        var findingOfSite: [SiteID: Int] = [:]
        var judged: [Int] = []
        // A site in several findings (a scope's finding and the exit's leaked one) gives its
        // blocks to the first in report order; the others repeat that finding's answer.
        var repeats: [(finding: Int, of: Int)] = []
        for (i, f) in findings.enumerated() where f.kind == .abandoned || f.kind == .leaked {
            if let m = members[i].first, let k = findingOfSite[m] {
                repeats.append((i, k))
                continue
            }
            judged.append(i)
            for m in members[i] where findingOfSite[m] == nil { findingOfSite[m] = judged.count - 1 }
        }
        let ages = g.ages
        var nodes = [[Int]](repeating: [], count: judged.count)
        if !findingOfSite.isEmpty {
            for v in 0 ..< n where g.stacks[v] != RetentionGraph.unknown {
                if let k = findingOfSite[SiteID(stackID: g.stacks[v], typeID: g.types[v])] { nodes[k].append(v) }
            }
        }
        for k in nodes.indices { nodes[k].sort { ages[$0] < ages[$1] } }
        let leaked = Set(judged.indices.filter { findings[judged[$0]].kind == .leaked })
        let analysisOfGraph = RetentionAnalysis(graph: graph, findingNodes: nodes, age: ages, leaked: leaked)

        // Names of blocks.
        func blockStep(_ v: Int, edgeOffset: Int?) -> Report.RetentionStep {
            let stack = g.stacks[v], type = g.types[v]
            let typeName = stack == RetentionGraph.unknown ? nil : analysis.typeNames[type]
            let f = frames[stack] ?? []
            let frame = OwnCode.firstUserFrame(f).map { f[$0] }
            var step = Report.RetentionStep(kind: .block, name: typeName ?? "block",
                                            detail: frame.map(RetentionNames.site), typeName: typeName, frame: frame)
            if let offset = edgeOffset {
                step.offset = UInt64(offset)
                step.field = RetentionNames.field(at: UInt32(offset), in: record.fieldNames[type] ?? [])
            }
            return step
        }

        // Roots used by a path, named in one batch.
        var usedRoots = Set<Int>()
        for r in analysisOfGraph.findings {
            if case .root(let id, _)? = r.path?.first { usedRoots.insert(id) }
        }
        let rootSteps = nameRoots(Array(usedRoots).sorted(), record: record, analysis: analysis)

        for r in analysisOfGraph.findings {
            let i = judged[r.finding]
            if let path = r.path, !path.isEmpty {
                // Each step names where the reference comes from; the last block closes the
                // path. A long path keeps its ends only (a list of 200,000 blocks would be
                // 200,000 steps): the middle is one `elided` step.
                let keep = Report.RetentionStep.keptAtEachEnd
                var steps: [Report.RetentionStep] = []
                for k in path.indices {
                    if path.count > 2 * keep + 1, k == keep {
                        steps.append(Report.RetentionStep(kind: .elided, name: "\(path.count - 2 * keep) more blocks"))
                    }
                    if path.count > 2 * keep + 1, k >= keep, k < path.count - keep { continue }
                    let next: Int?
                    if k + 1 < path.count, case .reference(_, let o, _) = path[k + 1] { next = o } else { next = nil }
                    if case .root(let id, _) = path[k] {
                        steps.append(rootSteps[id] ?? Report.RetentionStep(kind: .root, name: "root"))
                    }
                    steps.append(blockStep(path[k].to, edgeOffset: next))
                }
                findings[i].retention = steps
            }
            if let cycle = r.cycle {
                let keep = Report.RetentionStep.keptAtEachEnd
                var steps: [Report.RetentionStep] = []
                for (k, step) in cycle.steps.enumerated() {
                    if cycle.steps.count > 2 * keep + 1, k == keep {
                        steps.append(Report.RetentionStep(kind: .elided, name: "\(cycle.steps.count - 2 * keep) more blocks"))
                    }
                    if cycle.steps.count > 2 * keep + 1, k >= keep, k < cycle.steps.count - keep { continue }
                    steps.append(blockStep(step.from, edgeOffset: step.offset))
                }
                findings[i].cycle = steps
            }
            if let h = r.heldBy {
                findings[i].heldBy = judged[h]
                findings[i].heldReason = r.heldReason == .sameCycle ? "sameCycle" : "dominated"
            }
            findings[i].retainedBytes = r.retainedBytes
        }
        for (i, k) in repeats {
            let source = findings[judged[k]]
            findings[i].retention = source.retention
            findings[i].cycle = source.cycle
            findings[i].heldBy = source.heldBy
            findings[i].heldReason = source.heldReason
            findings[i].retainedBytes = source.retainedBytes
        }

        return scan
    }

    /// Root steps for root edges `ids` of `record`: globals by their data symbol, stack slots
    /// by the thread and the function of the slot's frame, registers by name.
    func nameRoots(_ ids: [Int], record: ReferenceGraphRecord, analysis: Analysis) -> [Int: Report.RetentionStep] {
        let timeline = ModuleTimeline(events: analysis.modules)
        var out: [Int: Report.RetentionStep] = [:]
        var globals: [(id: Int, path: String, address: UInt64, module: String)] = []
        for id in ids {
            let e = record.rootEdges[id]
            guard Int(e.region) < record.roots.count else { continue }
            let region = record.roots[Int(e.region)]
            switch region.kind {
            case .global:
                let module = timeline.module(containing: e.slot, at: UInt64.max)
                let path = module?.path ?? region.modulePath ?? ""
                let vaddr = module.map { e.slot &- $0.loadBias } ?? e.slot
                globals.append((id, path, vaddr, OwnCode.baseName(path)))
                out[id] = Report.RetentionStep(kind: .root, name: "global at 0x" + String(vaddr, radix: 16),
                                               detail: OwnCode.baseName(path))
            case .stack:
                var function = "?"
                if e.pc != 0 {
                    let f = symbolication.frames(of: [e.pc], at: UInt64.max, timeline: timeline)
                    if let fn = f.last?.shortFunction ?? f.last?.function ?? f.last?.moduleAndOffset { function = fn }
                }
                out[id] = Report.RetentionStep(kind: .root, name: "thread \(region.tid)'s stack in \(function)")
            case .registers:
                out[id] = Report.RetentionStep(kind: .root,
                                               name: "thread \(region.tid)'s register \(RetentionNames.register(e.register ?? 255))")
            case .other:
                out[id] = Report.RetentionStep(kind: .root, name: "memory at 0x" + String(e.slot, radix: 16))
            }
        }
        let symbols = symbolizer.dataSymbols(globals.map { ($0.path, $0.address) })
        for (g, symbol) in zip(globals, symbols) {
            guard let symbol else { continue }
            // The declaring file when the debug info has it (`g_clients (registry.c)`), else the module.
            // Platform libraries' debug info (when present) names the wrong unit for their
            // globals (crtstuff.c for FoundationEssentials' _defaultCenter): their module is clearer.
            let platform = OwnCode.isRuntimeModule(g.path) || OwnCode.isSystemLibrary(g.path)
            let declared = platform ? nil : symbol.file.map { OwnCode.baseName($0) }
            out[g.id] = Report.RetentionStep(kind: .root, name: RetentionNames.global(symbol.name), detail: declared ?? g.module,
                                             offset: g.address &- symbol.start)
        }
        return out
    }
}

/// Naming rules for retention steps (pure; unit-tested).
public enum RetentionNames {
    /// The stored property at `offset` of `fields`: the one starting there, else the last one
    /// starting before it (an inline struct or tuple property containing it); nil if none.
    public static func field(at offset: UInt32, in fields: [ReferenceGraphRecord.Field]) -> String? {
        if let exact = fields.first(where: { $0.offset == offset }) { return exact.name }
        return fields.filter { $0.offset < offset }.max { $0.offset < $1.offset }?.name
    }

    /// A global's demangled name without what only adds length: the ` : Type` suffix of a
    /// Swift variable and the file discriminator of a private one,
    /// `FoundationEssentials.(_defaultCenter in _D7F0…) : FoundationEssentials.NotificationCenter`
    /// → `FoundationEssentials._defaultCenter`.
    public static func global(_ name: String) -> String {
        var s = name
        if let colon = s.range(of: " : ", options: .backwards) { s = String(s[..<colon.lowerBound]) }
        while let open = s.range(of: "("), let inWord = s.range(of: " in _", range: open.upperBound ..< s.endIndex),
              let close = s.range(of: ")", range: inWord.upperBound ..< s.endIndex),
              !s[open.upperBound ..< inWord.lowerBound].contains(" ") {
            s.replaceSubrange(open.lowerBound ..< close.upperBound, with: s[open.upperBound ..< inWord.lowerBound])
        }
        return s
    }

    /// x86-64 register names in the record's numbering: the 16 general-purpose registers,
    /// then xmm0-15 (two words each), then the upper halves of ymm0-15.
    public static func register(_ n: UInt8) -> String {
        let names = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
                     "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"]
        switch Int(n) {
        case 0..<16: return names[Int(n)]
        case 16..<48: return "xmm\((Int(n) - 16) / 2)"
        case 48..<80: return "ymm\((Int(n) - 48) / 2)"
        default: return "register \(n)"
        }
    }

    /// `function, file:line` of a frame (short function name, file's base name); a stripped
    /// binary's frame as `module+0xOFFSET`.
    public static func site(_ frame: Report.Frame) -> String {
        let function = frame.shortFunction ?? frame.function ?? frame.moduleAndOffset ?? "?"
        guard let file = frame.file else { return function }
        let base = file.split(separator: "/").last.map(String.init) ?? file
        return frame.line.map { "\(function), \(base):\($0)" } ?? "\(function), \(base)"
    }
}
