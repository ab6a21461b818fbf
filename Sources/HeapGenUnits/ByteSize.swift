// Byte counts as people write them on a command line (gate limits), and exact byte
// figures as the gate prints them.

/// Parses sizes such as `64`, `1KB`, `1 KiB`, `2MB`, `1.5 MB`, `+100 b`.
///
/// As in pytest-memray's `limit_leaks("1 KB")`, units are binary and case-insensitive:
/// `K`/`KB`/`KiB` are 1,024 bytes, `M`/`MB`/`MiB` 1,024², `G`/`GB`/`GiB` 1,024³,
/// `T`/`TB`/`TiB` 1,024⁴; `B` or no unit is bytes. A fraction is allowed and rounded down
/// to whole bytes. Negative sizes, other units and values above `Int.max` are rejected.
public enum ByteSize {
    /// The number of bytes `text` names, or `nil` if it is not a size.
    public static func parse(_ text: String) -> Int? {
        var s = Substring(text).drop { $0 == " " || $0 == "\t" }
        while let last = s.last, last == " " || last == "\t" { s = s.dropLast() }
        if s.hasPrefix("+") { s = s.dropFirst() }
        let number = s.prefix { $0.isASCII && ($0.isNumber || $0 == ".") }
        guard !number.isEmpty, number.filter({ $0 == "." }).count <= 1, number.contains(where: \.isNumber) else {
            return nil
        }
        let unit = s.dropFirst(number.count).drop { $0 == " " || $0 == "\t" }.lowercased()
        guard let multiplier = multipliers[unit] else { return nil }
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard let whole = parts[0].isEmpty ? 0 : Int(parts[0]) else { return nil }
        let (scaled, overflow) = whole.multipliedReportingOverflow(by: multiplier)
        guard !overflow else { return nil }
        var total = scaled
        if parts.count == 2, !parts[1].isEmpty {
            // The fraction, exactly: digits / 10^n × multiplier, rounded down.
            let digits = parts[1].prefix(12)
            guard let fraction = Int(digits) else { return nil }
            var scale = 1
            for _ in 0..<digits.count { scale *= 10 }
            let (extra, o1) = fraction.multipliedReportingOverflow(by: multiplier)
            guard !o1 else { return nil }
            let (sum, o2) = total.addingReportingOverflow(extra / scale)
            guard !o2 else { return nil }
            total = sum
        }
        return total
    }

    static let multipliers: [String: Int] = [
        "": 1, "b": 1,
        "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
        "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
        "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
        "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
    ]

    /// `1234` → `"1,234 B"`: exact, for limits and per-cycle figures.
    public static func exact<T: BinaryInteger>(_ n: T) -> String {
        HumanUnits.count(n) + " B"
    }

    /// `192` → `"+192 B"`, `-8` → `"-8 B"`, `0` → `"0 B"`.
    public static func signed(_ n: Int) -> String {
        (n > 0 ? "+" : "") + exact(n)
    }
}
