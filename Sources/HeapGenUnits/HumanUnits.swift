// Numbers as people read them: counts, bytes and durations in heapgen's text output.

/// Compact number formatting for the text report (no Foundation, no locale).
public enum HumanUnits {
    /// `1234567` → `"1,234,567"`; negative numbers keep their sign.
    public static func count<T: BinaryInteger>(_ n: T) -> String {
        let negative = n < 0
        let digits = String(n.magnitude)
        var out = ""
        for (i, ch) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(ch)
        }
        return negative ? "-" + out : out
    }

    /// Decimal units with one decimal above 1000: `512` → `"512 B"`, `48_000` → `"48.0 kB"`,
    /// `1_234_567` → `"1.2 MB"`. Negative values keep their sign.
    public static func bytes<T: BinaryInteger>(_ n: T) -> String {
        let negative = n < 0
        let magnitude = UInt64(clamping: n.magnitude)
        let sign = negative ? "-" : ""
        if magnitude < 1000 { return "\(sign)\(magnitude) B" }
        let units = ["kB", "MB", "GB", "TB", "PB"]
        var value = Double(magnitude) / 1000
        var unit = 0
        while value >= 999.95 && unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return sign + oneDecimal(value) + " " + units[unit]
    }

    /// A change: `"+48 B"`, `"-1.2 kB"`, `"0 B"`.
    public static func signedBytes(_ n: Int) -> String {
        n > 0 ? "+" + bytes(n) : bytes(n)
    }

    /// `1_500_000` ns → `"1.5 ms"`.
    public static func duration(nanoseconds ns: UInt64) -> String {
        if ns < 1_000 { return "\(ns) ns" }
        if ns < 1_000_000 { return oneDecimal(Double(ns) / 1e3) + " µs" }
        if ns < 1_000_000_000 { return oneDecimal(Double(ns) / 1e6) + " ms" }
        return oneDecimal(Double(ns) / 1e9) + " s"
    }

    /// `1 object`, `3 objects`.
    public static func plural<T: BinaryInteger>(_ n: T, _ singular: String, _ pluralForm: String? = nil) -> String {
        "\(count(n)) \(n == 1 ? singular : (pluralForm ?? singular + "s"))"
    }

    /// `11` → `"signal 11 (SIGSEGV)"`: the number a shell shows, and the name people search for.
    /// Linux's x86-64 and arm64 numbering; an unnamed number stays a bare number.
    public static func signal(_ n: Int32) -> String {
        let names = ["HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV",
                     "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN",
                     "TTOU", "URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS"]
        guard n >= 1 && Int(n) <= names.count else { return "signal \(n)" }
        return "signal \(n) (SIG\(names[Int(n) - 1]))"
    }

    /// `2.04` → `"2.0"`, `-0.06` → `"-0.1"`.
    static func oneDecimal(_ v: Double) -> String {
        let tenths = Int((v * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        return "\(sign)\(abs(tenths) / 10).\(abs(tenths) % 10)"
    }

    /// A mean with at most one decimal, trailing `.0` dropped: `3` → `"3"`, `2.5` → `"2.5"`.
    /// Public for the text report's per-cycle averages.
    public static func mean(_ v: Double) -> String {
        let s = oneDecimal(v)
        return s.hasSuffix(".0") ? String(s.dropLast(2)) : s
    }
}
