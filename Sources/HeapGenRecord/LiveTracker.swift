// The collector's per-segment control state (names, modules, counters) and its live tracking
// of a traced process image (LiveTracker, over HeapGenTrace's LiveHeap).

import HeapGenTrace

/// What the collector keeps about one segment so it can answer the program's
/// control requests (``ControlChannel``).
///
/// Type names and module loads are kept for every segment (they are rare and
/// come once each), so tracking can start late and still name types and
/// symbolicate frames. Heap events are followed only once the program asked
/// (``LiveTracker``, `{"op":"track"}`): a program that never asks costs one
/// nil check per ring record.
final class SegmentControl {
    /// Swift type names by type id.
    var typeNames: [UInt32: String] = [:]
    /// Swift type metadata addresses by type id (0 or absent: unknown).
    var typeMetadata: [UInt32: UInt64] = [:]
    /// Stored properties of the Swift classes read so far, by type id (the reference
    /// graph's field names; metadata does not change, so each is read once).
    var classFields: [UInt32: [ReferenceGraphRecord.Field]] = [:]
    /// Module loads and unloads; `recordIndex` is the ring position of the record.
    var modules: [ModuleEvent] = []
    /// Live tracking, once the program asked for it (with `--leaks`, from the first event:
    /// then it may be the segment's ``Segment/liveHeap`` itself, which goes on after an
    /// `untrack` drops it from here).
    var tracker: LiveTracker? {
        didSet {
            // A growth session belongs to the program's tracking: it ends when the program
            // stops tracking, even if the tracker lives on as the collector's own.
            if oldValue !== tracker { oldValue?.session = nil }
        }
    }
    /// Requests answered.
    var answered: UInt64 = 0
    /// Control records ignored: stale or forged ids, or seen after the process was gone.
    var ignored: UInt64 = 0
    /// Requests answered with an error (malformed, unknown op...).
    var rejected: UInt64 = 0

    /// Most module events kept; past this the oldest unload/load pairs are not
    /// needed for symbolication any more and the list is not grown further.
    static let maxModuleEvents = 100_000

    func moduleLoaded(_ module: ModuleRecord, position: UInt64) {
        guard modules.count < Self.maxModuleEvents else { return }
        modules.append(ModuleEvent(kind: .load, loadBias: module.loadBias, module: module,
                                   recordIndex: position, generation: 0))
    }

    func moduleUnloaded(loadBias: UInt64, position: UInt64) {
        guard modules.count < Self.maxModuleEvents else { return }
        modules.append(ModuleEvent(kind: .unload, loadBias: loadBias, module: nil,
                                   recordIndex: position, generation: 0))
    }

    /// The modules loaded after replaying every event.
    func loadedModules() -> [ModuleRecord] {
        ModuleTimeline(events: modules).modules(at: .max)
    }
}

/// The live heap of one traced process image, from the moment it asked to be
/// tracked (or from its first event: the collector's own, ``Segment/liveHeap``):
/// every live block by address (size, stack, type, the ring position of its
/// allocation, its generation), plus an optional growth session.
///
/// Events change the blocks by `HeapGenTrace`'s ``LiveHeap`` and its realloc rule,
/// as every trace replay does. Memory: the live blocks (40 bytes each), nothing per event.
final class LiveTracker {
    /// What the tracker keeps about a live block.
    struct Block {
        var size: UInt64
        /// Ring position of the allocation record: tells two blocks at one address apart.
        var position: UInt64
        var stack: UInt32
        var type: UInt32
        /// Marks seen (since tracking began) before the allocation.
        var generation: UInt32
    }

    /// A live block and its address, as lookups and walks give it.
    struct Entry {
        var address: UInt64
        var size: UInt64
        /// Ring position of the allocation record.
        var position: UInt64
        var stack: UInt32
        var type: UInt32
        /// Marks seen (since tracking began) before the allocation.
        var generation: UInt32

        init(address: UInt64, _ block: Block) {
            self.address = address
            size = block.size
            position = block.position
            stack = block.stack
            type = block.type
            generation = block.generation
        }
    }

