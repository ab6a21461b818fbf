// One-pass totals and consistency check of a trace.

/// Totals of one trace and a check that its events are consistent, computed in one pass.
///
/// Live blocks are replayed with ``LiveHeap`` (the model every replay shares), so
/// memory is proportional to the number of live blocks, not to the number of events.
///
/// Realloc: as ``LiveHeap`` describes. The `free(.realloc, p)` of a realloc sets `p`'s
/// block aside as *pending*; a `reallocUndo(p)` (the realloc failed) makes it live again
/// with its old size and stack. On success the pending entry is simply dropped: when an
/// allocation returns `p` again, or when more than 4096 reallocs are pending (the oldest
/// half goes; this bounds the leftovers of `realloc(p, 0)` and of moved blocks, whose
/// completion cannot be paired by address since events carry no thread).
public struct TraceSummary: Sendable, Codable {
    /// Calls and requested bytes for one allocation function.
    public struct FunctionTotals: Sendable, Codable, Equatable {
        public var calls: UInt64
        public var bytes: UInt64

        public init(calls: UInt64 = 0, bytes: UInt64 = 0) {
            self.calls = calls
            self.bytes = bytes
        }
    }

    /// A generation mark and the heap at that point.
    public struct Mark: Sendable, Codable, Equatable {
        public var label: String
        /// 0 for the first mark of the trace, 1 for the next...
        public var index: Int
        /// Number of events (alloc, free, reallocUndo, mark) before this mark.
        public var eventPosition: UInt64
        public var timeNanoseconds: UInt64
        public var origin: MarkOrigin
        /// Live blocks and bytes just before the mark.
        public var liveObjects: UInt64
        public var liveBytes: UInt64
    }

    /// The file (path or in-memory name).
    public var file: String
    public var process: ProcessRecord
    public var end: EndRecord
    /// Per allocation function name ("malloc", "posix_memalign"...): calls and requested bytes.
    /// Functions never called are absent.
    public var allocations: [String: FunctionTotals] = [:]
    /// Per free function name ("free", "realloc"): calls that freed a block (a realloc that
    /// failed freed none). Functions never called are absent.
    public var frees: [String: UInt64] = [:]
    /// `free(NULL)` calls (from the end record; they are not recorded as events).
    public var freeNullCalls: UInt64 = 0
    /// alloc records, not counting blocks inherited at a fork (function `inherited`).
    public var allocationCount: UInt64 = 0
    /// free records, less those a `reallocUndo` took back (the realloc failed).
    public var freeCount: UInt64 = 0
    /// reallocUndo records.
    public var reallocUndoCount: UInt64 = 0
    /// alloc, free, reallocUndo and mark records.
    public var eventCount: UInt64 = 0
    /// Blocks live at the end of the trace.
    public var liveObjects: UInt64 = 0
    /// Requested bytes live at the end of the trace.
    public var liveBytes: UInt64 = 0
    /// Highest live bytes seen, and the event position where it was first reached.
    public var peakLiveBytes: UInt64 = 0
    public var peakEventPosition: UInt64 = 0
    /// Stack definitions.
    public var stackCount: Int = 0
    /// Stacks cut at the recording's frame limit (`stackTruncated` records).
    public var truncatedStackCount: Int = 0
    /// Type definitions: id → name. In JSON an object keyed by the decimal id, so
    /// `info --format json` prints the same bytes every time (a dictionary with integer keys
    /// would be encoded as a flat array in hash order, which differs from run to run).
    @IDKeyedNames public var types: [UInt32: String] = [:]
    /// Paths of loaded modules, in load order.
    public var modules: [String] = []
    /// moduleUnload records.
    public var moduleUnloads: Int = 0
    public var marks: [Mark] = []
    /// threadStart records.
    public var threadCount: Int = 0
    /// Sum of `lost` records.
    public var lostEvents: UInt64 = 0
    /// What heapgen warned about the process while recording it (`recordingWarning`
    /// records), e.g. an allocator whose calls it cannot see. Absent when none.
    public var recordingWarnings: [String]?
    /// Reallocs still pending at the end (realloc(p, 0), or moved blocks never reused).
    public var pendingReallocsAtEnd: Int = 0

