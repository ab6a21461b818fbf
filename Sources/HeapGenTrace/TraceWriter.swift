// Writes heapgen trace files (docs/trace-format.md).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CPrefetch

/// Writes one trace file: header, process record, then records in chunks.
///
/// Records are encoded into an in-memory chunk that is written (with its CRC-32C) once it
/// holds 64 KiB, on every ``mark(label:timeNanoseconds:origin:)``, on ``flush()`` and on
/// ``finish(_:)``. Events take the compact encodings of minor version 5, their varint fields
/// in streams of their own (``FieldStreams``): a chunk with events is a column chunk (minor
/// version 6), each stream zstd-compressed unless that does not make it smaller; other
/// chunks are compressed whole on the same condition. Appends never throw: the first I/O
/// error is kept in ``failure`` and later appends are dropped.
///
/// The writer does not check that stack and type ids are defined before use
/// (that would cost a lookup per event): callers define each id once, before
/// the first event that uses it, and never define id 0.
///
/// Not thread-safe: use one writer from one thread (or under one lock).
public final class TraceWriter {
    /// The path the writer was created with.
    public let path: String

    /// Alloc, free, reallocUndo and mark records appended so far.
    public var eventCount: UInt64 { events }

    /// Bytes written to the file so far (header and flushed chunks; not the pending chunk).
    public var bytesWritten: UInt64 { written }

    /// First I/O error seen by a non-throwing append (disk full...). Appends after it are dropped.
    public var failure: TraceError? { firstError }

    /// Payload bytes encoded but not yet written.
    public var pendingBytes: Int { position - TraceFormat.chunkHeaderSize + fields.total }

    /// When true, the writer keeps every distinct frame address of the stacks it defines
    /// (``frameAddresses``) and every module it records (``modules``): what the collector
    /// symbolicates at the end of a recording to store the trace's symbols, without reading
    /// the trace again. Off by default.
    public var keepsSymbolInputs = false
    /// Distinct non-zero frame addresses of the stacks defined so far (with ``keepsSymbolInputs``).
    public private(set) var frameAddresses = Set<UInt64>()
    /// Modules recorded so far, in order (with ``keepsSymbolInputs``).
    public private(set) var modules: [ModuleRecord] = []

    // Private storage behind the public counters: private stored properties let the
    // compiler prove exclusive access statically (no swift_beginAccess per event).
    private var events: UInt64 = 0
    private var written: UInt64 = 0
    private var firstError: TraceError?
    /// The file descriptor, -1 once closed (internal for tests).
    private(set) var fd: Int32
    /// Chunk header (8 bytes, filled at flush) followed by the pending payload.
    private var buffer: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// Offset in `buffer` of the next byte to write.
    private var position: Int
    /// Compact events (minor version 5): the state their records refer to, as the decoder
    /// keeps it; and, the writer's own, when each address slot was last used and a table from
    /// an allocated address to its allocation's number (direct-mapped: a collision only
    /// costs a free by slot).
    private let compact = CompactEventState()
    private let slotUse: UnsafeMutablePointer<UInt64>
    private var clock: UInt64 = 0
    @usableFromInline static let recentBits = 14
    /// Entry h is the pair (address, allocation number) at words 2h and 2h + 1: a free's
    /// look-up is one cache line, not one in each of two tables (which missed the cache
    /// twice a free on the collector's hot path).
    @usableFromInline let recent: UnsafeMutablePointer<UInt64>
    /// The varint fields of the pending events (minor version 6: chunks with events are
    /// column chunks; `buffer` holds the records stream).
    private let fields = FieldStreams()
    /// Compresses chunks (without a level: chunks are plain, column chunks' streams too).
    private let compressor: ChunkCompressor
    /// False once the symbols or the end record are being written: their chunks stay plain.
    private var compressing = true
    /// False once finished or failed: appends are dropped.
    private var writable = true

    /// Room reserved past the flush threshold for one small record
    /// (alloc is at most 33 bytes, end at most 97).
    private static let smallRecordRoom = 128
    /// Pending bytes at which a chunk is flushed (header included).
    private static let flushAt = TraceFormat.chunkHeaderSize + TraceFormat.flushThreshold
    private static let defaultCapacity = flushAt + smallRecordRoom
    /// The zstd level chunks are compressed with unless the caller says otherwise (chosen by
    /// measurement: docs/trace-format.md, "Compressed chunks").
    public static let defaultCompressionLevel: Int32 = 1
    /// Budget for all arguments of the process record, so the record fits in a chunk.
    static let argumentBudget = 8 * 1024 * 1024

