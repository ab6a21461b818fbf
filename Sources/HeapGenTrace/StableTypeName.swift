/// Swift type names as the runtime spells them carry the address of an anonymous
/// context for private and fileprivate types: `Screens.SessionRegistry.(unknown
/// context at $55e19e4d4fcc).Entry`. The address moves with ASLR, so the same type
/// would get a new name in every run (a flaky baseline, phantom new/gone pairs in a
/// diff). Names are kept with `(private)` in its place, which is the same in every run.
public enum StableTypeName {
    private static let prefix = Array("(unknown context at $".utf8)

    /// `name` with each `(unknown context at $HEX)` replaced by `(private)`.
    public static func of(_ name: String) -> String {
        let bytes = Array(name.utf8)
        guard bytes.count >= prefix.count, contains(bytes) else { return name }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if matchesPrefix(bytes, at: i) {
                var j = i + prefix.count
                while j < bytes.count, isHexDigit(bytes[j]) { j += 1 }
                if j > i + prefix.count, j < bytes.count, bytes[j] == UInt8(ascii: ")") {
                    out += Array("(private)".utf8)
                    i = j + 1
                    continue
                }
            }
            out.append(bytes[i])
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func contains(_ bytes: [UInt8]) -> Bool {
        for i in 0...(bytes.count - prefix.count) where matchesPrefix(bytes, at: i) { return true }
        return false
    }

    private static func matchesPrefix(_ bytes: [UInt8], at i: Int) -> Bool {
        guard i + prefix.count <= bytes.count else { return false }
        for k in 0..<prefix.count where bytes[i + k] != prefix[k] { return false }
        return true
    }

    private static func isHexDigit(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x66) || (b >= 0x41 && b <= 0x46)
    }
}
