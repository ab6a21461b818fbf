// A heap profile as a gzipped perftools.profiles.Profile (pprof's profile.proto).

import HeapGenSymbolication
import HeapGenTrace

/// Builds pprof profiles from a ``HeapProfile``.
///
/// - Sample types `alloc_objects/count`, `alloc_space/bytes`, `inuse_objects/count`,
///   `inuse_space/bytes` (as Go and jemalloc heap profiles); `default_sample_type` is
///   `inuse_space`.
/// - One sample per (allocation site, generation) with a string label `generation` (see
///   ``HeapProfile/generationNames``) and, for Swift objects, a string label `type`.
/// - One Location per distinct return address (and mapping), with one Line per frame,
///   inlined frames first and the function containing the address last, as pprof expects.
/// - Functions carry the short name as `name` (what `pprof -top` prints), the full
///   demangled name as `system_name`, and the source file. An address without a symbol
///   becomes a function named `module+0xOFFSET`.
/// - One Mapping per loaded module, in load order (the executable first): start, limit,
///   file offset 0 (of its first segment), file name, build id in hex, and
///   has_functions/has_filenames/has_line_numbers/has_inline_frames set when heapgen
///   symbolicated the stacks, so that pprof does not symbolize them again.
public enum PprofExport {
    /// Profile.proto field numbers.
    enum Field {
        static let sampleType = 1, sample = 2, mapping = 3, location = 4, function = 5, stringTable = 6
        static let timeNanos = 9, periodType = 11, period = 12, comment = 13, defaultSampleType = 14
    }

    /// The profile, gzipped, written to `sink` a piece at a time as it is made; returns
    /// notes on symbolication.
    ///
    /// The samples go out as their stacks are read again from the trace; only the distinct
    /// addresses are kept (an ``AddressTable``), and the locations, functions and strings
    /// follow once they are symbolicated. Profile fields may come in any order.
    ///
    /// - Throws: ``TraceError`` if the trace cannot be read again, or what `sink` throws.
    public static func write(_ profile: HeapProfile, symbolication: StackSymbolication = StackSymbolication(),
                             to sink: @escaping ([UInt8]) throws -> Void) throws -> [String] {
        let gzip = GzipStream(sink: sink)
        let notes = try stream(profile, symbolication: symbolication, to: gzip.write)
        try gzip.finish()
        return notes
    }

    /// The profile, gzipped, whole.
    public static func gzipped(_ profile: HeapProfile, symbolication: StackSymbolication = StackSymbolication())
        throws -> (bytes: [UInt8], notes: [String]) {
        var bytes: [UInt8] = []
        let notes = try write(profile, symbolication: symbolication) { bytes.append(contentsOf: $0) }
        return (bytes, notes)
    }

    /// The serialized Profile message (not gzipped), and notes on symbolication.
    public static func encode(_ profile: HeapProfile, symbolication: StackSymbolication = StackSymbolication())
        throws -> (bytes: [UInt8], notes: [String]) {
        var bytes: [UInt8] = []
        let notes = try stream(profile, symbolication: symbolication) { bytes.append(contentsOf: $0) }
        return (bytes, notes)
    }