    /// Creates (or replaces) `path` with mode 0600, O_NOFOLLOW (``PrivateOutputFile``, replacing
    /// an existing regular file rather than truncating it); writes header + process record.
    ///
    /// - Parameter compressionLevel: the zstd level of the chunks (64 KiB of records each),
    ///   or nil to compress nothing (column chunks then hold their streams as is). The `symbols` chunks and the `end` chunk are always plain.
    /// - Throws: ``TraceError`` (`.io`) if the file cannot be created or written.
    public init(path: String, process: ProcessRecord,
                compressionLevel: Int32? = TraceWriter.defaultCompressionLevel) throws {
        self.path = path
        compressor = ChunkCompressor(level: compressionLevel)
        let descriptor = PrivateOutputFile.open(path, replacing: true)
        if descriptor < 0 {
            throw TraceError(.io, "cannot create trace: \(SystemCalls.errorString(-descriptor))", file: path)
        }
        var header = TraceFormat.magic
        header += [UInt8(TraceFormat.majorVersion & 0xFF), UInt8(TraceFormat.majorVersion >> 8)]
        header += [UInt8(TraceFormat.minorVersion & 0xFF), UInt8(TraceFormat.minorVersion >> 8)]
        header += [0, 0, 0, 0]
        let headerError = header.withUnsafeBytes { raw in
            SystemCalls.writeAll(descriptor, raw.baseAddress!, raw.count)
        }
        if let headerError {
            close(descriptor)
            throw TraceError(.io, "cannot write trace header: \(SystemCalls.errorString(headerError))", offset: 0, file: path)
        }
        // Allocated only now: nothing can throw after this.
        slotUse = .allocate(capacity: TraceFormat.addressSlots)
        slotUse.initialize(repeating: 0, count: TraceFormat.addressSlots)
        recent = .allocate(capacity: 2 << Self.recentBits)
        recent.initialize(repeating: 0, count: 2 << Self.recentBits)
        fd = descriptor
        capacity = Self.defaultCapacity
        buffer = .allocate(capacity: capacity)
        position = TraceFormat.chunkHeaderSize
        written = UInt64(TraceFormat.headerSize)
        encodeProcess(process)
        // Make the file a readable (if truncated) trace right away.
        try flush()
    }

    deinit {
        if fd >= 0 {
            // Not finished: keep what we have. The file reads as truncated, which it is.
            flushPending()
            close(fd)
        }
        buffer.deallocate()
        deallocateTables()
    }

    private func deallocateTables() {
        recentFrames?.deallocate()
        slotUse.deallocate()
        recent.deallocate()
    }

    // MARK: Events

    /// Appends an allocation: `function` returned `address` for `size` requested bytes.
    /// A malloc without a type is a `0x40 + slot` record, anything else an `0x04` record.
    @inline(__always)
    public func appendAllocation(_ function: AllocationFunction, address: UInt64, size: UInt64, stack: UInt32, type: UInt32) {
        guard writable else { return }
        let p = buffer
        var i = position
        let typed = function != .malloc || type != 0
        // The allocator often hands out a block it just took back (its free lists are LIFO).
        var reuseTag: UInt8 = 0
        if !typed {
            if let j = compact.recentFreeIndex(of: address, limit: TraceFormat.recentFrees) {
                reuseTag = RecordTag.mallocReuse &+ UInt8(truncatingIfNeeded: j)
            } else if let j = compact.recentFreeIndex(of: address, ofSize: size, limit: TraceFormat.recentClassFrees) {
                reuseTag = RecordTag.mallocReuseClass &+ UInt8(truncatingIfNeeded: j)
            }
        }
        if reuseTag != 0 {
            p[i] = reuseTag
            i &+= 1
        } else {
            let slot = chooseSlot(address)
            fields.put(Varint.zigzag(address &- compact.slots[slot]), .address)
            compact.slots[slot] = address
            if !typed {
                p[i] = RecordTag.mallocSlot | UInt8(truncatingIfNeeded: slot)
                i &+= 1
            } else {
                p[i] = RecordTag.allocation
                p[i &+ 1] = function.rawValue | UInt8(truncatingIfNeeded: slot) &<< 4
                i &+= 2
            }
        }
        fields.put(size, .size)
        fields.put(UInt64(stack), .id)
        if typed { fields.put(UInt64(type), .id) }
        position = i
        // Remember which allocation returned `address`, for a compact free of it.
        let h = Self.recentHash(address) &* 2
        recent[h] = address
        recent[h &+ 1] = compact.allocations
        compact.noteAllocation(address, size: size)
        events &+= 1
        flushIfFull()
    }

