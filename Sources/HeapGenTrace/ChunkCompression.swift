// zstd-compressed chunk payloads (docs/trace-format.md, "Compressed chunks").

import CZstd

/// Layout constants of compressed chunks.
enum ChunkCompression {
    /// Bit 31 of a chunk's length word: the payload is stored compressed. The other bits
    /// are the stored length (1…16 MiB, as for a plain chunk).
    static let flag: UInt32 = 1 << 31
    /// A compressed payload starts with the u32 length of the payload it decompresses to.
    static let prefixSize = 4
}

/// Compresses the writer's chunk payloads: one zstd context and one output buffer, reused.
/// Without a level it only lays out column chunks, their streams plain.
final class ChunkCompressor {
    let level: Int32?
    /// nil without a level (or when zstd could not make one): nothing is compressed.
    private let context: OpaquePointer?
    /// Chunk header room, then the stored payload.
    private(set) var output: UnsafeMutableRawPointer
    private var capacity: Int
    /// Column chunks' streams as stored, before the lengths that precede them are known.
    private(set) var scratch: UnsafeMutablePointer<UInt8>
    private var scratchCapacity: Int

    init(level: Int32?) {
        self.level = level
        context = level == nil ? nil : ZSTD_createCCtx()
        capacity = 0
        output = .allocate(byteCount: 1, alignment: 16)
        scratchCapacity = 0
        scratch = .allocate(capacity: 1)
    }

    deinit {
        if let context { ZSTD_freeCCtx(context) }
        output.deallocate()
        scratch.deallocate()
    }

    func ensureOutput(_ needed: Int) {
        if needed > capacity {
            output.deallocate()
            output = .allocate(byteCount: needed, alignment: 16)
            capacity = needed
        }
    }

    func reserveScratch(_ needed: Int) {
        if needed > scratchCapacity {
            scratch.deallocate()
            scratch = .allocate(capacity: needed)
            scratchCapacity = needed
        }
    }

    /// `payload` as one zstd frame at `destination` (room: `capacity`); nil without a
    /// context or when zstd fails.
    func frame(_ payload: UnsafeRawBufferPointer, into destination: UnsafeMutableRawPointer, capacity: Int) -> Int? {
        guard let context, let level else { return nil }
        let n = ZSTD_compressCCtx(context, destination, capacity, payload.baseAddress, payload.count, level)
        return ZSTD_isError(n) != 0 ? nil : n
    }

    /// Compresses `payload` into ``output`` after `headerRoom` bytes; returns the stored
    /// payload length (prefix + frame), or nil when the result would not be smaller (or zstd
    /// failed, or there is no level): the chunk is then stored plain.
    func compress(_ payload: UnsafeRawBufferPointer, headerRoom: Int) -> Int? {
        guard context != nil else { return nil }
        let bound = ZSTD_compressBound(payload.count)
        ensureOutput(headerRoom + ChunkCompression.prefixSize + bound)
        guard let n = frame(payload, into: output + headerRoom + ChunkCompression.prefixSize, capacity: bound) else {
            return nil
        }
        let stored = ChunkCompression.prefixSize + n
        guard stored < payload.count else { return nil }
        (output + headerRoom).storeBytes(of: UInt32(payload.count).littleEndian, as: UInt32.self)
        return stored
    }
}

/// Decompresses chunk payloads for the reader. The output is capped at the format's chunk
/// limit (16 MiB) and must be exactly the length the payload's prefix states; any zstd error
/// is corruption. One context and one buffer, reused from chunk to chunk.
final class ChunkDecompressor {
    private let context: OpaquePointer?
    private var buffer: UnsafeMutableRawPointer
    private var capacity: Int

    init() {
        context = ZSTD_createDCtx()
        if let context {
            // A frame may not ask for a window beyond the chunk limit (2^24 bytes).
            _ = ZSTD_DCtx_setParameter(context, ZSTD_d_windowLogMax, 24)
        }
        capacity = 0
        buffer = .allocate(byteCount: 1, alignment: 16)
    }

    deinit {
        if let context { ZSTD_freeDCtx(context) }
        buffer.deallocate()
    }

    /// A buffer of at least `count` bytes, valid until the next call.
    func reserve(_ count: Int, offset: UInt64, file: String) throws(TraceError) -> UnsafeMutableRawPointer {
        guard context != nil else {
            throw TraceError(.io, "cannot create a zstd decompression context (out of memory)", offset: offset, file: file)
        }
        if count > capacity {
            buffer.deallocate()
            buffer = .allocate(byteCount: count, alignment: 16)
            capacity = count
        }
        return buffer
    }

    /// Decompresses the zstd frame(s) `source` into `destination`, which must come out at
    /// exactly `length` bytes (the room given to zstd, so a frame cannot write beyond it).
    func inflate(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawPointer, length: Int,
                 offset: UInt64, file: String, what: String) throws(TraceError) {
        let n = ZSTD_decompressDCtx(context, destination, length, source.baseAddress, source.count)
        if ZSTD_isError(n) != 0 {
            let why = String(cString: ZSTD_getErrorName(n))
            throw TraceError(.corrupt, "\(what) does not decompress (zstd: \(why))", offset: offset, file: file)
        }
        guard n == length else {
            throw TraceError(.corrupt, "\(what) decompresses to \(n) bytes, not the \(length) it states",
                             offset: offset, file: file)
        }
    }

    /// What a compressed chunk's bytes `stored` (CRC already checked) hold: one payload of
    /// whole records, or (column chunks) the chunk's streams, records stream first. Valid
    /// until the next call.
    ///
    /// - Throws: ``TraceError`` `.corrupt` (at `offset`, the chunk's start) when the stated
    ///   length is out of range, zstd reports an error, or an output length differs.
    func decompress(_ stored: UnsafeRawBufferPointer, offset: UInt64, file: String) throws(TraceError) -> [UnsafeRawBufferPointer] {
        guard stored.count > ChunkCompression.prefixSize else {
            throw TraceError(.corrupt, "compressed chunk of \(stored.count) bytes has no zstd frame", offset: offset, file: file)
        }
        let prefix = stored.loadUnaligned(as: UInt32.self).littleEndian
        let claimed = Int(prefix & ~ColumnChunk.flag)
        guard claimed >= 1 && claimed <= TraceFormat.maxChunkPayload else {
            throw TraceError(.corrupt, "compressed chunk decompresses to \(claimed) bytes, outside 1…\(TraceFormat.maxChunkPayload)",
                             offset: offset, file: file)
        }
        let body = UnsafeRawBufferPointer(rebasing: stored[ChunkCompression.prefixSize...])
        if prefix & ColumnChunk.flag != 0 {
            return try decompressColumns(body, plain: claimed, offset: offset, file: file)
        }
        let buffer = try reserve(claimed, offset: offset, file: file)
        try inflate(body, into: buffer, length: claimed, offset: offset, file: file, what: "compressed chunk")
        return [UnsafeRawBufferPointer(start: buffer, count: claimed)]
    }
}
