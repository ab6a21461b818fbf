// A module as the symbolizer knows it: which file, which build, where it was mapped.

import HeapGenTrace

/// A module (executable or shared object) as the symbolizer knows it: the identity of a
/// trace's ``ModuleRecord`` without its segments (``ModuleTimeline`` uses those to find the
/// module of an address; `Module(record)` makes this from it).
///
/// `loadBias` is what `dl_iterate_phdr` reports as `dlpi_addr`: a runtime address is the
/// file's virtual address plus `loadBias` (0 for a non-PIE executable).
public struct Module: Sendable, Hashable {
    /// Path of the file that was mapped.
    public var path: String
    /// GNU build ID (the `NT_GNU_BUILD_ID` note's descriptor bytes); empty when the module had none.
    public var buildID: [UInt8]
    /// Runtime address minus file virtual address.
    public var loadBias: UInt64

    /// Creates a module identity.
    public init(path: String, buildID: [UInt8], loadBias: UInt64) {
        self.path = path
        self.buildID = buildID
        self.loadBias = loadBias
    }
}

extension Module {
    /// The build ID as lowercase hex, e.g. `21e5d967…`.
    public var buildIDHex: String { BuildID.hex(buildID) }
}

extension Module {
    /// The symbolizer's view of a recorded module: which file, which build, where.
    public init(_ record: ModuleRecord) {
        self.init(path: record.path, buildID: record.buildID, loadBias: record.loadBias)
    }
}
