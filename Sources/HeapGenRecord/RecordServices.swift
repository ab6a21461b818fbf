// What the collector needs from the modules above it (analysis, symbolication, reports),
// as protocols it defines and the CLI fills in (HeapGenRecordServices): the collector
// depends only on the trace format, its C half and the control protocol.

import HeapGenControlProtocol
import HeapGenTrace

/// Everything the recorder is given from above.
package protocol RecordServices: AnyObject {
    /// Answers the control ops that need analysis, symbolication or report types.
    var controlResponder: any ControlResponder { get }
    /// Stores in each finished trace what its stacks symbolicate to (``RecordOptions/storeSymbols``).
    func storeSymbols(in traces: [TraceSymbolInputs]) -> SymbolStoreOutcome
    /// A module a traced program mapped, told as the collector reads it (with
    /// ``RecordOptions/storeSymbols`` only): the symbol store may read the module's symbols
    /// while the program runs, ahead of ``storeSymbols(in:)``. Must return at once.
    func moduleMapped(_ module: ModuleRecord)
}

extension RecordServices {
    /// Nothing read ahead: ``storeSymbols(in:)`` reads everything at the end.
    package func moduleMapped(_ module: ModuleRecord) {}
}

/// The analysis a growth session feeds (`begin` … marks … `growth`): heap events and
/// marks in ring order, from the `begin` request on.
package protocol GrowthAnalysis: AnyObject {
    /// The options it was made with (a `growth` request may only repeat them).
    var options: GrowthOptions { get }
    func consume(_ record: TraceRecord)
}

/// What a control answer may read of the segment it answers, at the request's position.
package struct ControlSegmentView {
    /// The segment's trace file.
    package var tracePath: String
    /// Swift type names by type id.
    package var typeNames: [UInt32: String]
    /// Module loads and unloads so far, in ring order (`recordIndex` is the ring position).
    package var moduleEvents: [ModuleEvent]
    /// The frame addresses of a stack id, read from the segment's arena now (innermost first).
    package var readStack: (UInt32) -> [UInt64]
}

/// What the collector knows of a live block for the `object` answer.
package struct ControlObjectFacts {
    /// The address asked about.
    package var address: UInt64
    /// Nil when no live block starts at `address`.
    package var block: Block?

    package struct Block {
        package var allocation: UInt64
        package var typeName: String?
        package var size: UInt64
        package var generation: Int
        package var generationLabel: String?
        package var previousMark: String?
        package var stack: UInt32
    }
}

/// What the collector captured for the `retention` answer: the reference graph of the live
/// heap (threads stopped, as a `"judge":false` scan takes it) and, per graph block, its stack
/// and type id.
package struct ControlRetentionFacts {
    /// The address asked about (any address inside a live block).
    package var address: UInt64
    /// The graph, its blocks sorted by address, Swift stored properties in `fieldNames`.
    package var graph: ReferenceGraphRecord
    /// Per block of `graph.blocks` (same order).
    package var blocks: [Block]
    /// The asking thread (the request's `tid`; 0: not given). Its stack and registers are
    /// roots of last resort: it usually holds stale copies of the object it just let go.
    package var requesterTid: UInt32 = 0

    package struct Block {
        package var size: UInt64
        package var stack: UInt32
        package var type: UInt32
    }
}

/// A growth session as the collector ends it.
package struct ControlGrowthSession {
    package var analysis: any GrowthAnalysis
    package var label: String?
    package var marks: Int
}

/// Answers the control ops that need what lies above the collector (see docs/control-protocol.md).
package protocol ControlResponder: AnyObject {
    /// A fresh growth analysis with `options` (`begin`).
    func makeGrowthAnalysis(options: GrowthOptions) -> any GrowthAnalysis
    /// The complete `object` answer text.
    func objectAnswer(_ facts: ControlObjectFacts, segment: ControlSegmentView) -> Result<String, ControlProtocolError>
    /// The complete `retention` answer text: the shortest path from a root to the block
    /// containing `facts.address`, each step named, and its reference cycle if any.
    func retentionAnswer(_ facts: ControlRetentionFacts, segment: ControlSegmentView) -> Result<String, ControlProtocolError>
    /// The complete `growth` answer text for a session (already ended unless `keep`).
    func growthAnswer(_ session: ControlGrowthSession, segment: ControlSegmentView) -> Result<String, ControlProtocolError>
}

/// One finished trace's input to ``RecordServices/storeSymbols(in:)``.
package struct TraceSymbolInputs {
    package var path: String
    /// Its distinct frame addresses.
    package var frameAddresses: Set<UInt64>
    /// Its module loads, in order.
    package var modules: [ModuleRecord]
}

/// What storing symbols did, for warnings and `--stats`.
package struct SymbolStoreOutcome {
    /// Addresses stored, over all traces.
    package var addresses = 0
    /// New file sizes, by path.
    package var sizes: [String: UInt64] = [:]
    /// Traces that could not get their symbols, and why.
    package var failures: [(path: String, reason: String)] = []
    package var nanoseconds: UInt64 = 0

    package init() {}
}