    /// Says that an allocation or free of `address` comes soon (a few events on): the table
    /// entry both look up is brought towards the cache now. Why: that look-up missed the
    /// cache on most frees (a random line of 256 KiB), and was most of a free's cost; a
    /// batch of records read ahead hides it (the bench's collector time, medians of 7: −10 %).
    @inlinable
    public func prefetch(_ address: UInt64) {
        hg_prefetch_write(recent + Self.recentHash(address) &* 2)
    }

    /// Appends a free (`free(NULL)` is not recorded: count it in ``EndRecord/freeNullCalls``):
    /// by how many allocations back `address` was returned when that is under 4096, else by slot.
    @inline(__always)
    public func appendFree(_ function: FreeFunction, address: UInt64) {
        guard writable else { return }
        let p = buffer
        var i = position
        let h = Self.recentHash(address) &* 2
        let sequence = recent[h &+ 1]
        let back = compact.allocations &- 1 &- sequence
        if recent[h] == address && back < UInt64(TraceFormat.recentAllocations) {
            compact.noteFreeOfRecentAllocation(at: Int(truncatingIfNeeded: sequence) & CompactEventState.recentMask)
            if function == .free {
                if back < 16 {
                    p[i] = RecordTag.freeRecentShort | UInt8(truncatingIfNeeded: back)
                    i &+= 1
                } else {
                    p[i] = RecordTag.freeRecent
                    i &+= 1
                    fields.put(back, .back)
                }
            } else {
                p[i] = RecordTag.reallocFreeRecent
                i &+= 1
                fields.put(back, .back)
            }
        } else {
            let slot = chooseSlot(address)
            if function == .free {
                p[i] = RecordTag.freeSlot | UInt8(truncatingIfNeeded: slot)
                i &+= 1
            } else {
                p[i] = RecordTag.reallocFreeSlot
                p[i &+ 1] = UInt8(truncatingIfNeeded: slot)
                i &+= 2
            }
            fields.put(Varint.zigzag(address &- compact.slots[slot]), .address)
            compact.slots[slot] = address
        }
        compact.noteFree(address)
        position = i
        events &+= 1
        flushIfFull()
    }

    /// Appends a reallocUndo (`0x07`): the realloc that freed `address` failed.
    public func appendReallocUndo(address: UInt64) {
        guard writable else { return }
        let p = buffer
        let slot = chooseSlot(address)
        p[position] = RecordTag.reallocUndoSlot
        p[position &+ 1] = UInt8(truncatingIfNeeded: slot)
        position &+= 2
        fields.put(Varint.zigzag(address &- compact.slots[slot]), .address)
        compact.slots[slot] = address
        events &+= 1
        flushIfFull()
    }

    /// The address slot to delta-encode `address` against: the one whose last address is
    /// nearest. None within 16 MiB (a new arena or mapping): the least recently used one,
    /// so that the slots follow the regions in use (each thread's arena, the main heap...).
    @inline(__always)
    private func chooseSlot(_ address: UInt64) -> Int {
        var best = 0
        var bestDistance = UInt64.max
        for s in 0..<TraceFormat.addressSlots {
            let base = compact.slots[s]
            let distance = base > address ? base &- address : address &- base
            if distance < bestDistance {
                bestDistance = distance
                best = s
            }
        }
        if bestDistance > 1 << 24 {
            var oldest = 0
            for s in 1..<TraceFormat.addressSlots where slotUse[s] < slotUse[oldest] { oldest = s }
            best = oldest
        }
        clock &+= 1
        slotUse[best] = clock
        return best
    }

    /// Index in the recent-allocation table for `address` (Fibonacci hashing; blocks are
    /// 16-aligned, so the low bits carry nothing).
    @inline(__always)
    @usableFromInline static func recentHash(_ address: UInt64) -> Int {
        Int(truncatingIfNeeded: ((address &>> 4) &* 0x9E37_79B9_7F4A_7C15) &>> UInt64(64 - recentBits))
    }

