// A gzip stream (RFC 1952) compressed with zlib's deflate.

import CZlib

/// Writes gzip streams with zlib (`deflateInit2` with a gzip wrapper, level 6).
///
/// pprof profiles are mostly string tables and packed varints: deflate shrinks them
/// several times over, and every gzip reader (`go tool pprof`, `gzip -d`) reads them.
public enum Gzip {
    /// `data` as a complete gzip member: header, deflate data, CRC-32, size.
    public static func wrap(_ data: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        // 15 window bits + 16: a gzip header and trailer instead of zlib's.
        let status = deflateInit2_(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                                   ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "zlib's deflateInit2 failed (\(status))")
        defer { deflateEnd(&stream) }
        var out = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(data.count))) + 32)
        var input = data
        let produced = input.withUnsafeMutableBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst -> Int in
                stream.next_in = src.baseAddress
                stream.avail_in = uInt(src.count)
                stream.next_out = dst.baseAddress
                stream.avail_out = uInt(dst.count)
                // deflateBound is enough for one Z_FINISH call.
                let result = deflate(&stream, Z_FINISH)
                precondition(result == Z_STREAM_END, "zlib's deflate did not finish (\(result))")
                return dst.count - Int(stream.avail_out)
            }
        }
        return Array(out.prefix(produced))
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
