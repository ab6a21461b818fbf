// What a symbolizer backend (llvm-symbolizer, addr2line) is asked and answers, and how its
// placeholders for "unknown" are read.

/// What a backend made of one address.
enum LookupOutcome: Sendable, Equatable {
    /// The backend answered; innermost frame first. May be empty (no symbol at all). The
    /// frames are as the backend printed them (``SymbolicatedFrame/init(backendFunction:file:line:column:)``):
    /// names not yet demangled, no module and no address, which ``Symbolizer`` fills in per
    /// request (one file's answer serves every module path and load bias it is mapped at).
    case frames([SymbolicatedFrame])
    /// No answer (backend missing, died, timed out, garbled): not cached, tried again next time.
    case failed
}

/// One address of one file, in the file's virtual address space.
struct BackendQuery: Sendable, Hashable {
    var path: String
    var address: UInt64
}

/// Something that turns (file, virtual address) pairs into frames.
protocol SymbolizerBackend: AnyObject {
    func lookup(_ queries: [BackendQuery]) -> [LookupOutcome]
    /// Ends a long-lived child and what it holds; the next look-up starts another.
    func releaseChild()
}

extension SymbolizerBackend {
    /// No long-lived child.
    func releaseChild() {}
}

extension SymbolicatedFrame {
    /// A frame as a backend reports it: the placeholders symbolizers use for "unknown"
    /// (`??`, `<invalid>`, line 0) become nil; `function` is kept as printed (demangling is
    /// the ``Symbolizer``'s), and `module` and `address` are left for the ``Symbolizer`` to set.
    init(backendFunction rawFunction: String?, file rawFile: String?, line rawLine: Int?, column rawColumn: Int?) {
        func known(_ s: String?) -> String? {
            guard let s, !s.isEmpty, s != "??", s != "<invalid>" else { return nil }
            return s
        }
        let line = rawLine.flatMap { $0 > 0 ? $0 : nil }
        var file = known(rawFile)
        // Without line tables llvm-symbolizer falls back to the symbol table's
        // FILE symbol: for stripped libraries that is whatever object came
        // first (crtstuff.c, SwiftOnoneSupport.o) — not the function's file.
        if line == nil, let name = file, name.hasSuffix("crtstuff.c") || name.hasSuffix(".o") {
            file = nil
        }
        self.init(function: known(rawFunction), file: file, line: line,
                  column: rawColumn.flatMap { $0 > 0 ? $0 : nil }, module: nil, address: 0)
    }
}
