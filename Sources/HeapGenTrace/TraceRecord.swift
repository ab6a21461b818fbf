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
    /// A warning heapgen gave about the process while recording it (minor version 8): an
    /// allocator whose calls never reach heapgen. Kept so that a report or a gate read from
    /// the trace later says what the recording could not see.
    case recordingWarning(String)
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
    // Minor version 5: compact events (docs/trace-format.md, "Compact events").
    /// Any allocation: u8 function | slot << 4, then as ``mallocSlot``, then varint type.
    static let allocation: UInt8 = 0x04
    /// The old block of a realloc, by slot: u8 slot, svarint delta.
    static let reallocFreeSlot: UInt8 = 0x05
    /// The old block of a realloc, a recent allocation: varint k.
    static let reallocFreeRecent: UInt8 = 0x06
    /// reallocUndo by slot: u8 slot, svarint delta.
    static let reallocUndoSlot: UInt8 = 0x07
    /// `0x40 + slot`: malloc without a type: svarint delta, varint size, varint stack.
    static let mallocSlot: UInt8 = 0x40
    /// `0x48 + slot`: free by slot: svarint delta.
    static let freeSlot: UInt8 = 0x48
    /// `0x50 + k` (k < 16): free of the allocation k allocations back; no fields.
    static let freeRecentShort: UInt8 = 0x50
    /// free of a recent allocation: varint k.
    static let freeRecent: UInt8 = 0x60
    /// `0x61 + j` (j < 7): malloc without a type at the address the j-th most recent free
    /// released (0: the latest): varint size, varint stack.
    static let mallocReuse: UInt8 = 0x61
    /// `0x68 + j` (j < 8): malloc without a type at the address the j-th most recent free of
    /// a recent allocation of the same size class released: varint size, varint stack.
    static let mallocReuseClass: UInt8 = 0x68
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
    /// Minor version 8: a warning given while recording.
    static let recordingWarning: UInt8 = 0x1D
    static let process: UInt8 = 0x20
    static let end: UInt8 = 0x21
    static let `extension`: UInt8 = 0x7F
}

/// Constants of the version-1 format.
enum TraceFormat {
    static let magic: [UInt8] = [0x48, 0x47, 0x54, 0x52, 0x41, 0x43, 0x45, 0x00] // "HGTRACE\0"
    static let headerSize = 16
    static let majorVersion: UInt16 = 1
    static let minorVersion: UInt16 = 8
    static let chunkHeaderSize = 8
    static let maxChunkPayload = 16 * 1024 * 1024
    /// Writers flush once this many payload bytes are pending (before compression, so a
    /// killed collector loses at most this much, compressed or not).
    static let flushThreshold = 64 * 1024
    /// Address slots of compact events (minor version 5): delta bases.
    static let addressSlots = 8
    /// How far back (in allocations) a compact free may name an allocation.
    static let recentAllocations = 4096
    /// How far back (in frees) a compact malloc may name a freed address.
    static let recentFrees = 7
    /// How far back (in frees of its size class) a compact malloc may name a freed address.
    static let recentClassFrees = 8
    /// Size classes (of 16 bytes) with their own recent frees: sizes up to 1032 bytes.
    static let sizeClasses = 66

    /// The size class of an allocation of `size` bytes, or nil above 1032 bytes (glibc's
    /// chunk sizes: 8 bytes of header, 16-byte steps; allocators keep a LIFO list per class).
    @inline(__always)
    static func sizeClass(_ size: UInt64) -> Int? {
        size <= 1032 ? Int(truncatingIfNeeded: (size &+ 23) &>> 4) : nil
    }
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
