// Reads and validates heapgen trace files (docs/trace-format.md).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a trace and checks every rule of the format as it goes.
///
/// The reader never traps on bad input: a malformed file gives a
/// ``TraceError`` naming the file, the byte offset and the problem. Memory use
/// is bounded by the largest chunk (16 MiB) plus the ids defined so far.
public struct TraceReader: Sendable {
    /// The path, or the name given for an in-memory trace; used in errors.
    public let name: String
    /// Minor version from the header (0 for files written by this library).
    public let minorVersion: UInt16
    /// Header flags (0 in version 1.0; ignored).
    public let flags: UInt32
    /// When false (the default), a trace cut short is salvaged: see ``forEach(_:)``.
    public let strict: Bool

    private enum Storage: Sendable {
        case memory([UInt8])
        case file(TraceFile)
    }
    private let storage: Storage

    /// Where the bytes are, for ``storedSymbols()``.
    enum SymbolStorage {
        case memory([UInt8])
        case file(TraceFile)
    }
    var storageForSymbols: SymbolStorage {
        switch storage {
        case .memory(let bytes): .memory(bytes)
        case .file(let file): .file(file)
        }
    }

    /// Opens `path` and checks its header.
    ///
    /// Only a regular file is read: a FIFO, a device or a directory is refused at once
    /// (the file is opened non-blocking, so a FIFO with no writer cannot hang the reader).
    ///
    /// - Parameter strict: when true, a trace whose last chunk is cut short or that has
    ///   no `end` record is an error (`.truncated`) instead of being salvaged.
    /// - Throws: ``TraceError``: `.io` (cannot open or read, or not a regular file),
    ///   `.notATrace`, `.unsupportedVersion`, or `.truncated` (the file ends inside the header).
    public init(path: String, strict: Bool = false) throws {
        var fd: Int32
        repeat {
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        } while fd < 0 && errno == EINTR
        if fd < 0 {
            let e = errno
            throw TraceError(.io, "cannot open: \(SystemCalls.errorString(e))", file: path)
        }
        let file = TraceFile(fd: fd)
        var info = stat()
        if fstat(fd, &info) != 0 {
            let e = errno
            throw TraceError(.io, "cannot stat: \(SystemCalls.errorString(e))", file: path)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw TraceError(.io, "\(Self.fileKind(info.st_mode)), not a trace file (traces are regular files)",
                             file: path)
        }
        var header = [UInt8](repeating: 0, count: TraceFormat.headerSize)
        let r = header.withUnsafeMutableBytes { raw in
            SystemCalls.preadAll(fd, raw.baseAddress!, raw.count, 0)
        }
        if r < 0 {
            throw TraceError(.io, "cannot read: \(SystemCalls.errorString(Int32(-r)))", offset: 0, file: path)
        }
        let parsed = try Self.parseHeader(Array(header[0..<r]), name: path)
        name = path
        minorVersion = parsed.minor
        flags = parsed.flags
        self.strict = strict
        storage = .file(file)
    }

