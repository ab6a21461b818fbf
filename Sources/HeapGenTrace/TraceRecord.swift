/// One decoded record of a trace, as delivered by ``TraceReader/forEach(_:)``.
///
/// Addresses and frames are absolute (the reader undoes the delta encoding).
/// `extension` records are skipped and never delivered; `symbols` records (stored symbols)
/// are checked but not delivered: ``TraceReader/storedSymbols()`` reads them.
public enum TraceRecord: Sendable, Equatable {
    /// The first record: which process image the trace describes.
    case process(ProcessRecord)
    /// A successful allocation returning `address`, of `size` requested bytes.
    /// `stack` and `type` are ids defined earlier (0 = none).
    case allocation(function: AllocationFunction, address: UInt64, size: UInt64, stack: UInt32, type: UInt32)
    /// A block released. With `.realloc` the block may come back via `reallocUndo`.
    case free(function: FreeFunction, address: UInt64)
    /// The realloc that freed `address` failed: the old block is live again.
    case reallocUndo(address: UInt64)
    /// Defines stack `id` (innermost frame first).
    case stack(id: UInt32, frames: [UInt64])
    /// Stack `id` (defined before) was cut at the recording's frame limit: its outermost
    /// callers are missing. Its frame count is the limit.
    case stackTruncated(id: UInt32)
    /// Defines type `id`: Swift type metadata address and demangled name.
    case type(id: UInt32, metadata: UInt64, name: String)
    case moduleLoad(ModuleRecord)
    case moduleUnload(loadBias: UInt64)
    /// A generation mark; `timeNanoseconds` is CLOCK_MONOTONIC.
    case mark(label: String, timeNanoseconds: UInt64, origin: MarkOrigin)
    /// The traced process started thread `tid`.
    case threadStart(tid: UInt32)
    /// The shim gave up `count` events at this point.
    case lost(count: UInt64)
    /// Blocks a conservative reachability scan (`heapgen record --leaks`, at the
    /// program's exit) found live but referenced by nothing: their addresses, ascending.
    /// A trace may hold several such records (a long list is split); they add up.
    case unreachable([UInt64])
    /// Of those unreachable blocks, the indirectly leaked ones (reached only from another
    /// unreachable block), each with the directly leaked block that owns it (valgrind's
    /// rule; see docs/trace-format.md). Unreachable blocks not listed are direct leaks.
    case indirectLeaks([IndirectLeak])
    /// The text the program's `__lsan_default_suppressions()` returned at exit (LeakSanitizer's
    /// hook): suppression lines a gate honours with the user's.
    case programSuppressions(String)
    /// The reference graph of the live heap at a scan (minor version 4; `--leaks`,
    /// `--retention`, `--retention-at`): blocks, edges between them, roots.
    case referenceGraph(ReferenceGraphRecord)
    /// The last record.
    case end(EndRecord)
}

/// Record tags (docs/trace-format.md, "Records").
enum RecordTag {
    static let alloc: UInt8 = 0x01
    static let free: UInt8 = 0x02
    static let reallocUndo: UInt8 = 0x03
    static let stack: UInt8 = 0x10
    static let type: UInt8 = 0x11
    static let moduleLoad: UInt8 = 0x12
    static let moduleUnload: UInt8 = 0x13
    static let mark: UInt8 = 0x14
    static let threadStart: UInt8 = 0x15
    static let lost: UInt8 = 0x16
    static let unreachable: UInt8 = 0x17
    static let stackTruncated: UInt8 = 0x18
    /// Minor version 3: stored symbols (``SymbolsRecord``); not delivered by ``TraceReader/forEach(_:)``.
    static let symbols: UInt8 = 0x19
    static let indirectLeaks: UInt8 = 0x1A
    static let programSuppressions: UInt8 = 0x1B
    /// Minor version 4: the parts of one ``ReferenceGraphRecord``.
    static let referenceGraph: UInt8 = 0x1C
    static let process: UInt8 = 0x20
    static let end: UInt8 = 0x21
    static let `extension`: UInt8 = 0x7F
}

/// Constants of the version-1 format.
enum TraceFormat {
    static let magic: [UInt8] = [0x48, 0x47, 0x54, 0x52, 0x41, 0x43, 0x45, 0x00] // "HGTRACE\0"
    static let headerSize = 16
    static let majorVersion: UInt16 = 1
    static let minorVersion: UInt16 = 5
    static let chunkHeaderSize = 8
    static let maxChunkPayload = 16 * 1024 * 1024
    /// Writers flush once this many payload bytes are pending.
    static let flushThreshold = 64 * 1024
    static let maxStringBytes = 64 * 1024
    static let maxFrames = 1024
    static let maxSegments = 64
    static let maxArguments = 65_536
    /// Addresses in one `unreachable` record (writers split longer lists).
    static let maxUnreachable = 65_536
}

/// An indirectly leaked block of an `indirectLeaks` record: unreachable, but reached from
/// the unreachable block `owner` (a direct leak).
public struct IndirectLeak: Sendable, Equatable, Hashable {
    /// The indirectly leaked block's address.
    public var address: UInt64
    /// The address of the directly leaked block that owns it.
    public var owner: UInt64

    /// Creates an entry.
    public init(address: UInt64, owner: UInt64) {
        self.address = address
        self.owner = owner
    }
}
