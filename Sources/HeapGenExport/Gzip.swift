// A gzip stream (RFC 1952) compressed with zlib's deflate.

import CZlib

/// Writes gzip streams with zlib (`deflateInit2` with a gzip wrapper, level 6).
///
/// pprof profiles are mostly string tables and packed varints: deflate shrinks them
/// several times over, and every gzip reader (`go tool pprof`, `gzip -d`) reads them.
public enum Gzip {
    /// `data` as a complete gzip member: header, deflate data, CRC-32, size.
    public static func wrap(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        let stream = GzipStream { out.append(contentsOf: $0) }
        // The sink cannot fail: neither can the stream.
        try! stream.write(data)
        try! stream.finish()
        return out
    }
}

/// One gzip member written a piece at a time: what goes in is deflated into 64 KB pieces
/// for `sink`, so that a profile of millions of samples is never held whole.
public final class GzipStream {
    /// zlib's state points at its `z_stream`: it must not move, so it lives on the heap.
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    private let sink: ([UInt8]) throws -> Void
    private var out = [UInt8](repeating: 0, count: 1 << 16)
    private var finished = false

    /// A stream whose compressed pieces go to `sink` (errors it throws come back from
    /// ``write(_:)`` and ``finish()``).
    public init(sink: @escaping ([UInt8]) throws -> Void) {
        self.sink = sink
        stream.initialize(to: z_stream())
        // 15 window bits + 16: a gzip header and trailer instead of zlib's.
        let status = deflateInit2_(stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                                   ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "zlib's deflateInit2 failed (\(status))")
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    /// Deflates `data`.
    public func write(_ data: [UInt8]) throws {
        precondition(!finished, "GzipStream.write after finish")
        guard !data.isEmpty else { return }
        var input = data
        try input.withUnsafeMutableBufferPointer { src in
            stream.pointee.next_in = src.baseAddress
            stream.pointee.avail_in = uInt(src.count)
            while stream.pointee.avail_in > 0 { _ = try step(Z_NO_FLUSH) }
        }
    }

    /// Ends the member (the CRC-32 and size trailer) and hands over what is left.
    public func finish() throws {
        guard !finished else { return }
        finished = true
        stream.pointee.next_in = nil
        stream.pointee.avail_in = 0
        while try step(Z_FINISH) != Z_STREAM_END {}
    }

    /// One deflate call into `out`; full or final output goes to the sink.
    private func step(_ flush: Int32) throws -> Int32 {
        let (result, produced) = out.withUnsafeMutableBufferPointer { dst -> (Int32, Int) in
            stream.pointee.next_out = dst.baseAddress
            stream.pointee.avail_out = uInt(dst.count)
            let r = deflate(stream, flush)
            return (r, dst.count - Int(stream.pointee.avail_out))
        }
        precondition(result == Z_OK || result == Z_STREAM_END || result == Z_BUF_ERROR,
                     "zlib's deflate failed (\(result))")
        if produced > 0 { try sink(Array(out.prefix(produced))) }
        return result
    }
}

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as gzip and zlib use it.
public enum CRC32 {
    /// The CRC-32 of `data` (`"123456789"` → `0xCBF43926`).
    public static func checksum(_ data: [UInt8]) -> UInt32 {
        data.withUnsafeBufferPointer { b in
            UInt32(truncatingIfNeeded: crc32(0, b.baseAddress, uInt(b.count)))
        }
    }
}
