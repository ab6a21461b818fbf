// Reads the symbols of the modules a recorded program maps while it runs, so that storing
// the trace's symbols after the program exits does not start by loading them.

import Dispatch
import HeapGenSymbolication
import HeapGenTrace

/// One look-up in each module a traced program maps, on a background queue, as the
/// collector reads the module's load: llvm-symbolizer then has the module's symbol table
/// and debug info loaded (libc6-dbg's zlib-compressed DWARF alone takes ~40 ms) before
/// ``TraceSymbolStore`` asks it for the trace's addresses with the same ``symbolizer``.
/// The work is the same; it is done while the program runs instead of after it.
final class ModuleReadAhead: @unchecked Sendable {
    let symbolizer: Symbolizer
    private let queue = DispatchQueue(label: "heapgen.symbols.read-ahead", qos: .utility)
    /// Modules asked for (recording thread only): one look-up per file, however many
    /// processes map it.
    private var asked = Set<ModuleKey>()

    /// `p_flags` of an executable segment.
    private static let executable: UInt32 = 1   // PF_X

    private struct ModuleKey: Hashable {
        var path: String
        var buildID: [UInt8]
    }

    init(symbolizer: Symbolizer) {
        self.symbolizer = symbolizer
    }

    /// Queues the look-up of `module`'s first executable address; returns at once.
    func moduleMapped(_ module: ModuleRecord) {
        guard let text = module.segments.first(where: { $0.flags & Self.executable != 0 && $0.memsz > 0 }),
              asked.insert(ModuleKey(path: module.path, buildID: module.buildID)).inserted else { return }
        let request = SymbolizationRequest(module: Module(path: module.path, buildID: module.buildID, loadBias: module.loadBias),
                                           address: module.loadBias &+ text.vaddr, isReturnAddress: false)
        let symbolizer = self.symbolizer
        queue.async { _ = symbolizer.symbolize([request]) }
    }

    /// Waits for the look-ups queued so far (they are the ones the store would start with).
    func finish() {
        queue.sync {}
    }
}
