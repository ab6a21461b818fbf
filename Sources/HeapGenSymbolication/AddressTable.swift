// The distinct return addresses of many stacks, each with the module that held it, so that
// each is symbolicated once however many stacks share it.

import HeapGenTrace

/// Stacks fed one at a time, in trace order, become lists of indices into one table of
/// distinct (module, address) entries; ``symbolicate(with:stored:)`` then answers every
/// entry in one batch.
///
/// A test suite's trace defines millions of stacks of up to 64 frames but only some
/// hundred thousand distinct return addresses: a caller that keeps indices (or nothing:
/// an export streams its samples) never holds a symbolicated frame per stack frame.
///
/// ```swift
/// var table = AddressTable(timeline: ModuleTimeline(events: analysis.modules))
/// let entries = table.add(frames, at: position)   // indices, innermost first
/// let (addresses, notes) = table.symbolicate(with: StackSymbolication())
/// let innermost = addresses[Int(entries[0])]
/// ```
public struct AddressTable {
    private struct Key: Hashable {
        var module: Module
        var address: UInt64
    }

    /// One distinct address: the module that held it (nil: none did) and its request.
    private struct Entry {
        var address: UInt64
        var module: ModuleRecord?
        var request: Int?
        /// In heapgen's shim (libHeapGenShim.so).
        var inShim = false
    }

    private let timeline: ModuleTimeline
    private var modules: ModuleTimeline.Cursor
    private var lastPosition: UInt64 = 0
    private var indexOfKey: [Key: UInt32] = [:]
    private var indexOfUnmapped: [UInt64: UInt32] = [:]
    private var entries: [Entry] = []
    /// Address → entry while the mapped modules stay the same (``ModuleTimeline/Cursor/changes``):
    /// a frame costs one integer lookup, not a module lookup and the hash of its path.
    private var recent: [UInt64: UInt32] = [:]
    private var recentChanges = -1
    private var requests: [SymbolizationRequest] = []
    /// Frames (not distinct addresses) that no module held, for the note.
    private var unmappedFrames = 0

    /// An empty table whose addresses are found in the modules of `timeline`.
    public init(timeline: ModuleTimeline) {
        self.timeline = timeline
        modules = timeline.cursor()
    }

    /// Starts the module timeline again from the start of the trace, keeping the entries:
    /// the same stacks added again, in trace order, get the same entries (a caller that
    /// keeps no entries reads its stacks twice, before and after ``symbolicate(with:stored:)``).
    public mutating func rewind() {
        modules = timeline.cursor()
        lastPosition = 0
        recentChanges = -1
        unmappedFrames = 0   // the same frames come again
    }

    /// Distinct entries so far.
    public var count: Int { entries.count }

    /// The entries of `addresses` (innermost first, as recorded), their modules looked up at
    /// trace `position`. Positions must not decrease from one call to the next: the module
    /// timeline is replayed once, forward.
    ///
    /// A signal handler that interrupted heapgen's shim has the shim's frames in its stack,
    /// where the program, without heapgen, would have been inside its allocator: of each run
    /// of them only the outermost is kept, the function the program called (`malloc`, `free`…),
    /// without what is inlined into it (``symbolicate(with:stored:)``).
    public mutating func add(_ addresses: [UInt64], at position: UInt64) -> [UInt32] {
        precondition(position >= lastPosition, "AddressTable takes stacks in trace order")
        lastPosition = position
        modules.advance(to: position)
        if modules.changes != recentChanges {
            recent.removeAll(keepingCapacity: true)
            recentChanges = modules.changes
        }
        var out: [UInt32] = []
        out.reserveCapacity(addresses.count)
        for address in addresses {
            if let i = recent[address] {
                if entries[Int(i)].module == nil { unmappedFrames += 1 }
                out.append(i)
            } else {
                let i = entry(of: address)
                recent[address] = i
                out.append(i)
            }
        }
        if out.count > 1 && out.dropLast().contains(where: { entries[Int($0)].inShim }) {
            out = out.indices.filter { k in
                !(entries[Int(out[k])].inShim && k + 1 < out.count && entries[Int(out[k + 1])].inShim)
            }.map { out[$0] }
        }
        return out
    }

    private mutating func entry(of address: UInt64) -> UInt32 {
        guard let record = modules.module(containing: address) else {
            unmappedFrames += 1
            if let i = indexOfUnmapped[address] { return i }
            let i = UInt32(entries.count)
            indexOfUnmapped[address] = i
            entries.append(Entry(address: address, module: nil, request: nil))
            return i
        }
        let key = Key(module: Module(record), address: address)
        if let i = indexOfKey[key] { return i }
        let i = UInt32(entries.count)
        indexOfKey[key] = i
        entries.append(Entry(address: address, module: record, request: requests.count,
                             inShim: OwnCode.baseName(record.path) == "libHeapGenShim.so"))
        requests.append(SymbolizationRequest(module: key.module, address: address, isReturnAddress: true))
        return i
    }

    /// Every entry symbolicated, by index, and notes on what could not be.
    ///
    /// `stored` (the symbols the trace stored when it was recorded) is read only when there
    /// is something to look up.
    public func symbolicate(with symbolication: StackSymbolication,
                            stored: @autoclosure () -> StoredSymbols? = nil)
        -> (addresses: [SymbolicatedAddress], notes: [String]) {
        let symbolizer = symbolication.symbolizer
        let storedSymbols = requests.isEmpty ? nil : stored()
        let answers = requests.isEmpty ? [] : symbolizer.symbolize(requests, stored: storedSymbols)

        var notes: [String] = []
        if !requests.isEmpty && symbolizer.backend == .none && (storedSymbols?.isEmpty ?? true) {
            notes.append("No symbolizer was found (llvm-symbolizer or addr2line; HEAPGEN_SYMBOLIZER names one): frames show addresses only.")
        }
        var stale = Set<String>()
        for (request, answer) in zip(requests, answers) where answer.stale {
            // A module recorded without a path (the main program, whose path the shim could not read).
            stale.insert(request.module.path.isEmpty ? "a module recorded without its path" : request.module.path)
        }
        if !stale.isEmpty {
            let names = stale.sorted().prefix(3).joined(separator: ", ")
            let more = stale.count > 3 ? " and \(stale.count - 3) more" : ""
            notes.append("Changed or missing since the recording, so their frames may lack names: \(names)\(more).")
        }
        if unmappedFrames > 0 {
            notes.append("\(unmappedFrames) frame address\(unmappedFrames == 1 ? " was" : "es were") in no recorded module (generated code?): shown without a module.")
        }
        let addresses = entries.map { e -> SymbolicatedAddress in
            guard let r = e.request else {
                return SymbolicatedAddress(address: e.address, module: nil,
                                           frames: [SymbolicatedFrame(module: nil, address: e.address)])
            }
            // The shim's one frame left in a stack (``add(_:at:)``) is the function the program
            // called: not the shim's helpers inlined into it.
            let frames = answers[r].frames
            return SymbolicatedAddress(address: e.address, module: e.module,
                                       frames: e.inShim && frames.count > 1 ? [frames[frames.count - 1]] : frames)
        }
        return (addresses, notes)
    }
}