    // MARK: Definitions

    /// The addresses last added to ``frameAddresses``, direct-mapped: a new stack's frames are
    /// mostly those of stacks defined just before (its outer part), and this table answers
    /// "already there" with one load where the set hashes every address (a test suite's 3.8 M
    /// stacks of ~60 frames: SipHash and the set insert were 13 % of the collector's CPU).
    private var recentFrames: UnsafeMutablePointer<UInt64>?
    private static let recentFrameBits = 14

    @inline(__always)
    private func noteFrameAddress(_ address: UInt64) {
        let table: UnsafeMutablePointer<UInt64>
        if let t = recentFrames {
            table = t
        } else {
            table = .allocate(capacity: 1 << Self.recentFrameBits)
            table.initialize(repeating: 0, count: 1 << Self.recentFrameBits)
            recentFrames = table
        }
        let h = Int(truncatingIfNeeded: (address &* 0x9E37_79B9_7F4A_7C15) &>> UInt64(64 - Self.recentFrameBits))
        if table[h] == address { return }
        table[h] = address
        frameAddresses.insert(address)
    }

    /// Defines stack `id` (innermost frame first). Only the first 1024 frames are kept;
    /// an empty stack is written as the single frame 0 so the id stays defined.
    /// Id 0 means "no stack" and is ignored.
    public func defineStack(id: UInt32, frames: UnsafeBufferPointer<UInt64>) {
        guard writable, id != 0 else { return }
        let count = min(frames.count, TraceFormat.maxFrames)
        if keepsSymbolInputs {
            for k in 0..<count where frames[k] != 0 { noteFrameAddress(frames[k]) }
        }
        reserve(1 + 2 * Varint.maxBytes + max(count, 1) * Varint.maxBytes)
        let p = buffer
        var i = position
        p[i] = RecordTag.stack
        i = Varint.put(UInt64(id), into: p, at: i &+ 1)
        if count == 0 {
            i = Varint.put(1, into: p, at: i)
            p[i] = 0
            i &+= 1
        } else {
            i = Varint.put(UInt64(count), into: p, at: i)
            var previous: UInt64 = 0
            for k in 0..<count {
                let frame = frames[k]
                i = Varint.put(Varint.zigzag(frame &- previous), into: p, at: i)
                previous = frame
            }
        }
        position = i
        endLargeRecord()
    }

    /// Defines stack `id` from an array (convenience for ``defineStack(id:frames:)``).
    public func defineStack(id: UInt32, frames: [UInt64]) {
        frames.withUnsafeBufferPointer { defineStack(id: id, frames: $0) }
    }

    /// Defines type `id`: Swift type metadata address and (demangled) name, cut to 64 KiB.
    /// Id 0 means "no type" and is ignored.
    public func defineType(id: UInt32, metadata: UInt64, name: String) {
        guard writable, id != 0 else { return }
        reserve(1 + 3 * Varint.maxBytes + Self.cappedCount(name))
        let p = buffer
        p[position] = RecordTag.type
        position = Varint.put(UInt64(id), into: p, at: position &+ 1)
        position = Varint.put(metadata, into: p, at: position)
        putString(name)
        endLargeRecord()
    }

    /// Appends a `moduleLoad` record (at most 64 segments; path and build ID cut to 64 KiB).
    public func moduleLoad(_ module: ModuleRecord) {
        guard writable else { return }
        if keepsSymbolInputs { modules.append(module) }
        let segments = module.segments.prefix(TraceFormat.maxSegments)
        let buildIDCount = min(module.buildID.count, TraceFormat.maxStringBytes)
        reserve(1 + 4 * Varint.maxBytes + Self.cappedCount(module.path) + buildIDCount + segments.count * 3 * Varint.maxBytes)
        let p = buffer
        p[position] = RecordTag.moduleLoad
        position = Varint.put(module.loadBias, into: p, at: position &+ 1)
        putString(module.path)
        position = Varint.put(UInt64(buildIDCount), into: p, at: position)
        module.buildID.withUnsafeBufferPointer { bytes in
            if let base = bytes.baseAddress, buildIDCount > 0 {
                (p + position).update(from: base, count: buildIDCount)
            }
        }
        position &+= buildIDCount
        position = Varint.put(UInt64(segments.count), into: p, at: position)
        for segment in segments {
            position = Varint.put(segment.vaddr, into: p, at: position)
            position = Varint.put(segment.memsz, into: p, at: position)
            position = Varint.put(UInt64(segment.flags), into: p, at: position)
        }
        endLargeRecord()
    }

