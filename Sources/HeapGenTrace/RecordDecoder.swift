// Decodes and validates the records of one chunk payload.

/// Validation state carried from chunk to chunk while reading one trace.
struct RecordDecoder {
    let file: String
    /// Delta base for the addresses of minor ≤ 4 events (tags 0x01–0x03).
    var previousAddress: UInt64 = 0
    /// Delta bases and recent allocations of compact events (minor version 5).
    let compact = CompactEventState()
    var stacks = IdSet()
    var types = IdSet()
    var sawProcess = false
    var sawEnd = false
    /// A `symbols` record was seen: only `symbols` and `end` may follow.
    var sawSymbols = false
    /// Alloc, free, reallocUndo and mark records so far.
    var events: UInt64 = 0
    var records: UInt64 = 0
    /// A `referenceGraph` being read: only its parts may come until its end part.
    var graph: ReferenceGraphAssembly?
    /// Expands `aggregate` records (aggregated traces) into heap events.
    var aggregate = AggregateExpander()

    init(file: String) {
        self.file = file
    }

    /// Decodes every record of `payload` (file offset `fileOffset`), calling `body` for each.
    /// With `fixedOffset` (a decompressed payload), errors name `fileOffset` itself.
    mutating func decode(chunk payload: UnsafeRawBufferPointer, fileOffset: UInt64, fixedOffset: Bool = false,
                         _ body: (TraceRecord) throws -> Void) throws {
        var c = ByteCursor(payload, fileOffset: fileOffset, file: file, fixedOffset: fixedOffset)
        var fields = InlineFields()
        try decode(&c, &fields, body)
    }

    /// Decodes the records of a column chunk (minor version 6): `streams` are its records
    /// stream and then its field streams; every stream must be read to its end.
    mutating func decode(columns streams: [UnsafeRawBufferPointer], fileOffset: UInt64,
                         _ body: (TraceRecord) throws -> Void) throws {
        var c = ByteCursor(streams[0], fileOffset: fileOffset, file: file, fixedOffset: true)
        var fields = ColumnFields(streams[1...])
        try decode(&c, &fields, body)
        try fields.checkConsumed(c)
    }