    /// "a directory", "a FIFO"... for the refusal of a non-regular trace.
    private static func fileKind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "not a regular file"
        }
    }

    /// Reads a trace held in memory; `name` is used in errors.
    ///
    /// - Throws: ``TraceError``: `.notATrace`, `.unsupportedVersion`, or `.truncated`.
    public init(bytes: [UInt8], name: String = "<memory>", strict: Bool = false) throws {
        let parsed = try Self.parseHeader(Array(bytes.prefix(TraceFormat.headerSize)), name: name)
        self.name = name
        minorVersion = parsed.minor
        flags = parsed.flags
        self.strict = strict
        storage = .memory(bytes)
    }

    /// Checks the 16-byte header (given the first up to 16 bytes of the file).
    private static func parseHeader(_ header: [UInt8], name: String) throws(TraceError) -> (minor: UInt16, flags: UInt32) {
        let magic = TraceFormat.magic
        let n = min(header.count, magic.count)
        guard header[0..<n].elementsEqual(magic[0..<n]) else {
            throw TraceError(.notATrace, "does not start with the heapgen trace magic \"HGTRACE\"", offset: 0, file: name)
        }
        guard header.count >= TraceFormat.headerSize else {
            let what = header.isEmpty ? "the file is empty" : "the file ends inside the \(TraceFormat.headerSize)-byte header"
            throw TraceError(.truncated, "\(what) (the collector was stopped before it wrote anything)",
                             offset: UInt64(header.count), file: name)
        }
        let major = UInt16(header[8]) | UInt16(header[9]) << 8
        let minor = UInt16(header[10]) | UInt16(header[11]) << 8
        let flags = UInt32(header[12]) | UInt32(header[13]) << 8 | UInt32(header[14]) << 16 | UInt32(header[15]) << 24
        guard major == TraceFormat.majorVersion else {
            throw TraceError(.unsupportedVersion,
                             "format version \(major).\(minor); this heapgen reads version \(TraceFormat.majorVersion).x",
                             offset: 8, file: name)
        }
        return (minor, flags)
    }

    /// Streams every record in order, validating as it goes; throws TraceError on the first problem.
    ///
    /// Records are delivered chunk by chunk, each after its chunk's CRC has been checked,
    /// so `body` sees the records before a problem. Errors thrown by `body` are rethrown as is.
    /// Each call reads the trace from the start.
    ///
    /// Salvage (unless ``strict``): a trace whose collector was killed ends inside its last
    /// chunk, or after a whole chunk but without an `end` record. Such a trace is read up
    /// to its last whole chunk, the bytes after it are ignored, and the reader delivers an
    /// `end` record of its own: reason `.unknown`, the event count of what was read, and
    /// ``EndRecord/salvage`` saying what was ignored (also noted in ``TraceSalvageLog``).
    /// A file without a whole chunk holding its `process` record is still `.truncated`.
    public mutating func forEach(_ body: (TraceRecord) throws -> Void) throws {
        switch storage {
        case .memory(let bytes):
            try bytes.withUnsafeBytes { raw in
                var source = MemorySource(all: raw)
                try Self.read(&source, name: name, strict: strict, body)
            }
        case .file(let file):
            var source = FileSource(file: file, name: name)
            try Self.read(&source, name: name, strict: strict, body)
        }
    }

    /// Reads all records (and checks them) without delivering them.
    public mutating func validate() throws {
        try forEach { _ in }
    }

    private static func read<Source: ChunkSource>(_ source: inout Source, name: String, strict: Bool,
                                                  _ body: (TraceRecord) throws -> Void) throws {
        var decoder = RecordDecoder(file: name)
        /// Made at the first compressed chunk.
        var inflater: ChunkDecompressor?
        var offset = UInt64(TraceFormat.headerSize)
        /// The file ends at `offset` + `ignored` bytes without an end record: salvage or throw `error`.
        func cutShort(ignored: Int, _ error: TraceError) throws {
            guard !strict && decoder.sawProcess else { throw error }
            let salvage = TraceSalvage(file: name, readBytes: offset, ignoredBytes: UInt64(ignored))
            TraceSalvageLog.note(salvage)
            var end = EndRecord(reason: .unknown, eventCount: decoder.events)
            end.salvage = salvage
            try body(.end(end))
        }
        while true {
            let header = try source.bytes(at: offset, count: TraceFormat.chunkHeaderSize)
            if header.count == 0 {
                let why = decoder.sawProcess ? "no end record" : "no records"
                return try cutShort(ignored: 0, TraceError(.truncated, "\(why) (the collector was stopped or killed before it finished)",
                                                           offset: offset, file: name))
            }
            if header.count < TraceFormat.chunkHeaderSize {
                return try cutShort(ignored: header.count,
                                    TraceError(.truncated, "the file ends inside a chunk header (\(header.count) of 8 bytes)",
                                               offset: offset &+ UInt64(header.count), file: name))
            }
            let lengthWord = header.loadUnaligned(fromByteOffset: 0, as: UInt32.self).littleEndian
            let compressed = lengthWord & ChunkCompression.flag != 0
            let length = lengthWord & ~ChunkCompression.flag
            let storedCRC = header.loadUnaligned(fromByteOffset: 4, as: UInt32.self).littleEndian
            guard length >= 1 && length <= UInt32(TraceFormat.maxChunkPayload) else {
                throw TraceError(.corrupt, "chunk length \(length) is outside 1…\(TraceFormat.maxChunkPayload)",
                                 offset: offset, file: name)
            }
            let payloadOffset = offset &+ UInt64(TraceFormat.chunkHeaderSize)
            let payload = try source.bytes(at: payloadOffset, count: Int(length))
            if payload.count < Int(length) {
                return try cutShort(ignored: TraceFormat.chunkHeaderSize + payload.count,
                                    TraceError(.truncated, "the file ends inside the \(length)-byte chunk that starts at byte \(offset)",
                                               offset: payloadOffset &+ UInt64(payload.count), file: name))
            }
            let crc = CRC32C.checksum(payload)
            guard crc == storedCRC else {
                throw TraceError(.corrupt, "CRC mismatch in the \(length)-byte chunk (stored \(hex(UInt64(storedCRC))), computed \(hex(UInt64(crc))))",
                                 offset: offset, file: name)
            }
            if compressed {
                let decompressor = inflater ?? ChunkDecompressor()
                inflater = decompressor
                let streams = try decompressor.decompress(payload, offset: offset, file: name)
                // Offsets in errors inside a compressed chunk name the chunk's start.
                if streams.count == 1 {
                    try decoder.decode(chunk: streams[0], fileOffset: offset, fixedOffset: true, body)
                } else {
                    try decoder.decode(columns: streams, fileOffset: offset, body)
                }
            } else {
                try decoder.decode(chunk: payload, fileOffset: payloadOffset, body)
            }
            offset = payloadOffset &+ UInt64(length)
            if decoder.sawEnd {
                let more = try source.bytes(at: offset, count: 1)
                if more.count > 0 {
                    throw TraceError(.corrupt, "data after the chunk holding the end record", offset: offset, file: name)
                }
                return
            }
        }
    }
}
