// Adds `symbols` records to a finished trace: the collector does it after recording.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Adds stored symbols to a finished trace, in place.
///
/// ``TraceWriter/finish(_:)`` writes the `end` record in a chunk of its own. The appender
/// checks that the file's last chunk is exactly that, cuts it off, writes the `symbols`
/// records in chunks of their own and writes the same `end` chunk again: only the tail of
/// the file is touched, however long the trace. A collector killed in between leaves a
/// trace without its `end` record, which readers salvage (reason `unknown`).
public enum TraceSymbolAppender {
    /// Appends `records` to the finished trace at `path`. Returns the new file size.
    ///
    /// - Throws: ``TraceError``: `.io`, or `.corrupt` when the file does not end with an
    ///   `end` record in a chunk of its own (a trace from an older writer, or one that
    ///   already holds symbols: nothing is changed then).
    @discardableResult
    public static func append(_ records: [SymbolsRecord], to path: String) throws -> UInt64 {
        var fd: Int32
        repeat { fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW) } while fd < 0 && errno == EINTR
        if fd < 0 {
            let e = errno
            throw TraceError(.io, "cannot open: \(SystemCalls.errorString(e))", file: path)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw TraceError(.io, "not a regular file", file: path)
        }
        let size = UInt64(info.st_size)
        // Walk the chunk headers to the last chunk.
        var offset = UInt64(TraceFormat.headerSize)
        var last: (offset: UInt64, length: Int, compressed: Bool)?
        var header = [UInt8](repeating: 0, count: TraceFormat.chunkHeaderSize)
        while offset < size {
            let r = header.withUnsafeMutableBytes { SystemCalls.preadAll(fd, $0.baseAddress!, $0.count, offset) }
            guard r == TraceFormat.chunkHeaderSize else {
                throw TraceError(.corrupt, "the file ends inside a chunk header", offset: offset, file: path)
            }
            let lengthWord = UInt32(header[0]) | UInt32(header[1]) << 8 | UInt32(header[2]) << 16 | UInt32(header[3]) << 24
            let length = lengthWord & ~ChunkCompression.flag
            guard length >= 1 && length <= UInt32(TraceFormat.maxChunkPayload) else {
                throw TraceError(.corrupt, "chunk length \(length) is outside 1…\(TraceFormat.maxChunkPayload)", offset: offset, file: path)
            }
            last = (offset, Int(length), lengthWord & ChunkCompression.flag != 0)
            offset += UInt64(TraceFormat.chunkHeaderSize) + UInt64(length)
        }
        guard offset == size, let last else {
            throw TraceError(.corrupt, "the file does not end at a chunk boundary", offset: size, file: path)
        }
        // The last chunk: header + payload that is one end record and nothing else.
        var endChunk = [UInt8](repeating: 0, count: TraceFormat.chunkHeaderSize + last.length)
        let r = endChunk.withUnsafeMutableBytes { SystemCalls.preadAll(fd, $0.baseAddress!, $0.count, last.offset) }
        guard r == endChunk.count else { throw TraceError(.io, "cannot read the last chunk", offset: last.offset, file: path) }
        let payload = Array(endChunk[TraceFormat.chunkHeaderSize...])
        let storedCRC = UInt32(endChunk[4]) | UInt32(endChunk[5]) << 8 | UInt32(endChunk[6]) << 16 | UInt32(endChunk[7]) << 24
        let crc = payload.withUnsafeBytes { CRC32C.checksum($0) }
        guard crc == storedCRC else { throw TraceError(.corrupt, "CRC mismatch in the last chunk", offset: last.offset, file: path) }
        // The writer stores the end chunk plain.
        guard !last.compressed, payload.first == RecordTag.end, Self.isOneEndRecord(payload) else {
            throw TraceError(.corrupt, "the last chunk is not an end record of its own (written by an older heapgen?)",
                             offset: last.offset, file: path)
        }

        // Symbols chunks, then the end chunk again, written where the end chunk was.
        var tail: [UInt8] = []
        var chunk: [UInt8] = []
        func closeChunk() {
            guard !chunk.isEmpty else { return }
            let crc = chunk.withUnsafeBytes { CRC32C.checksum($0) }
            let n = UInt32(chunk.count)
            tail += [UInt8(n & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 24)]
            tail += [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 24)]
            tail += chunk
            chunk.removeAll(keepingCapacity: true)
        }
        for record in records where !record.entries.isEmpty {
            for bytes in TraceWriter.symbolRecords(record) {
                if !chunk.isEmpty && chunk.count + bytes.count > TraceFormat.flushThreshold { closeChunk() }
                chunk += bytes
            }
        }
        closeChunk()
        guard !tail.isEmpty else { return size }
        tail += endChunk
        let failure = tail.withUnsafeBytes { raw -> Int32? in
            var done = 0
            while done < raw.count {
                let n = pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(last.offset) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                done += n
            }
            return nil
        }
        if let failure {
            // Put the end chunk back where it was, so the trace stays whole.
            _ = ftruncate(fd, off_t(last.offset))
            _ = endChunk.withUnsafeBytes { pwrite(fd, $0.baseAddress!, $0.count, off_t(last.offset)) }
            throw TraceError(.io, "cannot write the stored symbols: \(SystemCalls.errorString(failure))", offset: last.offset, file: path)
        }
        return last.offset + UInt64(tail.count)
    }

    /// True if `payload` is exactly one `end` record (tag, reason, nine varints).
    private static func isOneEndRecord(_ payload: [UInt8]) -> Bool {
        var i = 2
        guard payload.count >= 2 else { return false }
        // status and eight counters (minor 1), then stacksLost (minor 2 on): 9 or 10 varints.
        var varints = 0
        while i < payload.count && varints < 10 {
            var n = 0
            while i < payload.count && payload[i] & 0x80 != 0 && n < 10 { i += 1; n += 1 }
            guard i < payload.count else { return false }
            i += 1
            varints += 1
        }
        return i == payload.count && (varints == 9 || varints == 10)
    }
}
