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
    /// Module loads and unloads; `recordIndex` is the ring position of the record.
    var modules: [ModuleEvent] = []
    /// Live tracking, once the program asked for it.
    var tracker: LiveTracker?
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
        var loaded: [ModuleRecord] = []
        for event in modules {
            switch event.kind {
            case .load:
                if let module = event.module { loaded.append(module) }
            case .unload:
                if let i = loaded.lastIndex(where: { $0.loadBias == event.loadBias }) { loaded.remove(at: i) }
            }
        }
        return loaded
    }
}

/// The live heap of one traced process image, from the moment it asked to be
/// tracked: every live block by address (size, stack, type, the ring position
/// of its allocation, its generation), plus an optional growth session.
///
/// Memory: the live blocks (``BlockMap``, 40 bytes each), nothing per event.
final class LiveTracker {
    typealias Entry = BlockMap.Entry

    /// Ring position of the `track` request.
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
    static let maxPending = 4096

    /// Live blocks, mutated in place. Exclusivity is not checked at run time on
    /// the per-event fields (the collector has one thread; measured: the checks
    /// were a fifth of the tracking cost).
    @exclusivity(unchecked) private var map = BlockMap()
    /// Blocks handed to realloc, until the realloc succeeds (stale entry, harmless)
    /// or fails (REALLOC_UNDO makes them live again).
    @exclusivity(unchecked) private var pending: [UInt64: Entry] = [:]

    init(since: UInt64) {
        self.since = since
    }

    deinit {
        map.deallocate()
    }

    /// Live blocks.
    var count: Int { map.count }

    // MARK: Events

    @inline(__always)
    func allocate(address: UInt64, size: UInt64, stack: UInt32, type: UInt32, position: UInt64) {
        map.insert(Entry(address: address, size: size, position: position, stack: stack, type: type,
                         generation: generation))
        if let session {
            session.analyzer.consume(.allocation(function: .malloc, address: address, size: size,
                                                 stack: stack, type: type))
        }
    }

    @inline(__always)
    func free(address: UInt64, realloc: Bool) {
        if let old = map.remove(address) {
            if realloc {
                if pending.count >= Self.maxPending { pending.removeAll(keepingCapacity: true) }
                pending[address] = old
            }
        } else {
            untrackedFrees &+= 1
            if realloc && !pending.isEmpty { pending.removeValue(forKey: address) }
        }
        if let session {
            session.analyzer.consume(.free(function: realloc ? .realloc : .free, address: address))
        }
    }

    func undo(address: UInt64) {
        if let kept = pending.removeValue(forKey: address) { map.insert(kept) }
        if let session { session.analyzer.consume(.reallocUndo(address: address)) }
    }

    func mark(label: String, time: UInt64, origin: MarkOrigin) {
        if markLabels.count < Self.maxMarkLabels { markLabels.append(label) }
        generation &+= 1
        if let session {
            session.analyzer.consume(.mark(label: label, timeNanoseconds: time, origin: origin))
            session.marks += 1
        }
    }

    /// Label of mark `index` (0-based, since tracking began), if kept.
    func markLabel(_ index: Int) -> String? {
        index >= 0 && index < markLabels.count ? markLabels[index] : nil
    }

    func lookup(_ address: UInt64) -> Entry? {
        map.lookup(address)
    }

    /// Calls `body` for every live block, in no particular order.
    func forEachBlock(_ body: (Entry) -> Void) {
        map.forEach(body)
    }

    /// Every live block as (address, size), by ascending address.
    func liveBlocks() -> [(address: UInt64, size: UInt64)] {
        var out: [(address: UInt64, size: UInt64)] = []
        out.reserveCapacity(map.count)
        map.forEach { out.append(($0.address, $0.size)) }
        out.sort { $0.address < $1.address }
        return out
    }
}

/// Address → block: open addressing with linear probing and backward-shift
/// deletion (no tombstones), kept at most half full, 40 bytes a slot.
struct BlockMap {
    struct Entry {
        /// 0 = empty slot (no block lives at address 0).
        var address: UInt64
        var size: UInt64
        /// Ring position of the allocation record: tells two blocks at one address apart.
        var position: UInt64
        var stack: UInt32
        var type: UInt32
        /// Marks seen (since tracking began) before the allocation.
        var generation: UInt32
        var _pad: UInt32 = 0
    }

    private var table: UnsafeMutablePointer<Entry>
    private var mask: Int
    private var shift: UInt64
    private(set) var count = 0

    init() {
        let bits = 10
        mask = (1 << bits) - 1
        shift = UInt64(64 - bits)
        table = .allocate(capacity: 1 << bits)
        table.initialize(repeating: Self.empty, count: 1 << bits)
    }

    private static let empty = Entry(address: 0, size: 0, position: 0, stack: 0, type: 0, generation: 0)

    func deallocate() {
        table.deallocate()
    }

    /// Calls `body` for every entry, in table order.
    func forEach(_ body: (Entry) -> Void) {
        for k in 0...mask where table[k].address != 0 { body(table[k]) }
    }

    @inline(__always)
    private func home(_ address: UInt64) -> Int {
        Int(truncatingIfNeeded: ((address >> 4) &* 0x9E37_79B9_7F4A_7C15) >> shift)
    }

    func lookup(_ address: UInt64) -> Entry? {
        guard address != 0 else { return nil }
        var i = home(address)
        while true {
            let a = table[i].address
            if a == address { return table[i] }
            if a == 0 { return nil }
            i = (i + 1) & mask
        }
    }

    @inline(__always)
    mutating func insert(_ entry: Entry) {
        guard entry.address != 0 else { return }
        if (count + 1) * 2 > mask + 1 { grow() }
        var i = home(entry.address)
        while true {
            let a = table[i].address
            if a == 0 {
                table[i] = entry
                count += 1
                return
            }
            if a == entry.address { // an address allocated twice: the newer block wins
                table[i] = entry
                return
            }
            i = (i + 1) & mask
        }
    }

    @inline(__always)
    mutating func remove(_ address: UInt64) -> Entry? {
        guard address != 0 else { return nil }
        var i = home(address)
        while true {
            let a = table[i].address
            if a == 0 { return nil }
            if a == address { break }
            i = (i + 1) & mask
        }
        let removed = table[i]
        var j = i
        while true {
            j = (j + 1) & mask
            let a = table[j].address
            if a == 0 { break }
            let k = home(a)
            let movable = i <= j ? (k <= i || k > j) : (k <= i && k > j)
            if movable {
                table[i] = table[j]
                i = j
            }
        }
        table[i].address = 0
        count -= 1
        return removed
    }

    private mutating func grow() {
        let old = table
        let oldCapacity = mask + 1
        let capacity = oldCapacity * 2
        mask = capacity - 1
        shift -= 1
        table = .allocate(capacity: capacity)
        table.initialize(repeating: Self.empty, count: capacity)
        count = 0
        for k in 0..<oldCapacity where old[k].address != 0 { insert(old[k]) }
        old.deallocate()
    }
}

/// A growth session (`begin` … marks … `growth`): a generation analysis of the
/// heap events from the `begin` request on, with the options given there.
final class GrowthSession {
    var analyzer: GenerationAnalyzer
    /// Label given with `begin` (echoed in the answer).
    let label: String?
    /// Ring position of the `begin` request.
    let since: UInt64
    /// Marks seen in the session.
    var marks = 0

    init(options: AnalysisOptions, label: String?, since: UInt64) {
        analyzer = GenerationAnalyzer(options: options)
        self.label = label
        self.since = since
    }
}
