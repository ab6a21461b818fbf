// The one strict JSON reader: RFC 8259 syntax, bounded by explicit caps, never
// trusting its input (control requests come from the traced program).

/// Caps on what one ``JSONReader/parse(_:limits:)`` call accepts. Input beyond a cap
/// is an error, never a partial value.
public struct JSONLimits: Sendable, Equatable {
    /// Longest document, in bytes.
    public var maxBytes: Int
    /// Deepest nesting of objects and arrays (1: a flat object or array).
    public var maxDepth: Int
    /// Most members in one object.
    public var maxKeys: Int
    /// Longest string (key or value), in UTF-8 bytes after unescaping.
    public var maxStringBytes: Int

    /// Defaults generous enough for any tool output heapgen reads; untrusted input passes tighter caps.
    public init(maxBytes: Int = 64 << 20, maxDepth: Int = 64, maxKeys: Int = 100_000, maxStringBytes: Int = 16 << 20) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
        self.maxKeys = maxKeys
        self.maxStringBytes = maxStringBytes
    }
}

/// Why a document was rejected; the description names the byte offset.
public struct JSONError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What was wrong.
    public var reason: String
    /// Byte offset where the reader stopped.
    public var offset: Int

    /// An error `reason` found at byte `offset`.
    public init(reason: String, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    /// `<reason> at byte <offset>`.
    public var description: String { "\(reason) at byte \(offset)" }
}

/// Parses one JSON document.
///
/// Strict: one value then only whitespace (trailing NUL bytes are tolerated, for
/// C callers), no comments, no leading zeros, no bare `.5`, no invalid or lone-surrogate
/// `\u` escapes, no raw control characters in strings. It recurses at most
/// `limits.maxDepth` levels, so a hostile document cannot exhaust the stack.
public enum JSONReader {
    /// Parses `bytes` as one JSON document within `limits`.
    public static func parse(_ bytes: [UInt8], limits: JSONLimits = JSONLimits()) throws(JSONError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { (b: UnsafeBufferPointer<UInt8>) throws(JSONError) -> JSONValue in
            try parse(b, limits: limits)
        }
    }

    /// Parses `text`'s UTF-8 as one JSON document within `limits`.
    public static func parse(_ text: String, limits: JSONLimits = JSONLimits()) throws(JSONError) -> JSONValue {
        try parse(Array(text.utf8), limits: limits)
    }

