// The `retention` answer ("why is this object still alive?", asked by expectDeallocation):
// the shortest path from a root to one block of a graph the collector just captured, and its
// reference cycle. See docs/control-protocol.md.

import HeapGenAnalysis
import HeapGenControlProtocol
import HeapGenRecord
import HeapGenReport
import HeapGenSymbolication
import HeapGenTrace

extension InTestAnswers {
    func retentionAnswer(_ facts: ControlRetentionFacts, segment: ControlSegmentView) -> Result<String, ControlProtocolError> {
        let record = facts.graph
        var answer = ControlRetentionAnswer(address: Report.Frame.formatAddress(facts.address))
        guard let target = Self.block(containing: facts.address, blocks: record.blocks, sizes: facts.blocks.map(\.size))
        else { return Self.encode(answer) }
        answer.live = true

        // Every distinct allocation stack symbolicated once, in one batch: a block is "library"
        // (paths avoid it) when no frame of its stack is the program's own code, as reports
        // decide. This costs one symbolizer pass over the live heap's stacks (warm: cached).
        let timeline = ModuleTimeline(events: segment.moduleEvents)
        var inputs: [StackSymbolication.Input] = []
        var seen = Set<UInt32>()
        for b in facts.blocks where b.stack != 0 && seen.insert(b.stack).inserted {
            inputs.append((id: b.stack, addresses: segment.readStack(b.stack), position: .max))
        }
        let symbolication = StackSymbolication(symbolizer: symbolizer)
        let frames = symbolication.symbolicate(inputs, timeline: timeline).stacks.mapValues(\.frames)
        let sizes = facts.blocks.map(\.size)
        let stacks = facts.blocks.map { $0.stack == 0 ? nil : $0.stack }
        // First without the asking thread's own stack and registers: the test that just let the
        // object go still has stale copies of its address there, and a one-step path from them
        // would hide the real holder. Only when nothing else reaches it is that thread named.
        let askingThread: (ReferenceGraphRecord.RootEdge) -> Bool = { e in
            guard facts.requesterTid != 0, Int(e.region) < record.roots.count else { return false }
            let region = record.roots[Int(e.region)]
            return region.tid == facts.requesterTid && (region.kind == .stack || region.kind == .registers)
        }
        var graph = ReferenceGraph(record: record, sizes: sizes, stacks: stacks, frames: frames,
                                   keepRoot: { !askingThread($0) })
        var shortest = RetentionPaths(graph: graph).path(to: target)
        if shortest == nil && record.rootEdges.contains(where: askingThread) {
            graph = ReferenceGraph(record: record, sizes: sizes, stacks: stacks, frames: frames)
            shortest = RetentionPaths(graph: graph).path(to: target)
            if shortest != nil { answer.askingThreadOnly = true }
        }
        let naming = RetentionStepNaming(record: record, blocks: facts.blocks, frames: frames,
                                         typeNames: segment.typeNames, timeline: timeline,
                                         symbolication: symbolication)
        if let path = shortest {
            answer.reachable = true
            answer.path = naming.path(path)
        }
        let components = StronglyConnectedComponents(graph: graph)
        if components.isOnCycle(target) {
            answer.cycle = naming.cycle(components.shortestCycle(through: target, in: graph))
        }
        return Self.encode(answer)
    }

    /// Index of the block of `blocks` (sorted addresses) whose bytes contain `address`.
    static func block(containing address: UInt64, blocks: [UInt64], sizes: [UInt64]) -> Int? {
        var lo = 0, hi = blocks.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if blocks[mid] <= address { lo = mid + 1 } else { hi = mid }
        }
        let i = lo - 1
        guard i >= 0, address < blocks[i] &+ max(sizes[i], 1) else { return nil }
        return i
    }
}

/// How each step of a retention path is named, in one place so it can follow the report's
/// naming: it uses HeapGenReport's ``RetentionNames`` (stored property at an offset, Swift
/// global names, registers, allocation sites) and the symbolizer's data symbols, as
/// `ReportBuilder.nameRoots` does for reports (that one needs a whole `Analysis`).
struct RetentionStepNaming {
    let record: ReferenceGraphRecord
    let blocks: [ControlRetentionFacts.Block]
    let frames: [UInt32: [SymbolicatedFrame]]
    let typeNames: [UInt32: String]
    let timeline: ModuleTimeline
    let symbolication: StackSymbolication

