// Stacks of a trace to symbolicated frames, in one batch.

import HeapGenAnalysis
import HeapGenReport
import HeapGenSymbolication
import HeapGenTrace

/// One recorded return address and what it symbolicated to.
public struct SymbolicatedAddress: Sendable, Equatable {
    /// The recorded return address.
    public var address: UInt64
    /// The module that held the address when the stack was recorded; `nil` if none did.
    public var module: ModuleRecord?
    /// Innermost inlined function first, the function containing the address last; never empty.
    /// Frames use the report's model (``Report/Frame``).
    public var frames: [Report.Frame]

    /// `address - loadBias` of ``module``: stable across runs of one build (ASLR moves only the bias).
    public var moduleOffset: UInt64? { module.map { address &- $0.loadBias } }
}

/// A symbolicated stack: its addresses, innermost first.
public struct SymbolicatedStack: Sendable, Equatable {
    public var addresses: [SymbolicatedAddress]
    /// Every frame, innermost first, inlined frames included (as in a report).
    public var frames: [Report.Frame]
    /// Per frame of ``frames``: the module offset of its address, `nil` outside any module.
    public var moduleOffsets: [UInt64?]
    /// Index in ``frames`` of the first frame in the program's own code (``OwnCode/firstUserFrame(_:)``).
    public var userFrame: Int?

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

/// Symbolicates the stacks of a ``TraceContext``, each distinct (module, address) once.
///
/// Every frame address is mapped to the module that held it when its stack was defined
/// (``Analysis/module(containing:atRecord:)`` at the stack's position), and looked up as a
/// return address, as ``ReportBuilder`` does.
public struct StackSymbolication {
    public let symbolizer: Symbolizer

    public init(symbolizer: Symbolizer = Symbolizer()) {
        self.symbolizer = symbolizer
    }

    /// `libfoo.so+0x1a2b`, or the address alone outside any module.
    public static func unknownName(module: String?, offset: UInt64?, address: UInt64) -> String {
        guard let module, let offset else { return "0x" + String(address, radix: 16) }
        let base = module.split(separator: "/").last.map(String.init) ?? module
        return "\(base.isEmpty ? module : base)+0x\(String(offset, radix: 16))"
    }

    /// The symbolicated stacks of `stackIDs` (stack id 0, no stack, gives an empty stack),
    /// and notes on what could not be symbolicated.
    public func symbolicate(_ stackIDs: [UInt32], in context: TraceContext)
        -> (stacks: [UInt32: SymbolicatedStack], notes: [String]) {
        struct Key: Hashable {
            var module: Module
            var address: UInt64
        }
        var requestIndex: [Key: Int] = [:]
        var requests: [SymbolizationRequest] = []
        var plans: [UInt32: [(request: Int?, address: UInt64, module: ModuleRecord?)]] = [:]
        var modulesAt: [UInt64: [UInt64: ModuleRecord?]] = [:]   // position → address → module
        for id in Set(stackIDs) {
            let addresses = context.stacks[id] ?? []
            let position = context.stackPositions[id] ?? UInt64.max
            var memo = modulesAt[position] ?? [:]
            var plan: [(request: Int?, address: UInt64, module: ModuleRecord?)] = []
            plan.reserveCapacity(addresses.count)
            for address in addresses {
                let record: ModuleRecord?
                if let known = memo[address] {
                    record = known
                } else {
                    record = context.analysis.module(containing: address, atRecord: position)
                    memo[address] = .some(record)
                }
                guard let record else {
                    plan.append((nil, address, nil))
                    continue
                }
                let key = Key(module: Module(path: record.path, buildID: record.buildID, loadBias: record.loadBias),
                              address: address)
                if let i = requestIndex[key] {
                    plan.append((i, address, record))
                } else {
                    requestIndex[key] = requests.count
                    plan.append((requests.count, address, record))
                    requests.append(SymbolizationRequest(module: key.module, address: address, isReturnAddress: true))
                }
            }
            modulesAt[position] = memo
            plans[id] = plan
        }

        // The symbols the trace stored when it was recorded come first (StoredSymbols).
        let stored = requests.isEmpty ? StoredSymbols() : StoredSymbols(tracePath: context.trace)
        let answers = requests.isEmpty ? [] : symbolizer.symbolize(requests, stored: stored)

        var notes: [String] = []
        if !requests.isEmpty && symbolizer.backend == .none && stored.isEmpty {
            notes.append("No symbolizer was found (llvm-symbolizer or addr2line; HEAPGEN_SYMBOLIZER names one): frames show addresses only.")
        }
        var stale = Set<String>()
        for frames in answers { for f in frames where f.stale { stale.insert(f.module) } }
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
                                               frames: [Report.Frame(module: nil, address: step.address)])
                }
                let frames = answers[r].map { s in
                    Report.Frame(function: s.function, shortFunction: s.shortFunction, file: s.file, line: s.line,
                                 column: s.column, module: s.module, address: s.address, inlined: s.inlined)
                }
                return SymbolicatedAddress(address: step.address, module: step.module, frames: frames)
            }
            out[id] = SymbolicatedStack(addresses: addresses)
        }
        if unmapped > 0 {
            notes.append("\(unmapped) frame address\(unmapped == 1 ? " was" : "es were") in no recorded module (generated code?): shown without a module.")
        }
        return (out, notes)
    }
}