    /// True for an aggregated trace (``TraceReader/isAggregated``): its counts per site, size
    /// and generation are the recorded ones, but every allocation counts as `malloc`, every
    /// free as `free`, and event positions are those of the expanded events. Absent otherwise.
    public var aggregated: Bool?

    /// Consistency problems, one line each (the first 100; the counters below are complete).
    public var problems: [String] = []
    /// Frees of an address that was not live.
    public var unknownFrees: UInt64 = 0
    /// Allocations returning an address that was already live.
    public var doubleAllocations: UInt64 = 0
    /// reallocUndo records with no pending realloc of that address.
    public var badUndos: UInt64 = 0

    /// Most problem lines kept in ``problems``.
    public static let maxProblemLines = 100
    /// Pending reallocs kept before the oldest half is dropped (``LiveHeap``'s bound).
    static var maxPendingReallocs: Int { LiveHeap<Block>.maxPendingReallocs }

    /// Reads and summarizes the trace at `path`.
    ///
    /// - Throws: ``TraceError`` if the trace cannot be read or is invalid.
    public static func load(path: String) throws -> TraceSummary {
        try TraceSummary(reader: TraceReader(path: path))
    }

    /// Reads and summarizes the trace of `reader` (from its start).
    ///
    /// - Throws: ``TraceError`` if the trace is invalid.
    public init(reader: TraceReader) throws {
        var reader = reader
        var builder = Builder()
        try reader.forEach { record in builder.add(record) }
        // The reader guarantees both for a trace it read to the end.
        guard let process = builder.process, let end = builder.end else {
            throw TraceError(.corrupt, "no process or end record", file: reader.name)
        }
        var problems = builder.problems
        if builder.problemCount > problems.count {
            problems.append("… and \(builder.problemCount - problems.count) more problems")
        }
        self.file = reader.name
        if reader.isAggregated { aggregated = true }
        self.process = process
        self.end = end
        for function in AllocationFunction.allCases where builder.allocCalls[Int(function.rawValue)] > 0 {
            allocations[function.name] = FunctionTotals(calls: builder.allocCalls[Int(function.rawValue)],
                                                        bytes: builder.allocBytes[Int(function.rawValue)])
        }
        for function in FreeFunction.allCases where builder.freeCalls[Int(function.rawValue)] > 0 {
            frees[function.name] = builder.freeCalls[Int(function.rawValue)]
        }
        freeNullCalls = end.freeNullCalls
        allocationCount = builder.allocations
        freeCount = builder.frees
        reallocUndoCount = builder.undos
        eventCount = builder.events
        liveObjects = UInt64(builder.live.count)
        liveBytes = builder.liveBytes
        peakLiveBytes = builder.peak
        peakEventPosition = builder.peakAt
        stackCount = builder.stacks
        truncatedStackCount = builder.truncatedStacks
        types = builder.types
        modules = builder.modules
        moduleUnloads = builder.unloads
        marks = builder.marks
        threadCount = builder.threads
        lostEvents = builder.lost
        if !builder.recordingWarnings.isEmpty { recordingWarnings = builder.recordingWarnings }
        pendingReallocsAtEnd = builder.live.pendingCount
        self.problems = problems
        unknownFrees = builder.unknownFrees
        doubleAllocations = builder.doubleAllocations
        badUndos = builder.badUndos
    }

    /// Accumulates the summary record by record.
    private struct Builder {
        let live = LiveHeap<Block>()
        var allocCalls = [UInt64](repeating: 0, count: 256)
        var allocBytes = [UInt64](repeating: 0, count: 256)
        var freeCalls = [UInt64](repeating: 0, count: 256)
        var process: ProcessRecord?
        var end: EndRecord?
        var events: UInt64 = 0
        var liveBytes: UInt64 = 0
        var peak: UInt64 = 0
        var peakAt: UInt64 = 0
        var allocations: UInt64 = 0, frees: UInt64 = 0, undos: UInt64 = 0
        var unknownFrees: UInt64 = 0, doubleAllocations: UInt64 = 0, badUndos: UInt64 = 0
        var problems: [String] = []
        var problemCount = 0
        var stacks = 0, threads = 0, unloads = 0, truncatedStacks = 0
        var lost: UInt64 = 0
        var recordingWarnings: [String] = []
        var types: [UInt32: String] = [:]
        var modules: [String] = []
        var marks: [Mark] = []

