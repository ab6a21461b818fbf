// The one JSON string quoter, and a small builder for flat objects written by hand
// (control answers and requests), so no copy of the escaping rules exists elsewhere.

/// Writes JSON text.
public enum JSONWriter {
    /// `s` as a JSON string literal, quotes included: `"` and `\` escaped, `\n`, `\r`,
    /// `\t` by name, other control characters as `\u00xx` (lowercase hex); everything
    /// else, `/` and non-ASCII included, verbatim.
    public static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if u.value < 0x20 {
                    out += u.value < 0x10 ? "\\u000" : "\\u00"
                    out += String(u.value, radix: 16)
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}

/// A JSON object written member by member, in the order given (the control protocol's
/// answers have a fixed member order that clients may compare byte for byte).
public struct JSONObjectWriter: Sendable {
    private var text = "{"
    private var empty = true

    /// An empty object.
    public init() {}

    private mutating func key(_ k: String) {
        if !empty { text += "," }
        empty = false
        text += JSONWriter.quote(k)
        text += ":"
    }

    /// A member whose value is already JSON text.
    public mutating func raw(_ k: String, _ json: String) { key(k); text += json }
    /// A string member.
    public mutating func string(_ k: String, _ v: String) { key(k); text += JSONWriter.quote(v) }
    /// A string member, or `null`.
    public mutating func string(_ k: String, _ v: String?) { key(k); text += v.map(JSONWriter.quote) ?? "null" }
    /// A `true`/`false` member.
    public mutating func bool(_ k: String, _ v: Bool) { key(k); text += v ? "true" : "false" }
    /// An integer member, in decimal.
    public mutating func int<I: BinaryInteger>(_ k: String, _ v: I) { key(k); text += "\(v)" }

    /// The object's text, closing brace included.
    public var json: String { text + "}" }
}
