// Stacks of raw return addresses to symbolicated frames, in one batch: the one path from an
// address to its module and its symbols, for reports, diffs, exports and the collector.

import HeapGenAnalysis
import HeapGenTrace

/// One recorded return address and what it symbolicated to.
public struct SymbolicatedAddress: Sendable, Equatable {
    /// The recorded return address.
    public var address: UInt64
    /// The module that held the address when the stack was recorded; `nil` if none did.
    public var module: ModuleRecord?
    /// Innermost inlined function first, the function containing the address last; never empty.
    public var frames: [SymbolicatedFrame]

    /// `address - loadBias` of ``module``: stable across runs of one build (ASLR moves only the bias).
    public var moduleOffset: UInt64? { module.map { address &- $0.loadBias } }

    /// The names of ``frames`` for people, as ``SymbolicatedStack/name(ofFrame:)`` gives them.
    public var frameNames: [String] {
        frames.map { Self.name(of: $0, moduleOffset: moduleOffset) }
    }

    /// A frame's short function name, else `module+0xOFFSET` (the module's file name), else
    /// the address.
    static func name(of frame: SymbolicatedFrame, moduleOffset: UInt64?) -> String {
        frame.shortFunction ?? frame.function
            ?? StackSymbolication.unknownName(module: frame.module, offset: moduleOffset, address: frame.address)
    }
}

/// A symbolicated stack: its addresses, innermost first.
public struct SymbolicatedStack: Sendable, Equatable {
    /// The recorded return addresses and what each symbolicated to.
    public var addresses: [SymbolicatedAddress]
    /// Every frame, innermost first, inlined frames included (as in a report).
    public var frames: [SymbolicatedFrame]
    /// Per frame of ``frames``: the module offset of its address, `nil` outside any module.
    public var moduleOffsets: [UInt64?]
    /// Index in ``frames`` of the first frame in the program's own code (``OwnCode/firstUserFrame(_:)``).
    public var userFrame: Int?

    /// The stack of `addresses`, its frames flattened and its first own-code frame found.
    public init(addresses: [SymbolicatedAddress]) {
        self.addresses = addresses
        frames = addresses.flatMap(\.frames)
        moduleOffsets = addresses.flatMap { a in a.frames.map { _ in a.moduleOffset } }
        userFrame = OwnCode.firstUserFrame(frames)
    }

    /// A frame's name for people: its short function name, else `module+0xOFFSET`
    /// (the module's file name), else the address.
    public func name(ofFrame i: Int) -> String {
        SymbolicatedAddress.name(of: frames[i], moduleOffset: moduleOffsets[i])
    }
}

/// Symbolicates stacks in one batch, each distinct (module, address) once: the one path from a
/// recorded return address to its module (``ModuleTimeline``, at the stack's position) and to
/// its frames (the trace's ``StoredSymbols`` first, then the ``Symbolizer``). Every frame
/// address is looked up as a return address, frame 0 too: the shim records the return address
/// into the caller of `malloc`. Inlined frames are kept.
///
/// ```swift
/// let symbolication = StackSymbolication()
/// let (stacks, notes) = symbolication.symbolicate(
///     [(id: 7, addresses: frames, position: 1_234)], timeline: ModuleTimeline(events: analysis.modules))
/// ```
public struct StackSymbolication: Sendable {
    /// One stack to symbolicate: its id (the key of the answer), its return addresses
    /// (innermost first) and the trace position its modules are looked up at.
    public typealias Input = (id: UInt32, addresses: [UInt64], position: UInt64)

    /// The symbolizer for what the trace did not store.
    public let symbolizer: Symbolizer

    /// Creates a batch symbolicator over `symbolizer` (llvm-symbolizer from the toolchain if not given).
    public init(symbolizer: Symbolizer = Symbolizer()) {
        self.symbolizer = symbolizer
    }

    /// `libfoo.so+0x1a2b`, or the address alone outside any module.
    public static func unknownName(module: String?, offset: UInt64?, address: UInt64) -> String {
        guard let module, let offset else { return "0x" + String(address, radix: 16) }
        let base = module.split(separator: "/").last.map(String.init) ?? module
        return "\(base.isEmpty ? module : base)+0x\(String(offset, radix: 16))"
    }

    /// The symbolicated stacks of `stacks` (a repeated id counts once, its first entry), and
    /// notes on what could not be symbolicated.
    ///
    /// Modules are replayed once, in position order. `stored` (the symbols a trace stored when
    /// it was recorded) is read only when there is something to look up; `nil` or empty
    /// symbolicates from the module files alone.
    public func symbolicate(_ stacks: [Input], timeline: ModuleTimeline,
                            stored: @autoclosure () -> StoredSymbols? = nil)
        -> (stacks: [UInt32: SymbolicatedStack], notes: [String]) {
        var seen = Set<UInt32>()
        let ordered = stacks.filter { seen.insert($0.id).inserted }
            .sorted { $0.position != $1.position ? $0.position < $1.position : $0.id < $1.id }
        var table = AddressTable(timeline: timeline)
        let entries = ordered.map { table.add($0.addresses, at: $0.position) }
        let (addresses, notes) = table.symbolicate(with: self, stored: stored())
        var out: [UInt32: SymbolicatedStack] = [:]
        for (stack, indices) in zip(ordered, entries) {
            out[stack.id] = SymbolicatedStack(addresses: indices.map { addresses[Int($0)] })
        }
        return (out, notes)
    }

    /// The frames of one stack whose modules are looked up at `position` of `timeline`, for a
    /// caller with one stack and no trace yet (the collector answering a running program:
    /// `ModuleTimeline(loaded:)` or its module events, the stack read from the segment now).
    public func frames(of addresses: [UInt64], at position: UInt64, timeline: ModuleTimeline)
        -> [SymbolicatedFrame] {
        symbolicate([(id: 0, addresses: addresses, position: position)], timeline: timeline).stacks[0]?.frames ?? []
    }

    /// The symbolicated stacks of `stackIDs` of the trace `context` replayed (stack id 0, no
    /// stack, gives an empty stack), and notes on what could not be symbolicated.
    public func symbolicate(_ stackIDs: [UInt32], in context: TraceContext)
        -> (stacks: [UInt32: SymbolicatedStack], notes: [String]) {
        symbolicate(stackIDs.map { (id: $0, addresses: context.stacks[$0] ?? [], position: context.stackPositions[$0] ?? UInt64.max) },
                    timeline: ModuleTimeline(events: context.analysis.modules),
                    stored: StoredSymbols(tracePath: context.trace))
    }

    /// The symbolicated stacks of `stackIDs` of `analysis`, made from the trace at `trace`
    /// (whose stored symbols come first), and notes on what could not be symbolicated.
    public func symbolicate(_ stackIDs: [UInt32], of analysis: Analysis, trace: String)
        -> (stacks: [UInt32: SymbolicatedStack], notes: [String]) {
        symbolicate(stackIDs.map { (id: $0, addresses: analysis.frames(ofStack: $0) ?? [], position: analysis.recordIndex(ofStack: $0) ?? UInt64.max) },
                    timeline: ModuleTimeline(events: analysis.modules),
                    stored: StoredSymbols(tracePath: trace))
    }
}
