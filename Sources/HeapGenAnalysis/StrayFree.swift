// Frees of addresses that were not live, and what the trace says each one was.

import HeapGenTrace

/// A `free` (or `realloc`) of an address that was not live when it was called, and what the
/// trace says about that address: a block freed there before (a double free), a block it
/// points into (an interior pointer), or no block at all.
///
/// The shim publishes a free before it calls the allocator, so the record is there even
/// when the allocator then aborts the program (`free(): double free detected in tcache 2`).
public struct StrayFree: Codable, Sendable, Equatable {
    /// What the address was.
    public enum Cause: String, Codable, Sendable {
        /// A block allocated at this very address had been freed.
        case doubleFree
        /// The address is inside a block, not at its start (the block may have been freed
        /// too: ``blockFreedAtEvent``).
        case interiorPointer
        /// No block of the trace held the address: another allocator's memory, memory
        /// allocated while heapgen was not recording, or no heap memory at all.
        case notAllocated
    }

    public var cause: Cause
    /// `free` or `realloc` (``FreeFunction/name``).
    public var function: String
    /// The address passed to it.
    public var address: UInt64
    /// Its position among the trace's heap events (allocations, frees, realloc undos),
    /// counted from 0: the `event N` of `heapgen info`'s problem lines.
    public var event: UInt64
    /// The block the address was in or at (nil for ``Cause/notAllocated``): the last one
    /// allocated there before the free.
    public var blockAddress: UInt64?
    public var blockSize: UInt64?
    public var blockStack: UInt32?
    public var blockType: UInt32?
    /// The event that freed that block; nil if it was still live.
    public var blockFreedAtEvent: UInt64?
}

/// Explains the stray frees an analysis saw, with a second read of the trace up to the last
/// of them (run only when there are some: a healthy trace has none).
enum StrayFreeExplainer {
    /// Stray frees explained in a report; the rest are counted.
    static let maxExplained = 5

    /// The free records at `strays` (positions among the trace's records, as
    /// ``GenerationAnalyzer`` counts them, with the address each freed), explained; stacks
    /// they name that `analysis` cannot give (``Analysis/frames(ofStack:)``) are added to it
    /// (with the record where they were defined), so a report can symbolicate them.
    static func explain(path: String, strays: [(record: UInt64, address: UInt64)],
                        into analysis: inout Analysis) throws -> [StrayFree] {
        guard let last = strays.last?.record else { return [] }
        // Per stray free: the last block allocated over its address so far.
        struct Candidate {
            var address: UInt64, size: UInt64, stack: UInt32, type: UInt32
            var freedAt: UInt64?
        }
        struct Done: Error {}
        let wanted = Dictionary(uniqueKeysWithValues: strays.enumerated().map { ($1.record, $0) })
        let addresses = strays.map(\.address)
        var candidates = [Candidate?](repeating: nil, count: strays.count)
        var results = [StrayFree?](repeating: nil, count: strays.count)
        var record: UInt64 = 0, event: UInt64 = 0

        var reader = try TraceReader(path: path)
        do {
            try reader.forEach { r in
                defer { record &+= 1 }
                switch r {
                case let .allocation(_, address, size, stack, type):
                    for k in candidates.indices where address <= addresses[k] && addresses[k] < address &+ max(size, 1) {
                        candidates[k] = Candidate(address: address, size: size, stack: stack, type: type)
                    }
                    event &+= 1
                case let .free(function, address):
                    if let k = wanted[record] {
                        results[k] = StrayFree(cause: .notAllocated, function: function.name, address: address, event: event)
                        if let c = candidates[k] {
                            results[k]?.cause = c.address == address && c.freedAt != nil ? .doubleFree
                                : c.address == address ? .notAllocated : .interiorPointer
                            if results[k]?.cause != .notAllocated {
                                results[k]?.blockAddress = c.address
                                results[k]?.blockSize = c.size
                                results[k]?.blockStack = c.stack
                                results[k]?.blockType = c.type
                                results[k]?.blockFreedAtEvent = c.freedAt
                            }
                        }
                    }
                    for k in candidates.indices where candidates[k]?.address == address && candidates[k]?.freedAt == nil {
                        candidates[k]?.freedAt = event
                    }
                    event &+= 1
                case let .reallocUndo(address):
                    // The realloc failed: its old block lives on.
                    for k in candidates.indices where candidates[k]?.address == address { candidates[k]?.freedAt = nil }
                    event &+= 1
                default:
                    break
                }
                if record >= last { throw Done() }
            }
        } catch is Done {}

        let explained = results.compactMap { $0 }
        try addStacks(Set(explained.compactMap(\.blockStack)), before: last, path: path, to: &analysis)
        return explained
    }

    /// Adds the definitions of `ids` to ``Analysis/stacks``: from what the analysis still
    /// holds (``Analysis/frames(ofStack:)``: every stack of a small trace), else read from the
    /// trace again up to record `last` (a large trace's analysis keeps only the stacks its
    /// sites need, which a freed block's may not be). Either way the analysis is the same.
    private static func addStacks(_ ids: Set<UInt32>, before last: UInt64, path: String,
                                  to analysis: inout Analysis) throws {
        var missing = Set<UInt32>()
        for id in ids where analysis.stacks[id] == nil {
            if let frames = analysis.frames(ofStack: id), let record = analysis.recordIndex(ofStack: id) {
                analysis.stacks[id] = frames
                analysis.stackRecordIndices[id] = record
            } else {
                missing.insert(id)
            }
        }
        guard !missing.isEmpty else { return }
        struct Done: Error {}
        var record: UInt64 = 0
        var reader = try TraceReader(path: path)
        do {
            try reader.forEach { r in
                defer { record &+= 1 }
                if case let .stack(id, frames) = r, missing.remove(id) != nil {
                    analysis.stacks[id] = frames
                    analysis.stackRecordIndices[id] = record
                    if missing.isEmpty { throw Done() }
                }
                if record >= last { throw Done() }
            }
        } catch is Done {}
    }
}
