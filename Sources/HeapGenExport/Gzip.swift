// A gzip stream (RFC 1952) of deflate "stored" blocks (RFC 1951): no compression
// library needed, readable by every gzip reader.

/// Writes gzip streams whose deflate data is stored blocks (no compression).
///
/// Stored blocks keep the format trivial and dependency-free; pprof, `gzip -d` and every
/// zlib reader accept them. A profile is a few hundred kilobytes at most, so the missing
/// compression costs little.
public enum Gzip {
    /// Largest payload of one stored block.
    static let maxStoredBlock = 65_535

    /// `data` as a complete gzip member: 10-byte header, stored deflate blocks, CRC-32, size.
    public static func wrap(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(data.count + data.count / maxStoredBlock * 5 + 32)
        // ID1 ID2, CM = deflate, FLG = 0, MTIME = 0 (none), XFL = 0, OS = 3 (Unix).
        out += [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]
        var offset = 0
        repeat {
            let n = min(maxStoredBlock, data.count - offset)
            let final = offset + n == data.count
            // BFINAL in bit 0, BTYPE 00 (stored); the rest of the byte is padding.
            out.append(final ? 1 : 0)
            let len = UInt16(n), nlen = ~UInt16(n)
            out += [UInt8(len & 0xff), UInt8(len >> 8), UInt8(nlen & 0xff), UInt8(nlen >> 8)]
            out += data[offset..<(offset + n)]
            offset += n
        } while offset < data.count
        appendLittleEndian(&out, CRC32.checksum(data))
        appendLittleEndian(&out, UInt32(truncatingIfNeeded: data.count))
        return out
    }

    static func appendLittleEndian(_ out: inout [UInt8], _ v: UInt32) {
        out += [UInt8(v & 0xff), UInt8((v >> 8) & 0xff), UInt8((v >> 16) & 0xff), UInt8(v >> 24)]
    }
}

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as gzip and zlib use it.
public enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n -> UInt32 in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The CRC-32 of `data` (`"123456789"` → `0xCBF43926`).
    public static func checksum(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { t in
            for b in data { crc = t[Int((crc ^ UInt32(b)) & 0xff)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }
}