    /// Decodes the records of `c`; event records take their varint fields from `fields`
    /// (specialized for each source, so inline fields cost what they did before columns).
    private mutating func decode<Fields: EventFields>(_ c: inout ByteCursor, _ fields: inout Fields,
                                                     _ body: (TraceRecord) throws -> Void) throws {
        let slots = compact.slots
        // Symbols records start their chunk: only symbols records come before one in a chunk.
        var onlySymbolsSoFar = true
        while !c.atEnd {
            let start = c.position
            if sawEnd { throw c.corrupt("record after the end record", at: start) }
            let tag = c.base[start]
            c.skip(1)
            if tag == RecordTag.symbols {
                if !onlySymbolsSoFar { throw c.corrupt("a symbols record that does not start its chunk", at: start) }
            } else {
                onlySymbolsSoFar = false
                if sawSymbols && tag != RecordTag.end {
                    throw c.corrupt("record tag \(hex(tag)) after the symbols records (only end may follow them)", at: start)
                }
            }
            if graph != nil && tag != RecordTag.referenceGraph {
                throw c.corrupt("record tag \(hex(tag)) inside a reference graph (before its end part)", at: start)
            }
            if !sawProcess && tag != RecordTag.process {
                throw c.corrupt("first record has tag \(hex(tag)), not process (0x20)", at: start)
            }
            records &+= 1
            switch tag {
            case RecordTag.mallocSlot...(RecordTag.mallocSlot | 7):
                let slot = Int(tag & 7)
                let address = try fields.delta(from: slots[slot], &c)
                slots[slot] = address
                let size = try fields.varint(.size, &c)
                let stack = try Self.usedID(&fields, &c, "stack id", "stack", in: stacks)
                compact.noteAllocation(address, size: size)
                events &+= 1
                try body(.allocation(function: .malloc, address: address, size: size, stack: stack, type: 0))

            case RecordTag.mallocReuse...(RecordTag.mallocReuseClass &+ 7):
                let size = try fields.varint(.size, &c)
                let address: UInt64
                if tag < RecordTag.mallocReuseClass {
                    let back = Int(tag &- RecordTag.mallocReuse)
                    guard let freed = compact.recentFree(back) else {
                        throw c.corrupt("malloc names the free \(back) frees back, but there were \(compact.frees)", at: start)
                    }
                    address = freed
                } else {
                    let back = Int(tag &- RecordTag.mallocReuseClass)
                    guard let freed = compact.recentFree(back, ofSize: size) else {
                        throw c.corrupt("malloc of \(size) bytes names the free \(back) frees of its size class back, which is not known (size classes: up to 1032 bytes)", at: start)
                    }
                    address = freed
                }
                let stack = try Self.usedID(&fields, &c, "stack id", "stack", in: stacks)
                compact.noteAllocation(address, size: size)
                events &+= 1
                try body(.allocation(function: .malloc, address: address, size: size, stack: stack, type: 0))

            case RecordTag.freeRecentShort...(RecordTag.freeRecentShort | 15):
                let address = try compact.recentAllocation(UInt64(tag & 15), &c, at: start)
                compact.noteFree(address)
                events &+= 1
                try body(.free(function: .free, address: address))

            case RecordTag.freeSlot...(RecordTag.freeSlot | 7):
                let slot = Int(tag & 7)
                let address = try fields.delta(from: slots[slot], &c)
                slots[slot] = address
                compact.noteFree(address)
                events &+= 1
                try body(.free(function: .free, address: address))

            case RecordTag.freeRecent, RecordTag.reallocFreeRecent:
                let back = try fields.varint(.back, &c)
                let address = try compact.recentAllocation(back, &c, at: start)
                compact.noteFree(address)
                events &+= 1
                try body(.free(function: tag == RecordTag.freeRecent ? .free : .realloc, address: address))

            case RecordTag.allocation:
                let code = try c.byte()
                guard let function = AllocationFunction(rawValue: code & 0x0F), code >> 4 < 8 else {
                    throw c.corrupt("bad allocation function and slot byte \(hex(code))", at: start &+ 1)
                }
                let slot = Int(code >> 4)
                let address = try fields.delta(from: slots[slot], &c)
                slots[slot] = address
                try body(allocation(&c, &fields, function: function, address: address))

            case RecordTag.reallocFreeSlot, RecordTag.reallocUndoSlot:
                let slotAt = c.position
                let slot = Int(try c.byte())
                guard slot < TraceFormat.addressSlots else { throw c.corrupt("address slot \(slot) is not 0…7", at: slotAt) }
                let address = try fields.delta(from: slots[slot], &c)
                slots[slot] = address
                if tag == RecordTag.reallocFreeSlot { compact.noteFree(address) }
                events &+= 1
                try body(tag == RecordTag.reallocFreeSlot ? .free(function: .realloc, address: address) : .reallocUndo(address: address))

            case RecordTag.alloc:
                let code = try c.byte()
                guard let function = AllocationFunction(rawValue: code) else {
                    throw c.corrupt("unknown allocation function \(code)", at: start &+ 1)
                }
                let address = try fields.delta(from: previousAddress, &c)
                previousAddress = address
                try body(allocation(&c, &fields, function: function, address: address))

            case RecordTag.free:
                let code = try c.byte()
                guard let function = FreeFunction(rawValue: code) else {
                    throw c.corrupt("unknown free function \(code)", at: start &+ 1)
                }
                let address = try fields.delta(from: previousAddress, &c)
                previousAddress = address
                compact.noteFree(address)
                events &+= 1
                try body(.free(function: function, address: address))

            case RecordTag.reallocUndo:
                let address = try fields.delta(from: previousAddress, &c)
                previousAddress = address
                events &+= 1
                try body(.reallocUndo(address: address))

            case RecordTag.stack:
                let id = try Self.definedID(&c, "stack id", in: &stacks, start: start)
                let countAt = c.position
                let count = try c.length("frame count", limit: TraceFormat.maxFrames)
                if count == 0 { throw c.corrupt("stack \(id) has no frames", at: countAt) }
                var frames = [UInt64]()
                frames.reserveCapacity(count)
                var previous: UInt64 = 0
                for _ in 0..<count {
                    previous = try c.delta(from: previous)
                    frames.append(previous)
                }
                try body(.stack(id: id, frames: frames))

            case RecordTag.stackTruncated:
                let idAt = c.position
                let id = try c.varint32("stack id")
                if !stacks.contains(id) {
                    throw c.corrupt("truncated stack \(id) is not defined", at: idAt)
                }
                try body(.stackTruncated(id: id))

            case RecordTag.type:
                let id = try Self.definedID(&c, "type id", in: &types, start: start)
                let metadata = try c.varint()
                // Traces written before the collector made names stable get it here.
                let name = StableTypeName.of(try c.string("type name length"))
                try body(.type(id: id, metadata: metadata, name: name))

            case RecordTag.moduleLoad:
                let loadBias = try c.varint()
                let path = try c.string("module path length")
                let buildID = try c.bytes("build ID length")
                let count = try c.length("segment count", limit: TraceFormat.maxSegments)
                var segments = [ModuleRecord.Segment]()
                segments.reserveCapacity(count)
                for _ in 0..<count {
                    let vaddr = try c.varint()
                    let memsz = try c.varint()
                    let flags = try c.varint32("segment flags")
                    segments.append(.init(vaddr: vaddr, memsz: memsz, flags: flags))
                }
                try body(.moduleLoad(ModuleRecord(loadBias: loadBias, path: path, buildID: buildID, segments: segments)))

            case RecordTag.moduleUnload:
                try body(.moduleUnload(loadBias: try c.varint()))

            case RecordTag.mark:
                let time = try c.varint()
                let originAt = c.position
                let code = try c.byte()
                guard let origin = MarkOrigin(rawValue: code) else {
                    throw c.corrupt("unknown mark origin \(code)", at: originAt)
                }
                let label = try c.string("mark label length")
                events &+= 1
                try body(.mark(label: label, timeNanoseconds: time, origin: origin))

            case RecordTag.threadStart:
                try body(.threadStart(tid: try c.varint32("thread id")))

            case RecordTag.lost:
                try body(.lost(count: try c.varint()))

            case RecordTag.unreachable:
                let count = try c.length("unreachable count", limit: TraceFormat.maxUnreachable)
                var addresses = [UInt64]()
                addresses.reserveCapacity(count)
                var previous: UInt64 = 0
                for _ in 0..<count {
                    previous = try c.delta(from: previous)
                    addresses.append(previous)
                }
                try body(.unreachable(addresses))

            case RecordTag.indirectLeaks:
                let count = try c.length("indirect leak count", limit: TraceFormat.maxUnreachable)
                var leaks = [IndirectLeak]()
                leaks.reserveCapacity(count)
                var previous: UInt64 = 0
                for _ in 0..<count {
                    previous = try c.delta(from: previous)
                    let owner = try c.delta(from: previous)
                    leaks.append(IndirectLeak(address: previous, owner: owner))
                }
                try body(.indirectLeaks(leaks))

            case RecordTag.programSuppressions:
                try body(.programSuppressions(try c.string("program suppressions")))

            case RecordTag.recordingWarning:
                try body(.recordingWarning(try c.string("recording warning")))

            case RecordTag.referenceGraph:
                let partAt = c.position
                let code = try c.byte()
                guard let part = ReferenceGraphRecord.Part(rawValue: code) else {
                    throw c.corrupt("unknown reference graph part \(code)", at: partAt)
                }
                if part == .header {
                    if graph != nil { throw c.corrupt("reference graph header inside another reference graph", at: start) }
                    graph = try ReferenceGraphAssembly.header(&c)
                } else {
                    guard graph != nil else { throw c.corrupt("reference graph part \(code) without its header", at: start) }
                    if try graph!.decode(part, &c, partAt: partAt) {
                        let record = graph!.record
                        graph = nil
                        try body(.referenceGraph(record))
                    }
                }

            case RecordTag.process:
                if sawProcess { throw c.corrupt("second process record", at: start) }
                sawProcess = true
                let pid = try c.int32("pid")
                let ppid = try c.int32("ppid")
                let originAt = c.position
                let code = try c.byte()
                guard let origin = ProcessOrigin(rawValue: code) else {
                    throw c.corrupt("unknown process origin \(code)", at: originAt)
                }
                let executable = try c.string("executable path length")
                let count = try c.length("argument count", limit: TraceFormat.maxArguments)
                var arguments = [String]()
                arguments.reserveCapacity(count)
                for _ in 0..<count {
                    arguments.append(try c.string("argument length"))
                }
                let start = try c.varint()
                try body(.process(ProcessRecord(pid: pid, ppid: ppid, origin: origin, executable: executable,
                                                arguments: arguments, startUnixNanoseconds: start)))

            case RecordTag.end:
                let reasonAt = c.position
                let code = try c.byte()
                guard let reason = EndReason(rawValue: code) else {
                    throw c.corrupt("unknown end reason \(code)", at: reasonAt)
                }
                let status = try c.int32("exit status")
                var end = EndRecord(reason: reason, status: status)
                end.producerWaits = try c.varint()
                end.producerWaitNanoseconds = try c.varint()
                end.lostEvents = try c.varint()
                end.tornEvents = try c.varint()
                end.arenaFull = try c.varint()
                end.freeNullCalls = try c.varint()
                end.unwindFallbacks = try c.varint()
                let countAt = c.position
                end.eventCount = try c.varint()
                if end.eventCount != events {
                    throw c.corrupt("end record counts \(end.eventCount) events but the file has \(events)", at: countAt)
                }
                // Minor version 2 appends stacksLost; older files end here.
                if !c.atEnd { end.stacksLost = try c.varint() }
                if !c.atEnd { throw c.corrupt("record after the end record") }
                sawEnd = true
                try body(.end(end))

            case RecordTag.aggregate:
                try aggregate.expand(&c, stacks: stacks, types: types, events: &events, body)

            case RecordTag.symbols:
                sawSymbols = true
                _ = try SymbolsRecord.decode(&c)

            case RecordTag.extension:
                let n = try c.length("extension length", limit: TraceFormat.maxChunkPayload)
                c.skip(n)

            default:
                throw c.corrupt("unknown record tag \(hex(tag))", at: start)
            }
        }
    }

