// Reads the symbols of the modules a recorded program maps while it runs, so that storing
// the trace's symbols after the program exits does not start by loading them.

import Dispatch
import HeapGenSymbolication
import HeapGenTrace
#if canImport(Glibc)
import Glibc
#endif

/// One look-up in each module a traced program maps, on a background queue, as the
/// collector reads the module's load: llvm-symbolizer then has the module's symbol table
/// and debug info loaded (libc6-dbg's zlib-compressed DWARF alone takes ~40 ms) before
/// ``TraceSymbolStore`` asks it for the trace's addresses with the same ``symbolizer``.
/// The work is the same; it is done while the program runs instead of after it.
///
/// llvm-symbolizer keeps what it read (24 MB for libc with libc6-dbg's debug info and a
/// small program; 65-70 MB for a Swift test binary's runtime libraries), and a program
/// may run for hours, where a few tens of milliseconds at its end do not matter. So only
/// modules of at most ``maxModuleBytes`` on disk are read (a 33 MB test binary with its
/// debug info was 20 MB more), and the process is let go once no module was mapped for
/// ``keepWarmSeconds``: the end then reads them again, as before.
final class ModuleReadAhead: @unchecked Sendable {
    static let maxModuleBytes: Int64 = 4 << 20
    static let keepWarmSeconds = 20

    let symbolizer: Symbolizer
    private let queue = DispatchQueue(label: "heapgen.symbols.read-ahead", qos: .utility)
    /// Modules asked for (recording thread only): one look-up per file, however many
    /// processes map it.
    private var asked = Set<ModuleKey>()
    /// Look-ups done, and whether the store has begun (on `queue` only).
    private var reads = 0
    private var finished = false

    /// `p_flags` of an executable segment.
    private static let executable: UInt32 = 1   // PF_X

    private struct ModuleKey: Hashable {
        var path: String
        var buildID: [UInt8]
    }

    init(symbolizer: Symbolizer) {
        self.symbolizer = symbolizer
    }

    /// Queues the look-up of `module`'s first executable address; returns at once (the file
    /// is looked at on the queue, not on the recording thread).
    func moduleMapped(_ module: ModuleRecord) {
        guard let text = module.segments.first(where: { $0.flags & Self.executable != 0 && $0.memsz > 0 }),
              asked.insert(ModuleKey(path: module.path, buildID: module.buildID)).inserted else { return }
        let request = SymbolizationRequest(module: Module(path: module.path, buildID: module.buildID, loadBias: module.loadBias),
                                           address: module.loadBias &+ text.vaddr, isReturnAddress: false)
        queue.async { [self] in
            guard Self.fileSize(module.path).map({ $0 <= Self.maxModuleBytes }) ?? false else { return }
            _ = symbolizer.symbolize([request])
            reads += 1
            let read = reads
            queue.asyncAfter(deadline: .now() + .seconds(Self.keepWarmSeconds)) { [self] in
                if reads == read && !finished { symbolizer.releaseProcess() }
            }
        }
    }

    /// Bytes of the file at `path`, if it is a regular file.
    private static func fileSize(_ path: String) -> Int64? {
        var st = stat()
        guard stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int64(st.st_size)
    }

    /// Waits for the look-ups queued so far (they are the ones the store would start with).
    func finish() {
        queue.sync { finished = true }
    }
}
