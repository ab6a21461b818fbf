// A captured reference graph (the trace's `referenceGraph` record) as the graph the retention
// analyses walk: which blocks and roots are library, decided once for reports and in-test answers.

import HeapGenAnalysis
import HeapGenTrace

extension ReferenceGraph {
    /// The graph of `record`: `sizes[i]` and the symbolicated allocation stack of block `i`
    /// (`stacks[i]`, `nil` when unknown) give its node. A block is library (paths avoid it)
    /// when no frame of its stack is the program's own code, or its stack is unknown; a root
    /// is library when it is a platform or system library's global (``OwnCode/isLibraryRoot(_:)``).
    /// Root ids are indices in `record.rootEdges`; `keepRoot` leaves root edges out.
    public init(record: ReferenceGraphRecord, sizes: [UInt64], stacks: [UInt32?],
                frames: [UInt32: [SymbolicatedFrame]],
                keepRoot: (ReferenceGraphRecord.RootEdge) -> Bool = { _ in true }) {
        var libraryStack: [UInt32: Bool] = [:]
        for (id, f) in frames { libraryStack[id] = OwnCode.isLibraryOnly(f) }
        var roots: [RootEdge] = []
        for (i, e) in record.rootEdges.enumerated() where keepRoot(e) {
            let region = Int(e.region) < record.roots.count ? record.roots[Int(e.region)] : nil
            roots.append(RootEdge(rootID: i, to: e.to, isLibrary: region.map(OwnCode.isLibraryRoot) ?? false))
        }
        self.init(sizes: sizes,
                  isLibrary: stacks.map { $0.flatMap { libraryStack[$0] } ?? true },
                  edges: record.edges.map { Edge(from: $0.from, to: $0.to, offset: $0.offset) },
                  roots: roots)
    }
}
