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
        let f = frames[i]
        if let s = f.shortFunction ?? f.function { return s }
        return StackSymbolication.unknownName(module: f.module, offset: moduleOffsets[i], address: f.address)
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
        struct Key: Hashable {
            var module: Module
            var address: UInt64
        }
        var requestIndex: [Key: Int] = [:]
        var requests: [SymbolizationRequest] = []
        /// Per stack, per raw frame: the request index (nil when no module held the address).
        var plans: [UInt32: [(request: Int?, address: UInt64, module: ModuleRecord?)]] = [:]
        var seen = Set<UInt32>()
        let ordered = stacks.filter { seen.insert($0.id).inserted }
            .sorted { $0.position != $1.position ? $0.position < $1.position : $0.id < $1.id }
        var modules = timeline.cursor()
        for stack in ordered {
            modules.advance(to: stack.position)
            var plan: [(request: Int?, address: UInt64, module: ModuleRecord?)] = []
            plan.reserveCapacity(stack.addresses.count)
            for address in stack.addresses {
                guard let record = modules.module(containing: address) else {
                    plan.append((nil, address, nil))
                    continue
                }
                let key = Key(module: Module(record), address: address)
                if let i = requestIndex[key] {
                    plan.append((i, address, record))
                } else {
                    requestIndex[key] = requests.count
                    plan.append((requests.count, address, record))
                    requests.append(SymbolizationRequest(module: key.module, address: address, isReturnAddress: true))
                }
            }
            plans[stack.id] = plan
        }

        let storedSymbols = requests.isEmpty ? nil : stored()
        let answers = requests.isEmpty ? [] : symbolizer.symbolize(requests, stored: storedSymbols)

        var notes: [String] = []
        if !requests.isEmpty && symbolizer.backend == .none && (storedSymbols?.isEmpty ?? true) {
            notes.append("No symbolizer was found (llvm-symbolizer or addr2line; HEAPGEN_SYMBOLIZER names one): frames show addresses only.")
        }
        var stale = Set<String>()
        for (request, answer) in zip(requests, answers) where answer.stale { stale.insert(request.module.path) }
        if !stale.isEmpty {
            let names = stale.sorted().prefix(3).joined(separator: ", ")
            let more = stale.count > 3 ? " and \(stale.count - 3) more" : ""
            notes.append("Changed or missing since the recording, so their frames may lack names: \(names)\(more).")
        }

        var out: [UInt32: SymbolicatedStack] = [:]
        var unmapped = 0
        for (id, plan) in plans {
            let addresses = plan.map { step -> SymbolicatedAddress in
                guard let r = step.request else {
                    unmapped += 1
                    return SymbolicatedAddress(address: step.address, module: nil,
                                               frames: [SymbolicatedFrame(module: nil, address: step.address)])
                }
                return SymbolicatedAddress(address: step.address, module: step.module,
                                           frames: answers[r].frames)
            }
            out[id] = SymbolicatedStack(addresses: addresses)
        }
        if unmapped > 0 {
            notes.append("\(unmapped) frame address\(unmapped == 1 ? " was" : "es were") in no recorded module (generated code?): shown without a module.")
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