    /// The rest of an `allocation` or `alloc` record after its address (size, stack id, type
    /// id), noted in the compact-event state and the event count.
    @inline(__always)
    private mutating func allocation<Fields: EventFields>(_ c: inout ByteCursor, _ fields: inout Fields,
                                                          function: AllocationFunction,
                                                          address: UInt64) throws -> TraceRecord {
        let size = try fields.varint(.size, &c)
        let stack = try Self.usedID(&fields, &c, "stack id", "stack", in: stacks)
        let type = try Self.usedID(&fields, &c, "type id", "type", in: types)
        compact.noteAllocation(address, size: size)
        events &+= 1
        return .allocation(function: function, address: address, size: size, stack: stack, type: type)
    }

    /// Reads a stack or type id for a definition: non-zero, 32-bit, not defined before.
    /// Reads the stack or type id an allocation uses: 0 (none) or one defined before it.
    @inline(__always)
    private static func usedID<Fields: EventFields>(_ fields: inout Fields, _ c: inout ByteCursor, _ what: StaticString,
                                                    _ noun: StaticString, in set: IdSet) throws(TraceError) -> UInt32 {
        let at = c.position
        let value = try fields.varint(.id, &c)
        guard let id = UInt32(exactly: value) else { throw c.corrupt("\(what) \(value) does not fit in 32 bits", at: at) }
        if id != 0 && !set.contains(id) {
            throw c.corrupt("alloc uses \(noun) \(id), which is not defined", at: at)
        }
        return id
    }

    private static func definedID(_ c: inout ByteCursor, _ what: StaticString, in set: inout IdSet, start: Int) throws(TraceError) -> UInt32 {
        let at = c.position
        let id = try c.varint32(what)
        if id == 0 { throw c.corrupt("\(what) 0 is reserved for \"none\" and cannot be defined", at: at) }
        if !set.insert(id) { throw c.corrupt("\(what) \(id) is defined twice", at: start) }
        return id
    }
}

/// `0x2a`-style rendering of a byte.
func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16)
    return byte < 0x10 ? "0x0" + digits : "0x" + digits
}

/// `0x…` rendering of a 64-bit value.
func hex(_ value: UInt64) -> String {
    "0x" + String(value, radix: 16)
}
