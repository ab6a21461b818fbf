// The `symbols` record (minor version 3): what a trace's own frame addresses symbolicated
// to when it was recorded, so the trace reports and diffs the same after its binaries
// changed or on another machine (docs/trace-format.md, "Stored symbols").

/// One frame an address symbolicated to.
public struct StoredFrame: Sendable, Equatable, Codable {
    /// Demangled function name, nil when unknown.
    public var function: String?
    /// Shorter form of `function` (Swift: `Type.method(label:)`), nil when unknown.
    public var shortFunction: String?
    /// Source file as the debug info names it, nil when unknown.
    public var file: String?
    /// 1-based line and column, nil when unknown.
    public var line: Int?
    public var column: Int?

    public init(function: String? = nil, shortFunction: String? = nil, file: String? = nil,
                line: Int? = nil, column: Int? = nil) {
        self.function = function
        self.shortFunction = shortFunction
        self.file = file
        self.line = line
        self.column = column
    }
}

/// The stored symbols of one module of a trace: per recorded return address (as a module
/// offset, `address - loadBias`), the frames it symbolicated to, innermost inlined frame
/// first and the function that holds the address last.
public struct SymbolsRecord: Sendable, Equatable {
    /// One address and its frames (never empty).
    public struct Entry: Sendable, Equatable {
        /// `address - loadBias`: the recorded return address, not minus one.
        public var offset: UInt64
        public var frames: [StoredFrame]

        public init(offset: UInt64, frames: [StoredFrame]) {
            self.offset = offset
            self.frames = frames
        }
    }

    /// The module, as in its `moduleLoad` record.
    public var loadBias: UInt64
    public var path: String
    public var buildID: [UInt8]
    /// Ascending by offset, each offset once.
    public var entries: [Entry]

    public init(loadBias: UInt64, path: String, buildID: [UInt8], entries: [Entry]) {
        self.loadBias = loadBias
        self.path = path
        self.buildID = buildID
        self.entries = entries
    }
}

extension SymbolsRecord {
    /// Inlined frames per address at most (deeper inline chains are cut from the outside).
    static let maxFrames = 64
    /// Strings in one record's table, and entries in one record (writers split longer lists).
    static let maxStrings = 65_536
    static let maxEntries = 65_536

    /// Encodes the record (tag included).
    func encoded() -> [UInt8] {
        var strings: [String: Int] = [:]
        var table: [String] = []
        func index(_ s: String?) -> UInt64 {
            guard let s else { return 0 }
            if let i = strings[s] { return UInt64(i + 1) }
            strings[s] = table.count
            table.append(s)
            return UInt64(table.count)
        }
        var body: [UInt8] = []
        var previous: UInt64 = 0
        for entry in entries {
            Self.put(entry.offset &- previous, &body)
            previous = entry.offset
            let frames = entry.frames.suffix(Self.maxFrames)
            Self.put(UInt64(frames.count), &body)
            for f in frames {
                Self.put(index(f.function), &body)
                Self.put(index(f.shortFunction == f.function ? nil : f.shortFunction), &body)
                Self.put(index(f.file), &body)
                Self.put(UInt64(max(0, f.line ?? 0)), &body)
                Self.put(UInt64(max(0, f.column ?? 0)), &body)
            }
        }
        var out: [UInt8] = [RecordTag.symbols]
        Self.put(loadBias, &out)
        Self.putBytes(Self.capped(path), &out)
        Self.putBytes(Array(buildID.prefix(TraceFormat.maxStringBytes)), &out)
        Self.put(UInt64(table.count), &out)
        for s in table { Self.putBytes(Self.capped(s), &out) }
        Self.put(UInt64(entries.count), &out)
        out += body
        return out
    }

    private static func put(_ value: UInt64, _ out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    /// UTF-8 of `s`, cut to 64 KiB on a character boundary.
    private static func capped(_ s: String) -> [UInt8] {
        var bytes = Array(s.utf8)
        if bytes.count > TraceFormat.maxStringBytes {
            var n = TraceFormat.maxStringBytes
            while n > 0 && (bytes[n] & 0xC0) == 0x80 { n -= 1 }
            bytes.removeSubrange(n...)
        }
        return bytes
    }

    private static func putBytes(_ bytes: [UInt8], _ out: inout [UInt8]) {
        put(UInt64(bytes.count), &out)
        out += bytes
    }

    /// Decodes the fields after the tag.
    static func decode(_ c: inout ByteCursor) throws(TraceError) -> SymbolsRecord {
        let loadBias = try c.varint()
        let path = try c.string("module path length")
        let buildID = try c.bytes("build ID length")
        let stringCount = try c.length("symbol string count", limit: maxStrings)
        var table: [String] = []
        table.reserveCapacity(stringCount)
        for _ in 0..<stringCount { table.append(try c.string("symbol string length")) }
        func string(_ what: StaticString) throws(TraceError) -> String? {
            let at = c.position
            let i = try c.varint()
            if i == 0 { return nil }
            guard i <= UInt64(table.count) else {
                throw c.corrupt("\(what) names string \(i) of a table of \(table.count)", at: at)
            }
            return table[Int(i - 1)]
        }
        let count = try c.length("symbol entry count", limit: maxEntries)
        var entries: [Entry] = []
        entries.reserveCapacity(count)
        var previous: UInt64 = 0
        for k in 0..<count {
            let at = c.position
            let delta = try c.varint()
            if k > 0 && delta == 0 { throw c.corrupt("symbol offsets are not ascending", at: at) }
            let (offset, overflow) = previous.addingReportingOverflow(delta)
            if overflow { throw c.corrupt("symbol offset overflows", at: at) }
            previous = offset
            let countAt = c.position
            let n = try c.length("symbol frame count", limit: maxFrames)
            if n == 0 { throw c.corrupt("an address with no frames", at: countAt) }
            var frames: [StoredFrame] = []
            frames.reserveCapacity(n)
            for _ in 0..<n {
                let function = try string("function")
                let short = try string("short function")
                let file = try string("file")
                let line = try c.varint()
                let column = try c.varint()
                frames.append(StoredFrame(function: function, shortFunction: short ?? function, file: file,
                                          line: line == 0 || line > UInt64(Int32.max) ? nil : Int(line),
                                          column: column == 0 || column > UInt64(Int32.max) ? nil : Int(column)))
            }
            entries.append(Entry(offset: offset, frames: frames))
        }
        return SymbolsRecord(loadBias: loadBias, path: path, buildID: buildID, entries: entries)
    }
}