    /// Root first, then each block with the field that holds the next one. A long path keeps
    /// its ends only, as reports do (`Report.RetentionStep.keptAtEachEnd` blocks each side and
    /// one `elided` step between): a list of 200,000 nodes must not become the answer.
    func path(_ steps: [RetentionPaths.Step]) -> [ControlRetentionStep] {
        var out: [ControlRetentionStep] = []
        let keep = Report.RetentionStep.keptAtEachEnd
        let long = steps.count > 2 * keep + 1
        for k in steps.indices {
            if long, k == keep { out.append(Self.elided(steps.count - 2 * keep)) }
            if long, k >= keep, k < steps.count - keep { continue }
            if case .root(let id, _) = steps[k] { out.append(root(id)) }
            var next: Int?
            if k + 1 < steps.count, case .reference(_, let offset, _) = steps[k + 1] { next = offset }
            out.append(block(steps[k].to, offset: next))
        }
        return out
    }

    /// The cycle's blocks, each with the field that holds the next (the last holds the first);
    /// a long one keeps its ends, as a path does.
    func cycle(_ steps: [StronglyConnectedComponents.CycleStep]) -> [ControlRetentionStep]? {
        guard !steps.isEmpty else { return nil }
        var out: [ControlRetentionStep] = []
        let keep = Report.RetentionStep.keptAtEachEnd
        let long = steps.count > 2 * keep + 1
        for (k, step) in steps.enumerated() {
            if long, k == keep { out.append(Self.elided(steps.count - 2 * keep)) }
            if long, k >= keep, k < steps.count - keep { continue }
            out.append(block(step.from, offset: step.offset))
        }
        return out
    }

    static func elided(_ n: Int) -> ControlRetentionStep {
        ControlRetentionStep(kind: "elided", name: "… \(n) more blocks …")
    }

    /// A block: its Swift type name, else `block from <first user function>`; `field` the stored
    /// property at `offset` (from the class's field records), else `+0x…`.
    func block(_ v: Int, offset: Int?) -> ControlRetentionStep {
        let b = blocks[v]
        let f = frames[b.stack] ?? []
        let frame = OwnCode.firstUserFrame(f).map { f[$0] }
        let typeName = b.type == 0 ? nil : typeNames[b.type]
        let name = typeName ?? frame.map { "block from \($0.shortFunction ?? $0.function ?? "?")" } ?? "block"
        var field: String?
        if let offset {
            field = RetentionNames.field(at: UInt32(offset), in: record.fieldNames[b.type] ?? [])
                ?? "+0x" + String(offset, radix: 16)
        }
        return ControlRetentionStep(kind: "block", name: name, field: field, detail: frame.map(RetentionNames.site))
    }

    /// A root edge: a global by its data symbol (else module+offset), a stack slot by its thread
    /// and the function of the slot's frame, a register by its name.
    func root(_ id: Int) -> ControlRetentionStep {
        let e = record.rootEdges[id]
        guard Int(e.region) < record.roots.count else { return ControlRetentionStep(kind: "root", name: "root") }
        let region = record.roots[Int(e.region)]
        switch region.kind {
        case .global:
            let module = timeline.module(containing: e.slot, at: .max)
            let path = module?.path ?? region.modulePath ?? ""
            let vaddr = module.map { e.slot &- $0.loadBias } ?? e.slot
            let base = OwnCode.baseName(path)
            if !path.isEmpty, let symbol = symbolication.symbolizer.dataSymbols([(path, vaddr)]).first ?? nil {
                // Swift statics demangle as `static Module.Type.name : Type`: the word stays.
                return ControlRetentionStep(kind: "root", name: RetentionNames.global(symbol.name), detail: base)
            }
            return ControlRetentionStep(kind: "root", name: "global \(base)+0x" + String(vaddr, radix: 16), detail: base)
        case .stack:
            // The function of the slot's frame, when the scan found a code address for it.
            var function: String?
            if e.pc != 0 {
                let f = symbolication.frames(of: [e.pc], at: .max, timeline: timeline)
                function = f.last?.shortFunction ?? f.last?.function
            }
            return ControlRetentionStep(kind: "root", name: "thread \(region.tid)'s stack" + (function.map { " in \($0)" } ?? ""))
        case .registers:
            return ControlRetentionStep(kind: "root",
                                        name: "thread \(region.tid)'s register \(RetentionNames.register(e.register ?? 255))")
        case .other:
            return ControlRetentionStep(kind: "root", name: "memory at 0x" + String(e.slot, radix: 16))
        }
    }
}
