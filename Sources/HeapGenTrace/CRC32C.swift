// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), slicing-by-8.

/// CRC-32C as used for chunk payloads.
enum CRC32C {
    /// Eight 256-entry tables; table `k` advances a byte through `k` more zero bytes.
    static let tables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
            t[i] = c
        }
        for k in 1..<8 {
            for i in 0..<256 {
                let prev = t[(k - 1) * 256 + i]
                t[k * 256 + i] = (prev >> 8) ^ t[Int(prev & 0xFF)]
            }
        }
        return t
    }()

    /// CRC-32C of `bytes`, continuing from `crc` (0 for a fresh checksum).
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return crc }
        return tables.withUnsafeBufferPointer { tp in
            // The table array is never empty; the fallback is unreachable.
            guard let t = tp.baseAddress else { return crc }
            var c = ~crc
            var i = 0
            let n = bytes.count
            while i &+ 8 <= n {
                let v = base.loadUnaligned(fromByteOffset: i, as: UInt64.self).littleEndian ^ UInt64(c)
                c = t[7 * 256 + Int(v & 0xFF)]
                    ^ t[6 * 256 + Int((v &>> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((v &>> 16) & 0xFF)]
                    ^ t[4 * 256 + Int((v &>> 24) & 0xFF)]
                    ^ t[3 * 256 + Int((v &>> 32) & 0xFF)]
                    ^ t[2 * 256 + Int((v &>> 40) & 0xFF)]
                    ^ t[1 * 256 + Int((v &>> 48) & 0xFF)]
                    ^ t[Int(v &>> 56)]
                i &+= 8
            }
            while i < n {
                c = t[Int((c ^ UInt32(base.load(fromByteOffset: i, as: UInt8.self))) & 0xFF)] ^ (c >> 8)
                i &+= 1
            }
            return ~c
        }
    }

    /// CRC-32C of a byte array.
    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
