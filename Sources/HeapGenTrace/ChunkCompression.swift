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
final class ChunkCompressor {
    let level: Int32
    private let context: OpaquePointer
    /// Chunk header room, then the compressed payload (prefix + zstd frame).
    private(set) var output: UnsafeMutableRawPointer
    private var capacity: Int

    init?(level: Int32) {
        guard let context = ZSTD_createCCtx() else { return nil }
        self.level = level
        self.context = context
        capacity = 0
        output = .allocate(byteCount: 1, alignment: 16)
    }

    deinit {
        ZSTD_freeCCtx(context)
        output.deallocate()
    }

    /// Compresses `payload` into ``output`` after `headerRoom` bytes; returns the stored
    /// payload length (prefix + frame), or nil when the result would not be smaller (or zstd
    /// failed): the chunk is then stored plain.
    func compress(_ payload: UnsafeRawBufferPointer, headerRoom: Int) -> Int? {
        let bound = ZSTD_compressBound(payload.count)
        let needed = headerRoom + ChunkCompression.prefixSize + bound
        if needed > capacity {
            output.deallocate()
            output = .allocate(byteCount: needed, alignment: 16)
            capacity = needed
        }
        let frame = output + headerRoom + ChunkCompression.prefixSize
        let n = ZSTD_compressCCtx(context, frame, bound, payload.baseAddress, payload.count, level)
        if ZSTD_isError(n) != 0 { return nil }
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

    /// The payload `stored` (a compressed chunk's bytes, CRC already checked) decompresses to.
    /// Valid until the next call.
    ///
    /// - Throws: ``TraceError`` `.corrupt` (at `offset`, the chunk's start) when the stated
    ///   length is out of range, zstd reports an error, or the output length differs.
    func decompress(_ stored: UnsafeRawBufferPointer, offset: UInt64, file: String) throws(TraceError) -> UnsafeRawBufferPointer {
        guard stored.count > ChunkCompression.prefixSize else {
            throw TraceError(.corrupt, "compressed chunk of \(stored.count) bytes has no zstd frame", offset: offset, file: file)
        }
        let claimed = Int(stored.loadUnaligned(as: UInt32.self).littleEndian)
        guard claimed >= 1 && claimed <= TraceFormat.maxChunkPayload else {
            throw TraceError(.corrupt, "compressed chunk decompresses to \(claimed) bytes, outside 1…\(TraceFormat.maxChunkPayload)",
                             offset: offset, file: file)
        }
        guard let context else {
            throw TraceError(.io, "cannot create a zstd decompression context (out of memory)", offset: offset, file: file)
        }
        if claimed > capacity {
            buffer.deallocate()
            buffer = .allocate(byteCount: claimed, alignment: 16)
            capacity = claimed
        }
        let frame = stored.baseAddress! + ChunkCompression.prefixSize
        let n = ZSTD_decompressDCtx(context, buffer, claimed, frame, stored.count - ChunkCompression.prefixSize)
        if ZSTD_isError(n) != 0 {
            let why = String(cString: ZSTD_getErrorName(n))
            throw TraceError(.corrupt, "compressed chunk does not decompress (zstd: \(why))", offset: offset, file: file)
        }
        guard n == claimed else {
            throw TraceError(.corrupt, "compressed chunk decompresses to \(n) bytes, not the \(claimed) it states",
                             offset: offset, file: file)
        }
        return UnsafeRawBufferPointer(start: buffer, count: n)
    }
}
