// A small, strict JSON reader for control requests, and string escaping for answers.
//
// Requests come from the traced program, which the collector does not trust: the
// reader takes one flat object (string, number, true/false/null values; no nesting),
// bounded in size, and never recurses. Anything else is an error with a reason.

/// A value of a flat control request.
enum ControlValue: Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// An integer within `range`, or nil (also for non-integral numbers).
    func integer(in range: ClosedRange<Int>) -> Int? {
        guard case .number(let d) = self, d.isFinite, d.rounded() == d,
              d >= Double(range.lowerBound), d <= Double(range.upperBound) else { return nil }
        return Int(d)
    }
}

struct ControlJSONError: Error, CustomStringConvertible {
    var description: String
}

enum ControlJSON {
    /// Longest request the collector reads (the shim's region is larger).
    static let maxRequestBytes = 16 * 1024
    static let maxKeys = 32
    static let maxStringBytes = 4096

    /// Parses one flat JSON object. Duplicate keys: the last one wins.
    static func parseObject(_ bytes: UnsafeBufferPointer<UInt8>) throws -> [String: ControlValue] {
        guard bytes.count <= maxRequestBytes else {
            throw ControlJSONError(description: "request longer than \(maxRequestBytes) bytes")
        }
        var p = Parser(bytes: bytes)
        p.skipSpace()
        try p.expect(UInt8(ascii: "{"))
        var out: [String: ControlValue] = [:]
        p.skipSpace()
        if p.peek() == UInt8(ascii: "}") {
            p.i += 1
        } else {
            while true {
                p.skipSpace()
                let key = try p.string()
                p.skipSpace()
                try p.expect(UInt8(ascii: ":"))
                p.skipSpace()
                let value = try p.value()
                out[key] = value
                guard out.count <= maxKeys else { throw ControlJSONError(description: "more than \(maxKeys) keys") }
                p.skipSpace()
                guard let c = p.peek() else { throw ControlJSONError(description: "unterminated object") }
                p.i += 1
                if c == UInt8(ascii: "}") { break }
                guard c == UInt8(ascii: ",") else { throw p.error("expected ',' or '}'") }
            }
        }
        p.skipSpace()
        // A trailing NUL (C callers) is tolerated; anything else is not.
        while p.peek() == 0 { p.i += 1 }
        guard p.i == bytes.count else { throw p.error("trailing characters after the object") }
        return out
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0

        func peek() -> UInt8? { i < bytes.count ? bytes[i] : nil }

        func error(_ what: String) -> ControlJSONError {
            ControlJSONError(description: "\(what) at byte \(i)")
        }

        mutating func skipSpace() {
            while let c = peek(), c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { i += 1 }
        }

        mutating func expect(_ c: UInt8) throws {
            guard peek() == c else { throw error("expected '\(Character(Unicode.Scalar(c)))'") }
            i += 1
        }

        mutating func value() throws -> ControlValue {
            guard let c = peek() else { throw error("missing value") }
            switch c {
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            case UInt8(ascii: "{"), UInt8(ascii: "["): throw error("nested objects and arrays are not supported")
            default: throw error("unexpected character")
            }
        }

        mutating func literal(_ word: StaticString) throws {
            let n = word.utf8CodeUnitCount
            guard bytes.count - i >= n else { throw error("bad literal") }
            let w = word.utf8Start
            for k in 0..<n where bytes[i + k] != w[k] { throw error("bad literal") }
            i += n
        }

        mutating func number() throws -> Double {
            let start = i
            if peek() == UInt8(ascii: "-") { i += 1 }
            var digits = 0
            while let c = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) || c == UInt8(ascii: ".")
                || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") || c == UInt8(ascii: "+") || c == UInt8(ascii: "-") {
                i += 1
                digits += 1
                guard digits <= 32 else { throw error("number too long") }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
            guard let d = Double(text), d.isFinite else { throw error("bad number") }
            return d
        }

        mutating func string() throws -> String {
            try expect(UInt8(ascii: "\""))
            var out: [UInt8] = []
            while true {
                guard let c = peek() else { throw error("unterminated string") }
                i += 1
                guard out.count <= ControlJSON.maxStringBytes else { throw error("string longer than \(ControlJSON.maxStringBytes) bytes") }
                if c == UInt8(ascii: "\"") { break }
                if c < 0x20 { throw error("control character in string") }
                if c != UInt8(ascii: "\\") {
                    out.append(c)
                    continue
                }
                guard let e = peek() else { throw error("unterminated escape") }
                i += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard bytes.count - i >= 4 else { throw error("short \\u escape") }
                    var v: UInt32 = 0
                    for _ in 0..<4 {
                        guard let h = hexValue(bytes[i]) else { throw error("bad \\u escape") }
                        v = v << 4 | h
                        i += 1
                    }
                    // Lone or paired surrogates become U+FFFD: names never need them.
                    let scalar = Unicode.Scalar(v) ?? Unicode.Scalar(0xFFFD)!
                    out.append(contentsOf: Array(String(Character(scalar)).utf8))
                default: throw error("bad escape")
                }
            }
            return String(decoding: out, as: UTF8.self)
        }

        func hexValue(_ c: UInt8) -> UInt32? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(c - UInt8(ascii: "A") + 10)
            default: nil
            }
        }
    }

    /// `s` as a JSON string literal, quotes included.
    static func quote(_ s: String) -> String {
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
                    let hex = String(u.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out + "\""
    }
}
