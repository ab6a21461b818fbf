/// GNU build ID helpers.
public enum BuildID {
    /// Lowercase hex of the bytes.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits: [Character] = Array("0123456789abcdef")
        var s = ""
        s.reserveCapacity(bytes.count * 2)
        for b in bytes {
            s.append(digits[Int(b >> 4)])
            s.append(digits[Int(b & 0xF)])
        }
        return s
    }

    /// Bytes of a hex string (whitespace not allowed); nil if it isn't hex of even length.
    public static func bytes(hex: String) -> [UInt8]? {
        let u = Array(hex.utf8)
        guard u.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(u.count / 2)
        var i = 0
        while i < u.count {
            guard let h = nibble(u[i]), let l = nibble(u[i + 1]) else { return nil }
            out.append(h << 4 | l)
            i += 2
        }
        return out
    }

    /// Where a separate debug file for `buildID` lives under a debug directory
    /// (`<dir>/.build-id/ab/cdef….debug`), nil for an ID too short to split.
    public static func debugFilePath(_ buildID: [UInt8], in directory: String) -> String? {
        guard buildID.count >= 2 else { return nil }
        let h = hex(buildID)
        let dir = directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        return "\(dir)/.build-id/\(h.prefix(2))/\(h.dropFirst(2)).debug"
    }
}