    /// Appends a `moduleUnload` record for the module loaded at `loadBias`.
    public func moduleUnload(loadBias: UInt64) {
        guard writable else { return }
        let p = buffer
        p[position] = RecordTag.moduleUnload
        position = Varint.put(loadBias, into: p, at: position &+ 1)
        flushIfFull()
    }

    // MARK: Marks and bookkeeping

    /// Appends a generation mark (label cut to 64 KiB) and flushes the chunk.
    /// `timeNanoseconds` is CLOCK_MONOTONIC.
    public func mark(label: String, timeNanoseconds: UInt64, origin: MarkOrigin) {
        guard writable else { return }
        reserve(2 + 2 * Varint.maxBytes + Self.cappedCount(label))
        let p = buffer
        p[position] = RecordTag.mark
        position = Varint.put(timeNanoseconds, into: p, at: position &+ 1)
        p[position] = origin.rawValue
        position &+= 1
        putString(label)
        events &+= 1
        flushPending()
    }

    /// Appends a `threadStart` record.
    public func threadStart(tid: UInt32) {
        guard writable else { return }
        let p = buffer
        p[position] = RecordTag.threadStart
        position = Varint.put(UInt64(tid), into: p, at: position &+ 1)
        flushIfFull()
    }

    /// Appends a `stackTruncated` record: stack `id`, defined just before, was cut at the
    /// recording's frame limit.
    public func stackTruncated(id: UInt32) {
        guard writable, id != 0 else { return }
        let p = buffer
        p[position] = RecordTag.stackTruncated
        position = Varint.put(UInt64(id), into: p, at: position &+ 1)
        flushIfFull()
    }

    /// Appends a `lost` record: the shim gave up `count` events here.
    public func lost(count: UInt64) {
        guard writable else { return }
        let p = buffer
        p[position] = RecordTag.lost
        position = Varint.put(count, into: p, at: position &+ 1)
        flushIfFull()
    }

    /// Appends `unreachable` records for `addresses` (sorted here; split into records of at
    /// most 65536 addresses). An empty list is one record with count 0: a scan that found
    /// every block reachable.
    public func unreachable(_ addresses: [UInt64]) {
        guard writable else { return }
        let sorted = addresses.sorted()
        var start = 0
        repeat {
            let end = min(sorted.count, start + TraceFormat.maxUnreachable)
            reserve(1 + Varint.maxBytes + (end - start) * Varint.maxBytes)
            let p = buffer
            var i = position
            p[i] = RecordTag.unreachable
            i = Varint.put(UInt64(end - start), into: p, at: i &+ 1)
            var previous: UInt64 = 0
            for k in start..<end {
                i = Varint.put(Varint.zigzag(sorted[k] &- previous), into: p, at: i)
                previous = sorted[k]
            }
            position = i
            endLargeRecord()
            start = end
        } while start < sorted.count
    }

    /// Appends `symbols` records (minor version 3) for one module, after every other record
    /// but `end`: the pending chunk is flushed first, so the symbols start a chunk of their
    /// own, and a long list is split into several records. After this, append only more
    /// symbols and then ``finish(_:)``.
    public func appendSymbols(_ record: SymbolsRecord) {
        guard writable else { return }
        flushPending()
        // Readers find symbols by a chunk's first byte (TraceReader.storedSymbols()).
        compressing = false
        for bytes in Self.symbolRecords(record) {
            reserve(bytes.count)
            bytes.withUnsafeBufferPointer { (buffer + position).update(from: $0.baseAddress!, count: $0.count) }
            position &+= bytes.count
            endLargeRecord()
        }
    }

