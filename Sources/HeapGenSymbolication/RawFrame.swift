/// A frame as a symbolizer reports it, before demangling.
struct RawFrame: Sendable, Equatable {
    var function: String?
    var file: String?
    var line: Int?
    var column: Int?
}

/// What a backend made of one address.
enum LookupOutcome: Sendable, Equatable {
    /// The backend answered; innermost frame first. May be empty (no symbol at all).
    case frames([RawFrame])
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
}

extension RawFrame {
    /// Cleans up the placeholders symbolizers use for "unknown".
    init(rawFunction: String?, rawFile: String?, rawLine: Int?, rawColumn: Int?) {
        func known(_ s: String?) -> String? {
            guard let s, !s.isEmpty, s != "??", s != "<invalid>" else { return nil }
            return s
        }
        function = known(rawFunction)
        line = rawLine.flatMap { $0 > 0 ? $0 : nil }
        file = known(rawFile)
        // Without line tables llvm-symbolizer falls back to the symbol table's
        // FILE symbol: for stripped libraries that is whatever object came
        // first (crtstuff.c, SwiftOnoneSupport.o) — not the function's file.
        if line == nil, let name = file, name.hasSuffix("crtstuff.c") || name.hasSuffix(".o") {
            file = nil
        }
        column = rawColumn.flatMap { $0 > 0 ? $0 : nil }
    }
}