    /// Parses `bytes` as one JSON document within `limits` (no copy).
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, limits: JSONLimits = JSONLimits()) throws(JSONError) -> JSONValue {
        guard bytes.count <= limits.maxBytes else {
            throw JSONError(reason: "document longer than \(limits.maxBytes) bytes", offset: 0)
        }
        var p = Parser(b: bytes, limits: limits)
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        while p.peek() == 0 { p.i += 1 }
        guard p.i == bytes.count else { throw p.error("trailing characters after the value") }
        return v
    }

    /// `parse`, nil instead of an error (for callers that only need "garbled").
    public static func value(_ bytes: [UInt8], limits: JSONLimits = JSONLimits()) -> JSONValue? {
        try? parse(bytes, limits: limits)
    }

    private struct Parser {
        let b: UnsafeBufferPointer<UInt8>
        let limits: JSONLimits
        var i = 0

        func peek() -> UInt8? { i < b.count ? b[i] : nil }

        func error(_ what: String) -> JSONError { JSONError(reason: what, offset: i) }

        mutating func skipSpace() {
            while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
        }

        mutating func expect(_ c: UInt8) throws(JSONError) {
            guard peek() == c else { throw error("expected '\(Character(Unicode.Scalar(c)))'") }
            i += 1
        }

        mutating func value(depth: Int) throws(JSONError) -> JSONValue {
            guard let c = peek() else { throw error("missing value") }
            switch c {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard depth < limits.maxDepth else {
                    throw error(limits.maxDepth <= 1 ? "nested objects and arrays are not supported"
                                                     : "nesting deeper than \(limits.maxDepth) levels")
                }
                return c == UInt8(ascii: "{") ? try object(depth: depth + 1) : try array(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw error("unexpected character")
            }
        }

        mutating func object(depth: Int) throws(JSONError) -> JSONValue {
            i += 1
            var members: [(key: String, value: JSONValue)] = []
            skipSpace()
            if peek() == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipSpace()
                guard peek() == UInt8(ascii: "\"") else { throw error("expected a string key") }
                let key = try string()
                skipSpace()
                try expect(UInt8(ascii: ":"))
                skipSpace()
                let v = try value(depth: depth)
                members.append((key, v))
                guard members.count <= limits.maxKeys else { throw error("more than \(limits.maxKeys) keys") }
                skipSpace()
                guard let c = peek() else { throw error("unterminated object") }
                i += 1
                if c == UInt8(ascii: "}") { return .object(members) }
                guard c == UInt8(ascii: ",") else { i -= 1; throw error("expected ',' or '}'") }
            }
        }

        mutating func array(depth: Int) throws(JSONError) -> JSONValue {
            i += 1
            var items: [JSONValue] = []
            skipSpace()
            if peek() == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                skipSpace()
                items.append(try value(depth: depth))
                skipSpace()
                guard let c = peek() else { throw error("unterminated array") }
                i += 1
                if c == UInt8(ascii: "]") { return .array(items) }
                guard c == UInt8(ascii: ",") else { i -= 1; throw error("expected ',' or ']'") }
            }
        }

        mutating func literal(_ word: StaticString) throws(JSONError) {
            let n = word.utf8CodeUnitCount
            guard b.count - i >= n else { throw error("bad literal") }
            let w = word.utf8Start
            for k in 0..<n where b[i + k] != w[k] { throw error("bad literal") }
            i += n
        }

        func isDigit(_ c: UInt8?) -> Bool { c.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }

        /// RFC 8259 number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
        mutating func number() throws(JSONError) -> Double {
            let start = i
            if peek() == UInt8(ascii: "-") { i += 1 }
            guard isDigit(peek()) else { throw error("bad number") }
            if peek() == UInt8(ascii: "0") {
                i += 1
                if isDigit(peek()) { throw error("bad number (leading zero)") }
            } else {
                while isDigit(peek()) { i += 1 }
            }
            if peek() == UInt8(ascii: ".") {
                i += 1
                guard isDigit(peek()) else { throw error("bad number") }
                while isDigit(peek()) { i += 1 }
            }
            if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
                i += 1
                if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { i += 1 }
                guard isDigit(peek()) else { throw error("bad number") }
                while isDigit(peek()) { i += 1 }
            }
            // Far longer than any exact double: refuse rather than spend time converting.
            guard i - start <= 64 else { throw error("number too long") }
            let text = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
            guard let d = Double(text), d.isFinite else { throw error("bad number") }
            return d
        }

        /// At an opening quote.
        mutating func string() throws(JSONError) -> String {
            i += 1
            let start = i
            // Fast path: no escapes (llvm-symbolizer's names rarely have any).
            while i < b.count, b[i] != UInt8(ascii: "\""), b[i] != UInt8(ascii: "\\"), b[i] >= 0x20 { i += 1 }
            guard i - start <= limits.maxStringBytes else { throw error("string longer than \(limits.maxStringBytes) bytes") }
            guard i < b.count else { throw error("unterminated string") }
            if b[i] == UInt8(ascii: "\"") {
                let s = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
                i += 1
                return s
            }
            var out = Array(b[start..<i])
            while true {
                guard out.count <= limits.maxStringBytes else { throw error("string longer than \(limits.maxStringBytes) bytes") }
                guard let c = peek() else { throw error("unterminated string") }
                if c == UInt8(ascii: "\"") { i += 1; break }
                if c < 0x20 { throw error("control character in string") }
                i += 1
                if c != UInt8(ascii: "\\") { out.append(c); continue }
                guard let e = peek() else { throw error("unterminated string") }
                i += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if scalar >= 0xDC00 && scalar < 0xE000 { throw error("lone low surrogate in \\u escape") }
                    if scalar >= 0xD800 && scalar < 0xDC00 {
                        // A high surrogate: its low half must follow.
                        guard b.count - i >= 2, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else {
                            throw error("lone high surrogate in \\u escape")
                        }
                        i += 2
                        let low = try hex4()
                        guard low >= 0xDC00 && low < 0xE000 else { throw error("lone high surrogate in \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw error("bad \\u escape") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default:
                    throw error("bad escape")
                }
            }
            guard out.count <= limits.maxStringBytes else { throw error("string longer than \(limits.maxStringBytes) bytes") }
            // Invalid UTF-8 in the input is repaired (U+FFFD), as String(decoding:) does.
            return String(decoding: out, as: UTF8.self)
        }

        mutating func hex4() throws(JSONError) -> UInt32 {
            guard b.count - i >= 4 else { throw error("short \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = b[i]
                let d: UInt32
                switch c {
                case 0x30...0x39: d = UInt32(c - 0x30)
                case 0x61...0x66: d = UInt32(c - 0x61 + 10)
                case 0x41...0x46: d = UInt32(c - 0x41 + 10)
                default: throw error("bad \\u escape")
                }
                v = v << 4 | d
                i += 1
            }
            return v
        }
    }
}