    /// `record` encoded as one or more records, each well under the chunk limit.
    static func symbolRecords(_ record: SymbolsRecord) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var pending = record.entries[...]
        let limit = TraceFormat.maxChunkPayload / 4
        while !pending.isEmpty || out.isEmpty {
            var n = min(pending.count, SymbolsRecord.maxEntries)
            while true {
                var part = record
                part.entries = Array(pending.prefix(n))
                let bytes = part.encoded()
                if bytes.count <= limit || n <= 1 {
                    out.append(bytes)
                    break
                }
                n /= 2
            }
            pending = pending.dropFirst(n)
            if pending.isEmpty { break }
        }
        return out
    }

    /// Appends `indirectLeaks` records for `leaks` (sorted by address here; split into
    /// records of at most 65536 entries). Nothing for an empty list.
    public func indirectLeaks(_ leaks: [IndirectLeak]) {
        guard writable, !leaks.isEmpty else { return }
        let sorted = leaks.sorted { $0.address < $1.address }
        var start = 0
        while start < sorted.count {
            let end = min(sorted.count, start + TraceFormat.maxUnreachable)
            reserve(1 + Varint.maxBytes + (end - start) * 2 * Varint.maxBytes)
            let p = buffer
            var i = position
            p[i] = RecordTag.indirectLeaks
            i = Varint.put(UInt64(end - start), into: p, at: i &+ 1)
            var previous: UInt64 = 0
            for k in start..<end {
                i = Varint.put(Varint.zigzag(sorted[k].address &- previous), into: p, at: i)
                i = Varint.put(Varint.zigzag(sorted[k].owner &- sorted[k].address), into: p, at: i)
                previous = sorted[k].address
            }
            position = i
            endLargeRecord()
            start = end
        }
    }

    /// Appends a `programSuppressions` record: the text of the program's
    /// `__lsan_default_suppressions()` (cut to 64 KiB).
    public func programSuppressions(_ text: String) {
        appendText(tag: RecordTag.programSuppressions, text)
    }

    /// Appends a `recordingWarning` record (minor version 8): what heapgen warned about this
    /// process while recording it (cut to 64 KiB).
    public func recordingWarning(_ text: String) {
        appendText(tag: RecordTag.recordingWarning, text)
    }

    /// A record of a tag and one string.
    private func appendText(tag: UInt8, _ text: String) {
        guard writable else { return }
        reserve(1 + Varint.maxBytes + Self.cappedCount(text))
        buffer[position] = tag
        position &+= 1
        putString(text)
        endLargeRecord()
    }

    /// Appends a `referenceGraph` (minor version 4) as its run of part records.
    public func referenceGraph(_ graph: ReferenceGraphRecord) {
        guard writable else { return }
        graph.encodeParts { bytes in
            reserve(bytes.count)
            bytes.withUnsafeBufferPointer { (buffer + position).update(from: $0.baseAddress!, count: $0.count) }
            position &+= bytes.count
            endLargeRecord()
        }
    }

    // MARK: Aggregated traces

    /// Sets the header's aggregated flag (``TraceFormat/aggregatedFlag``): the trace's heap
    /// events are ``aggregate(epoch:untrackedFrees:entries:)`` records. Call once, right after
    /// creating the writer.
    ///
    /// - Throws: ``TraceError`` (`.io`) if the header cannot be rewritten.
    public func markAggregated() throws {
        var flags = TraceFormat.aggregatedFlag.littleEndian
        let n = withUnsafeBytes(of: &flags) { raw in pwrite(fd, raw.baseAddress!, raw.count, 12) }
        if n != 4 {
            let e = errno
            let error = TraceError(.io, "cannot write trace header: \(SystemCalls.errorString(e))", offset: 12, file: path)
            if firstError == nil { firstError = error }
            writable = false
            throw error
        }
    }

    /// Appends `aggregate` records closing epoch `epoch` (split at 65,536 entries): per
    /// group, blocks allocated and freed in the epoch, and `untrackedFrees` frees of
    /// addresses that were not live. Counts the events a reader expands them to.
    public func aggregate(epoch: UInt64, untrackedFrees: UInt64, entries: [AggregateEntry]) {
        guard writable, untrackedFrees > 0 || !entries.isEmpty else { return }
        // Counts above the format's limit go into several entries (records) of the same group.
        let limit = TraceFormat.maxAggregateCount
        var entries = entries
        if entries.contains(where: { $0.allocated > limit || $0.freed > limit || $0.undone > limit }) {
            entries = entries.flatMap { e -> [AggregateEntry] in
                let parts = (max(e.allocated, e.freed, e.undone) + limit - 1) / limit
                return (0..<max(parts, 1)).map { i in
                    func part(_ n: UInt64) -> UInt64 { n > i * limit ? min(n - i * limit, limit) : 0 }
                    return AggregateEntry(stack: e.stack, type: e.type, size: e.size, birth: e.birth,
                                          allocated: part(e.allocated), freed: part(e.freed), undone: part(e.undone))
                }
            }
        }
        var untrackedLeft = untrackedFrees
        while untrackedLeft > limit {
            aggregate(epoch: epoch, untrackedFrees: limit, entries: [])
            untrackedLeft -= limit
        }
        let untrackedFrees = untrackedLeft
        guard untrackedFrees > 0 || !entries.isEmpty else { return }
        var start = 0
        repeat {
            let end = min(entries.count, start + TraceFormat.maxAggregateEntries)
            let untracked = start == 0 ? untrackedFrees : 0
            reserve(1 + 3 * Varint.maxBytes + (end - start) * 7 * Varint.maxBytes)
            let p = buffer
            p[position] = RecordTag.aggregate
            position = Varint.put(epoch, into: p, at: position &+ 1)
            position = Varint.put(untracked, into: p, at: position)
            position = Varint.put(UInt64(end - start), into: p, at: position)
            events &+= untracked
            for entry in entries[start..<end] {
                position = Varint.put(UInt64(entry.stack), into: p, at: position)
                position = Varint.put(UInt64(entry.type), into: p, at: position)
                position = Varint.put(entry.size, into: p, at: position)
                position = Varint.put(entry.birth, into: p, at: position)
                position = Varint.put(entry.allocated, into: p, at: position)
                position = Varint.put(entry.freed, into: p, at: position)
                position = Varint.put(entry.undone, into: p, at: position)
                events &+= entry.allocated &+ entry.freed &+ 2 &* entry.undone
            }
            endLargeRecord()
            start = end
        } while start < entries.count
    }

    /// Writes the pending chunk.
    ///
    /// - Throws: ``TraceError`` (`.io`): this write's error, or the earlier ``failure``.
    public func flush() throws {
        flushPending()
        if let failure { throw failure }
    }

    /// Appends the end record, flushes and closes the file. `end.eventCount` is
    /// ignored: the writer writes its own ``eventCount``. Appends after this are dropped.
    ///
    /// - Throws: ``TraceError`` (`.io`) if any write failed, or the trace was already finished.
    public func finish(_ end: EndRecord) throws {
        guard fd >= 0 else {
            throw failure ?? TraceError(.io, "trace already finished", file: path)
        }
        if writable {
            // The end record gets a chunk of its own, so that stored symbols can be added to a
            // finished trace by rewriting only that chunk (``TraceSymbolAppender``).
            flushPending()
            let p = buffer
            var i = position
            p[i] = RecordTag.end
            p[i &+ 1] = end.reason.rawValue
            i = Varint.put(UInt64(UInt32(bitPattern: end.status)), into: p, at: i &+ 2)
            for value in [end.producerWaits, end.producerWaitNanoseconds, end.lostEvents, end.tornEvents,
                          end.arenaFull, end.freeNullCalls, end.unwindFallbacks, eventCount, end.stacksLost] {
                i = Varint.put(value, into: p, at: i)
            }
            position = i
            flushPending()
        }
        writable = false
        let closeResult = close(fd)
        let closeErrno = errno
        fd = -1
        if let failure { throw failure }
        if closeResult != 0 {
            let error = TraceError(.io, "cannot close trace: \(SystemCalls.errorString(closeErrno))", offset: bytesWritten, file: path)
            firstError = error
            throw error
        }
    }

    // MARK: Encoding helpers

    /// Encodes the process record into the (empty) chunk.
    private func encodeProcess(_ process: ProcessRecord) {
        var arguments = 0
        var budget = Self.argumentBudget
        for argument in process.arguments.prefix(TraceFormat.maxArguments) {
            let cost = Varint.maxBytes + Self.cappedCount(argument)
            if cost > budget { break }
            budget -= cost
            arguments += 1
        }
        reserve(3 + 5 * Varint.maxBytes + Self.cappedCount(process.executable) + (Self.argumentBudget - budget))
        let p = buffer
        p[position] = RecordTag.process
        position = Varint.put(UInt64(UInt32(bitPattern: process.pid)), into: p, at: position &+ 1)
        position = Varint.put(UInt64(UInt32(bitPattern: process.ppid)), into: p, at: position)
        p[position] = process.origin.rawValue
        position &+= 1
        putString(process.executable)
        position = Varint.put(UInt64(arguments), into: p, at: position)
        for argument in process.arguments.prefix(arguments) {
            putString(argument)
        }
        position = Varint.put(process.startUnixNanoseconds, into: p, at: position)
    }

    /// UTF-8 byte count of `string` as written (cut to 64 KiB).
    private static func cappedCount(_ string: String) -> Int {
        min(string.utf8.count, TraceFormat.maxStringBytes)
    }

    /// Writes `string` (length + UTF-8, cut to 64 KiB on a character boundary).
    /// Room was reserved by the caller.
    private func putString(_ string: String) {
        var string = string
        string.withUTF8 { utf8 in
            var count = utf8.count
            if count > TraceFormat.maxStringBytes {
                count = TraceFormat.maxStringBytes
                // Do not split a UTF-8 sequence: back off over continuation bytes.
                while count > 0 && (utf8[count] & 0xC0) == 0x80 { count -= 1 }
            }
            position = Varint.put(UInt64(count), into: buffer, at: position)
            if let base = utf8.baseAddress, count > 0 {
                (buffer + position).update(from: base, count: count)
            }
            position &+= count
        }
    }

    /// Makes room for a record of at most `bytes` bytes, flushing first if the
    /// chunk would otherwise exceed the format's limit, and growing the buffer.
    private func reserve(_ bytes: Int) {
        let needed = position + bytes + Self.smallRecordRoom
        if pendingBytes > 0 && pendingBytes + bytes > TraceFormat.maxChunkPayload {
            flushPending()
        }
        if position + bytes + Self.smallRecordRoom > capacity {
            let newCapacity = max(needed, capacity * 2)
            let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
            grown.update(from: buffer, count: position)
            buffer.deallocate()
            buffer = grown
            capacity = newCapacity
        }
    }

    /// Writes the pending chunk once its records and event fields reach the threshold.
    @inline(__always)
    private func flushIfFull() {
        if pendingBytes >= TraceFormat.flushThreshold { flushPending() }
    }

    /// After a variable-size record: flush at the threshold, and give back a grown buffer.
    private func endLargeRecord() {
        flushIfFull()
        if capacity > 4 * Self.defaultCapacity && pendingBytes == 0 {
            buffer.deallocate()
            capacity = Self.defaultCapacity
            buffer = .allocate(capacity: capacity)
        }
    }

    /// Writes the pending chunk, if any: a column chunk when it holds event fields, else
    /// compressed when that makes it smaller. On error, records ``failure`` and stops appends.
    private func flushPending() {
        let payload = position - TraceFormat.chunkHeaderSize
        let columns = fields.total > 0
        guard payload > 0 || columns else { return }
        position = TraceFormat.chunkHeaderSize
        defer { fields.reset() }
        guard fd >= 0, firstError == nil else { return }
        var raw = UnsafeMutableRawPointer(buffer)
        var stored = payload
        var lengthWord = UInt32(payload)
        let records = UnsafeRawBufferPointer(start: raw + TraceFormat.chunkHeaderSize, count: payload)
        let encoded: Int?
        if columns {
            let streams = [records] + (0..<(ColumnChunk.streamCount - 1)).map { fields.stream($0) }
            encoded = compressor.encodeColumns(streams, compress: compressing, headerRoom: TraceFormat.chunkHeaderSize)
        } else {
            encoded = compressing ? compressor.compress(records, headerRoom: TraceFormat.chunkHeaderSize) : nil
        }
        if let n = encoded {
            raw = compressor.output
            stored = n
            lengthWord = UInt32(n) | ChunkCompression.flag
        }
        let crc = CRC32C.checksum(UnsafeRawBufferPointer(start: raw + TraceFormat.chunkHeaderSize, count: stored))
        raw.storeBytes(of: lengthWord.littleEndian, toByteOffset: 0, as: UInt32.self)
        raw.storeBytes(of: crc.littleEndian, toByteOffset: 4, as: UInt32.self)
        let total = TraceFormat.chunkHeaderSize + stored
        if let e = SystemCalls.writeAll(fd, raw, total) {
            firstError = TraceError(.io, "cannot write trace: \(SystemCalls.errorString(e))", offset: bytesWritten, file: path)
            writable = false
            return
        }
        written &+= UInt64(total)
    }
}