    /// The serialized Profile message in pieces of about 1 MB.
    static func stream(_ profile: HeapProfile, symbolication: StackSymbolication,
                       to sink: ([UInt8]) throws -> Void) throws -> [String] {
        let context = profile.context
        var strings = StringTable()
        var w = ProtobufWriter()
        func flushIfFull() throws {
            if w.bytes.count >= 1 << 20 { try sink(w.takeBytes()) }
        }

        for sample in HeapSample.allCases {
            let type = strings.index(sample.rawValue), unit = strings.index(sample.unit)
            w.message(Field.sampleType) { $0.int64(1, type); $0.int64(2, unit) }
        }
        let generationKey = strings.index("generation"), typeKey = strings.index("type")
        // One Location per distinct address: its id is the table's index + 1.
        var table = AddressTable(timeline: ModuleTimeline(events: context.analysis.modules))
        try profile.forEachStack { frames, position, samples in
            let ids = table.add(frames, at: position).map { UInt64($0) + 1 }
            for i in samples {
                let sample = profile.samples[i]
                let v = sample.values
                let generation = strings.index(profile.generationNames[sample.generation])
                let typeName = context.typeName(context.sites[sample.site].type).map { strings.index($0) }
                w.message(Field.sample) { s in
                    s.packedUInt64(1, ids)
                    s.packedInt64(2, [v.allocObjects, v.allocSpace, v.inuseObjects, v.inuseSpace])
                    s.message(3) { $0.int64(1, generationKey); $0.int64(2, generation) }
                    if let typeName { s.message(3) { $0.int64(1, typeKey); $0.int64(2, typeName) } }
                }
                try flushIfFull()
            }
        }
        let (addresses, notes) = table.symbolicate(with: symbolication, stored: StoredSymbols(tracePath: context.trace))

        var functions: [FunctionKey: UInt64] = [:]
        var functionList: [FunctionKey] = []
        var mappings: [MappingKey: UInt64] = [:]
        var mappingList: [(key: MappingKey, module: ModuleRecord)] = []
        // heapgen's symbolizer answered for every address (a frame without a name has none to
        // find): the mappings say so, or pprof symbolizes them again (50 s on Swift
        // libraries with binutils, and Swift names come back mangled or not at all).
        let symbolized = symbolication.symbolizer.backend != .none

        func functionID(_ frame: SymbolicatedFrame, offset: UInt64?) -> UInt64 {
            let full = frame.function ?? StackSymbolication.unknownName(module: frame.module, offset: offset,
                                                                          address: frame.address)
            let key = FunctionKey(name: frame.shortFunction ?? full, systemName: full, file: frame.file ?? "")
            if let id = functions[key] { return id }
            let id = UInt64(functionList.count + 1)
            functions[key] = id
            functionList.append(key)
            return id
        }
        func mappingID(_ module: ModuleRecord?) -> UInt64 {
            guard let module else { return 0 }
            let key = MappingKey(path: module.path, loadBias: module.loadBias)
            if let id = mappings[key] { return id }
            let id = UInt64(mappingList.count + 1)
            mappings[key] = id
            mappingList.append((key, module))
            return id
        }

        // Every module in load order: pprof takes the first mapping for the main binary.
        for event in context.analysis.modules { if let module = event.module { _ = mappingID(module) } }
        let addressMappings = addresses.map { mappingID($0.module) }
        for m in mappingList {
            let low = m.module.segments.map(\.vaddr).min() ?? 0
            let high = m.module.segments.map { $0.vaddr &+ $0.memsz }.max() ?? 0
            let page: UInt64 = 4096
            let start = m.module.loadBias &+ (low & ~(page - 1))
            let limit = m.module.loadBias &+ ((high &+ page - 1) & ~(page - 1))
            let file = strings.index(m.module.path)
            let buildID = m.module.buildID.isEmpty ? 0 : strings.index(m.module.buildID.map(hexByte).joined())
            w.message(Field.mapping) { p in
                p.uint64(1, mappings[m.key]!)
                p.uint64(2, start)
                p.uint64(3, limit)
                p.uint64(4, 0)
                p.int64(5, file)
                p.int64(6, buildID)
                p.bool(7, symbolized)   // has_functions
                p.bool(8, symbolized)   // has_filenames
                p.bool(9, symbolized)   // has_line_numbers
                p.bool(10, symbolized)  // has_inline_frames
            }
        }
        for (i, a) in addresses.enumerated() {
            let mapping = addressMappings[i]
            let lines = a.frames.map { (functionID($0, offset: a.moduleOffset), Int64($0.line ?? 0)) }
            w.message(Field.location) { p in
                p.uint64(1, UInt64(i + 1))
                p.uint64(2, mapping)
                p.uint64(3, a.address)
                for line in lines { p.message(4) { $0.uint64(1, line.0); $0.int64(2, line.1) } }
            }
            try flushIfFull()
        }
        for (i, f) in functionList.enumerated() {
            let name = strings.index(f.name), system = strings.index(f.systemName), file = strings.index(f.file)
            w.message(Field.function) { p in
                p.uint64(1, UInt64(i + 1))
                p.int64(2, name)
                p.int64(3, system)
                p.int64(4, file)
            }
            try flushIfFull()
        }
        let comment = strings.index("heapgen export of \(context.trace); in use at \(profile.point)")
        let space = strings.index("space"), bytes = strings.index("bytes")
        let defaultType = strings.index(HeapSample.inuseSpace.rawValue)
        let time = Int64(clamping: context.analysis.process.startUnixNanoseconds)
        // Every string is interned by now: the table goes last.
        for s in strings.strings {
            w.string(Field.stringTable, s, always: true)
            try flushIfFull()
        }
        w.int64(Field.timeNanos, time)
        w.message(Field.periodType) { $0.int64(1, space); $0.int64(2, bytes) }
        w.int64(Field.period, 1)
        w.packedInt64(Field.comment, [comment])
        w.int64(Field.defaultSampleType, defaultType)
        try sink(w.takeBytes())
        return notes
    }

    static func hexByte(_ b: UInt8) -> String {
        (b < 16 ? "0" : "") + String(b, radix: 16)
    }

    struct FunctionKey: Hashable {
        var name: String
        var systemName: String
        var file: String
    }

    struct MappingKey: Hashable {
        var path: String
        var loadBias: UInt64
    }
}
