// The symbolizer's answer to one request: frames of the one frame type, and beside them what
// the lookup found out that a report's frame has no place for.

/// What ``Symbolizer`` answers for one ``SymbolizationRequest``.
///
/// The frames are ``SymbolicatedFrame``s, the frame type of stacks, reports, diffs and
/// exports. What only the lookup knows (whether the module on disk was stale, the module
/// offset the address was looked up at) travels beside them here, so that callers can judge
/// the answer (the collector stores no stale symbols; reports note stale modules) without a
/// second frame type carrying it.
public struct SymbolizationResult: Sendable, Equatable {
    /// Innermost inlined function first (`inlined == true`), the function that physically
    /// contains the address last; never empty: an address nothing resolved gives one frame
    /// without a function. Every frame has the request's recorded module path and runtime
    /// address (a return address is reported unchanged, not minus one).
    public var frames: [SymbolicatedFrame]
    /// `address - loadBias` of the request: the module's own virtual address (what `nm` and
    /// `objdump` show).
    public var moduleOffset: UInt64
    /// True when the module file on disk is missing or has a different build ID than the one
    /// recorded (rebuilt since). Names then come only from a matching separate debug file
    /// (`/usr/lib/debug/.build-id/…`), if one was found; otherwise they are nil.
    public var stale: Bool

    public init(frames: [SymbolicatedFrame], moduleOffset: UInt64, stale: Bool = false) {
        self.frames = frames
        self.moduleOffset = moduleOffset
        self.stale = stale
    }

    /// The answer for `request` when nothing resolved it: one frame with its module and
    /// address only.
    static func unresolved(_ request: SymbolizationRequest, stale: Bool) -> SymbolizationResult {
        SymbolizationResult(frames: [SymbolicatedFrame(module: request.module.path, address: request.address,
                                                                moduleOffset: request.moduleOffset)],
                            moduleOffset: request.moduleOffset, stale: stale)
    }
}