    /// Ring position of the `track` request (0: from the first event).
    let since: UInt64
    /// Labels of the marks seen since tracking began (at most ``maxMarkLabels``).
    private(set) var markLabels: [String] = []
    /// Marks seen since tracking began.
    private(set) var generation: UInt32 = 0
    /// Frees of addresses that were not live (allocated before tracking began, mostly).
    @exclusivity(unchecked) private(set) var untrackedFrees: UInt64 = 0
    /// The growth session started by `begin`, if any.
    @exclusivity(unchecked) var session: GrowthSession?

    static let maxMarkLabels = 100_000

    /// Live blocks and pending reallocs (LiveHeap checks no exclusivity at run time on
    /// its per-event fields: the collector has one thread). At most half full: shorter
    /// probes for the inserts, measured 0.5 s of collector CPU per 20 M events against 3/4.
    private let heap = LiveHeap<Block>(maxLoadPercent: 50)

    init(since: UInt64) {
        self.since = since
    }

    /// Type ids of the live blocks (0 left out).
    func liveTypes() -> Set<UInt32> {
        var out = Set<UInt32>()
        heap.forEach { _, block in if block.type != 0 { out.insert(block.type) } }
        return out
    }

    /// Live blocks.
    var count: Int { heap.count }

    // MARK: Events

    @inline(__always)
    func allocate(address: UInt64, size: UInt64, stack: UInt32, type: UInt32, position: UInt64) {
        _ = heap.apply(.allocation(address: address, block: Block(size: size, position: position, stack: stack,
                                                                  type: type, generation: generation)))
        if let session {
            session.analysis.consume(.allocation(function: .malloc, address: address, size: size,
                                                 stack: stack, type: type))
        }
    }

    @inline(__always)
    func free(address: UInt64, realloc: Bool) {
        if !heap.apply(realloc ? .reallocFree(address: address) : .free(address: address)).matched {
            untrackedFrees &+= 1
        }
        if let session {
            session.analysis.consume(.free(function: realloc ? .realloc : .free, address: address))
        }
    }

    func undo(address: UInt64) {
        _ = heap.apply(.reallocUndo(address: address))
        if let session { session.analysis.consume(.reallocUndo(address: address)) }
    }

    func mark(label: String, time: UInt64, origin: MarkOrigin) {
        if markLabels.count < Self.maxMarkLabels { markLabels.append(label) }
        generation &+= 1
        if let session {
            session.analysis.consume(.mark(label: label, timeNanoseconds: time, origin: origin))
            session.marks += 1
        }
    }

    /// Label of mark `index` (0-based, since tracking began), if kept.
    func markLabel(_ index: Int) -> String? {
        index >= 0 && index < markLabels.count ? markLabels[index] : nil
    }

    func lookup(_ address: UInt64) -> Entry? {
        heap.lookup(address).map { Entry(address: address, $0) }
    }

    /// Calls `body` for every live block, in no particular order.
    func forEachBlock(_ body: (Entry) -> Void) {
        heap.forEach { address, block in body(Entry(address: address, block)) }
    }

    /// Every live block as (address, size), by ascending address.
    func liveBlocks() -> [(address: UInt64, size: UInt64)] {
        var out: [(address: UInt64, size: UInt64)] = []
        out.reserveCapacity(heap.count)
        heap.forEach { address, block in out.append((address, block.size)) }
        out.sort { $0.address < $1.address }
        return out
    }
}

/// A growth session (`begin` … marks … `growth`): a generation analysis of the
/// heap events from the `begin` request on, with the options given there.
final class GrowthSession {
    /// The responder's analysis of the session's events (``ControlResponder/makeGrowthAnalysis(options:)``).
    let analysis: any GrowthAnalysis
    /// Label given with `begin` (echoed in the answer).
    let label: String?
    /// Ring position of the `begin` request.
    let since: UInt64
    /// Marks seen in the session.
    var marks = 0

    init(analysis: any GrowthAnalysis, label: String?, since: UInt64) {
        self.analysis = analysis
        self.label = label
        self.since = since
    }
}
