// Durations as people type them on a command line (`--mark-every`, `--settle`).

/// Parses durations as people type them on a command line: `2s`, `500ms`,
/// `1.5s`, `250us`, `1m`; a bare number means seconds.
public enum DurationArgument {
    /// Nanoseconds, or nil if `text` is not a duration.
    public static func nanoseconds(_ text: String) -> UInt64? {
        let units: [(String, Double)] = [("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3600e9)]
        var number = Substring(text)
        var scale = 1e9
        // Longest suffix first: "ms" before "s".
        for (suffix, factor) in units.sorted(by: { $0.0.count > $1.0.count }) where text.hasSuffix(suffix) {
            number = text.dropLast(suffix.count)
            scale = factor
            break
        }
        guard let value = Double(number), value.isFinite, value >= 0, value * scale < 1e18 else { return nil }
        return UInt64(value * scale)
    }
}
