// Aggregated traces (`heapgen record --aggregate`): per-site, per-generation counts written
// at each mark instead of one record per event, and their expansion back into events when
// the trace is read (docs/trace-format.md, "Aggregated traces").

extension RecordTag {
    /// Minor version 5: the counts of one epoch of an aggregated trace (``AggregateEntry``).
    static let aggregate: UInt8 = 0x28
}

extension TraceFormat {
    /// Header flag bit: the trace is aggregated (its heap events are `aggregate` records).
    static let aggregatedFlag: UInt32 = 1
    /// Entries in one `aggregate` record (writers split longer lists).
    static let maxAggregateEntries = 65_536
    /// Largest `allocated`, `freed` or `undone` of one entry, and `untrackedFrees` of one
    /// record: writers split larger counts into several entries (or records). It bounds what
    /// a record expands to by its size (at most ~2,400 events per byte), so a small file
    /// cannot make a reader work for hours.
    static let maxAggregateCount: UInt64 = 4096
}

/// One line of an `aggregate` record: what blocks of one group did in the epoch that the
/// record closes. A group is the blocks of one site (stack, type) and one requested size
/// born in one epoch (the part of the run between two marks of any kind).
public struct AggregateEntry: Sendable, Equatable {
    /// The site's stack id (defined before; 0 = none).
    public var stack: UInt32
    /// The site's type id (defined before; 0 = none).
    public var type: UInt32
    /// The requested size of every block of the group.
    public var size: UInt64
    /// The epoch the group's blocks were allocated in (0 = before the first mark).
    public var birth: UInt64
    /// Blocks allocated in this epoch (0 unless `birth` is this epoch).
    public var allocated: UInt64
    /// Blocks of the group freed in this epoch (of this epoch's `allocated` when `birth` is
    /// this epoch; else of the blocks still live from `birth`), not counting `undone`.
    public var freed: UInt64
    /// Reallocs of the group's blocks that failed in this epoch: each a free taken back
    /// by its undo (the block stayed live).
    public var undone: UInt64

    /// Creates an entry.
    public init(stack: UInt32, type: UInt32, size: UInt64, birth: UInt64, allocated: UInt64, freed: UInt64,
                undone: UInt64 = 0) {
        self.stack = stack
        self.type = type
        self.size = size
        self.birth = birth
        self.allocated = allocated
        self.freed = freed
        self.undone = undone
    }
}

extension TraceReader {
    /// The trace is aggregated (`heapgen record --aggregate`): its heap events were folded
    /// into per-site counts at marks, and the events ``forEach(_:)`` delivers for them are
    /// made up (addresses above ``AggregateAddresses/first``, function malloc and free) so
    /// that every count per site, size and generation is the recorded one. Individual blocks,
    /// their addresses and order within a generation are not in the file.
    public var isAggregated: Bool { flags & TraceFormat.aggregatedFlag != 0 }
}

/// The made-up addresses of the events a reader delivers for `aggregate` records. Far above
/// any user-space address (x86-64 and arm64 user space ends below 2^48), so they never meet
/// the real addresses of an aggregated trace's inherited blocks.
public enum AggregateAddresses {
    /// The lowest made-up address.
    public static let first: UInt64 = 0x0E00_0000_0000_0000
    /// Frees of addresses the collector did not know live (counted as untracked).
    static let untrackedBase: UInt64 = 0x0E00_0000_0000_0000
    /// Blocks allocated and freed in the same epoch: one address, reused.
    static let transient: UInt64 = 0x0F00_0000_0000_0000
    /// Blocks that outlive their epoch: fresh addresses, 16 apart.
    static let survivorBase: UInt64 = 0x1000_0000_0000_0000
}

/// Turns `aggregate` records back into heap events while a trace is read. The blocks of a
/// group are alike, so a group's live blocks are runs of consecutive made-up addresses
/// (one run per record entry that kept blocks): memory is per group, never per block or
/// event. Time is per expanded event, as reading the full trace would take.
struct AggregateExpander {
    private struct Group: Hashable {
        var stack: UInt32
        var type: UInt32
        var size: UInt64
        var birth: UInt64
    }

    /// Live made-up addresses `base`, `base + 16`, … (`count` of them).
    private struct Run {
        var base: UInt64
        var count: UInt64
    }

    private var live: [Group: [Run]] = [:]
    private var nextAddress = AggregateAddresses.survivorBase
    private var nextUntracked = AggregateAddresses.untrackedBase
    /// Epoch of the last record (records come in epoch order).
    private var epoch: UInt64 = 0