        mutating func problem(_ text: @autoclosure () -> String) {
            problemCount += 1
            if problems.count < TraceSummary.maxProblemLines { problems.append("event \(events): \(text())") }
        }

        @inline(__always)
        mutating func grew() {
            if liveBytes > peak {
                peak = liveBytes
                peakAt = events
            }
        }

        mutating func add(_ record: TraceRecord) {
            switch record {
            case let .allocation(function, address, size, _, _):
                // Inherited blocks are live, but the child never allocated them.
                if function != .inherited { allocations &+= 1 }
                let f = Int(function.rawValue)
                allocCalls[f] &+= 1
                allocBytes[f] &+= size
                if let old = live.apply(.allocation(address: address, block: Block(size: size))).removed {
                    doubleAllocations &+= 1
                    liveBytes &-= old.size
                    problem("\(function.name) returned \(hex(address)), which is already live (\(old.size) bytes)")
                }
                liveBytes &+= size
                grew()
                events &+= 1

            case let .free(function, address):
                frees &+= 1
                freeCalls[Int(function.rawValue)] &+= 1
                let change = live.apply(function == .realloc ? .reallocFree(address: address) : .free(address: address))
                if let old = change.removed {
                    liveBytes &-= old.size
                } else {
                    unknownFrees &+= 1
                    problem("\(function.name) of \(hex(address)), which is not live")
                }
                events &+= 1

            case let .reallocUndo(address):
                undos &+= 1
                let change = live.apply(.reallocUndo(address: address))
                if let block = change.added {
                    // The realloc failed: its old block was never freed.
                    frees &-= 1
                    freeCalls[Int(FreeFunction.realloc.rawValue)] &-= 1
                    if let old = change.removed {
                        badUndos &+= 1
                        liveBytes &-= old.size
                        problem("reallocUndo of \(hex(address)), which is live again")
                    }
                    liveBytes &+= block.size
                    grew()
                } else {
                    badUndos &+= 1
                    problem("reallocUndo of \(hex(address)), which no realloc freed")
                }
                events &+= 1

            case let .mark(label, time, origin):
                marks.append(Mark(label: label, index: marks.count, eventPosition: events, timeNanoseconds: time,
                                  origin: origin, liveObjects: UInt64(live.count), liveBytes: liveBytes))
                events &+= 1

            case .stack:
                stacks += 1
            case .stackTruncated:
                truncatedStacks += 1
            case let .type(id, _, name):
                types[id] = name
            case let .moduleLoad(module):
                modules.append(module.path)
            case .moduleUnload:
                unloads += 1
            case .threadStart:
                threads += 1
            case let .lost(count):
                lost &+= count
            case let .recordingWarning(text):
                recordingWarnings.append(text)
            case .unreachable, .indirectLeaks, .programSuppressions, .referenceGraph:
                break
            case let .process(record):
                process = record
            case let .end(record):
                end = record
            }
        }
    }

    /// What the summary keeps about a live block: its requested bytes (it reports no sites).
    struct Block {
        var size: UInt64
    }

    /// True if the events are consistent (no unknown frees, double allocations or bad undos).
    public var isConsistent: Bool {
        unknownFrees == 0 && doubleAllocations == 0 && badUndos == 0
    }
}

/// Names by numeric id, encoded as a JSON object keyed by the decimal id (sorted with
/// `.sortedKeys`), decoded from the same.
@propertyWrapper
public struct IDKeyedNames: Sendable, Codable, Equatable {
    public var wrappedValue: [UInt32: String]

    public init(wrappedValue: [UInt32: String]) {
        self.wrappedValue = wrappedValue
    }

    public init(from decoder: Decoder) throws {
        let byText = try decoder.singleValueContainer().decode([String: String].self)
        var names: [UInt32: String] = [:]
        for (key, name) in byText {
            guard let id = UInt32(key) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                        debugDescription: "type id \(key) is not a number"))
            }
            names[id] = name
        }
        wrappedValue = names
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Dictionary(uniqueKeysWithValues: wrappedValue.map { (String($0.key), $0.value) }))
    }
}