    /// Decodes one `aggregate` record (after its tag) and delivers its events: per entry,
    /// the frees of older blocks, then this epoch's blocks (those freed again in the epoch
    /// first, as allocation-free pairs), then the untracked frees. Adds what it delivers to
    /// `events`.
    mutating func expand(_ c: inout ByteCursor, stacks: IdSet, types: IdSet, events: inout UInt64,
                         _ body: (TraceRecord) throws -> Void) throws {
        let epochAt = c.position
        let recordEpoch = try c.varint()
        if recordEpoch < epoch {
            throw c.corrupt("aggregate record of epoch \(recordEpoch) after one of epoch \(epoch)", at: epochAt)
        }
        epoch = recordEpoch
        let untrackedAt = c.position
        let untracked = try c.varint()
        if untracked > TraceFormat.maxAggregateCount {
            throw c.corrupt("aggregate untracked free count \(untracked) is above 4096", at: untrackedAt)
        }
        let count = try c.length("aggregate entry count", limit: TraceFormat.maxAggregateEntries)
        for _ in 0..<count {
            let entryAt = c.position
            let stack = try c.varint32("stack id")
            if stack != 0 && !stacks.contains(stack) {
                throw c.corrupt("aggregate entry uses stack \(stack), which is not defined", at: entryAt)
            }
            let type = try c.varint32("type id")
            if type != 0 && !types.contains(type) {
                throw c.corrupt("aggregate entry uses type \(type), which is not defined", at: entryAt)
            }
            let size = try c.varint()
            let birth = try c.varint()
            let allocated = try c.varint()
            let freed = try c.varint()
            let undone = try c.varint()
            if birth > epoch {
                throw c.corrupt("aggregate entry born in epoch \(birth), after its record's epoch \(epoch)", at: entryAt)
            }
            if allocated > TraceFormat.maxAggregateCount || freed > TraceFormat.maxAggregateCount
                || undone > TraceFormat.maxAggregateCount {
                throw c.corrupt("aggregate entry count above 4096", at: entryAt)
            }
            let group = Group(stack: stack, type: type, size: size, birth: birth)
            if birth < epoch {
                if allocated != 0 {
                    throw c.corrupt("aggregate entry allocates \(allocated) blocks in epoch \(birth), before its record's epoch \(epoch)",
                                    at: entryAt)
                }
                var runs = live[group] ?? []
                let available = runs.reduce(0) { $0 &+ $1.count }
                if available < freed {
                    throw c.corrupt("aggregate entry frees \(freed) blocks of a group with \(available) live", at: entryAt)
                }
                var pairs = undone
                var left = freed
                while left > 0 {
                    let last = runs.count - 1
                    runs[last].count -= 1
                    left -= 1
                    let address = runs[last].base &+ 16 &* runs[last].count
                    try Self.failedReallocs(&pairs, address, &events, body)
                    events &+= 1
                    try body(.free(function: .free, address: address))
                    if runs[last].count == 0 { runs.removeLast() }
                }
                live[group] = runs.isEmpty ? nil : runs
                try finishFailedReallocs(&pairs, group, &c, entryAt: entryAt, &events, body)
            } else {
                if freed > allocated {
                    throw c.corrupt("aggregate entry frees \(freed) of the \(allocated) blocks it allocates", at: entryAt)
                }
                var pairs = undone
                for _ in 0..<freed {
                    events &+= 2
                    try body(.allocation(function: .malloc, address: AggregateAddresses.transient, size: size,
                                         stack: stack, type: type))
                    try Self.failedReallocs(&pairs, AggregateAddresses.transient, &events, body)
                    try body(.free(function: .free, address: AggregateAddresses.transient))
                }
                let survivors = allocated - freed
                if survivors > 0 {
                    let run = Run(base: nextAddress, count: survivors)
                    live[group, default: []].append(run)
                    for k in 0..<survivors {
                        events &+= 1
                        try body(.allocation(function: .malloc, address: run.base &+ 16 &* k, size: size, stack: stack, type: type))
                        try Self.failedReallocs(&pairs, run.base &+ 16 &* k, &events, body)
                    }
                    nextAddress &+= 16 &* survivors
                }
                try finishFailedReallocs(&pairs, group, &c, entryAt: entryAt, &events, body)
            }
        }
        for _ in 0..<untracked {
            events &+= 1
            try body(.free(function: .free, address: nextUntracked))
            nextUntracked &+= 16
        }
    }

    /// Delivers the failed reallocs no block of the entry took on a live block of `group`
    /// (split entries of one group share its blocks); with none live, the record is corrupt.
    private func finishFailedReallocs(_ pairs: inout UInt64, _ group: Group, _ c: inout ByteCursor, entryAt: Int,
                                      _ events: inout UInt64, _ body: (TraceRecord) throws -> Void) throws {
        guard pairs > 0 else { return }
        guard let last = live[group]?.last else {
            throw c.corrupt("aggregate entry undoes \(pairs) reallocs of a group with no block", at: entryAt)
        }
        try Self.failedReallocs(&pairs, last.base &+ 16 &* (last.count - 1), &events, body)
    }

    /// Delivers `pairs` failed reallocs (a realloc's free, then its undo) of the live block
    /// at `address`, once: the full trace's events of the reallocs that failed in the epoch.
    private static func failedReallocs(_ pairs: inout UInt64, _ address: UInt64, _ events: inout UInt64,
                                       _ body: (TraceRecord) throws -> Void) throws {
        while pairs > 0 {
            pairs -= 1
            events &+= 2
            try body(.free(function: .realloc, address: address))
            try body(.reallocUndo(address: address))
        }
    }
}
