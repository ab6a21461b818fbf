// HeapGenJSON: the strict reader's grammar and caps, the quoter, and a fuzz-style
// check that mutated documents never crash the reader.

import XCTest
import HeapGenJSON

final class JSONReaderTests: XCTestCase {
    func parse(_ s: String, _ limits: JSONLimits = JSONLimits()) -> JSONValue? {
        try? JSONReader.parse(s, limits: limits)
    }

    func testValidDocuments() throws {
        XCTAssertEqual(parse(#"{"a":[1,-2.5e1,true,false,null],"b":"x\"\\\/\n\u00e9\ud83d\ude00"}"#),
                       .object([("a", .array([.number(1), .number(-25), .bool(true), .bool(false), .null])),
                                ("b", .string("x\"\\/\n\u{e9}\u{1F600}"))]))
        XCTAssertEqual(parse(" [ ] "), .array([]))
        XCTAssertEqual(parse("{}\0\0"), .object([]))   // trailing NULs from C callers
        XCTAssertEqual(parse("0"), .number(0))
        XCTAssertEqual(parse("-0.5E+3"), .number(-500))
        let dup = try XCTUnwrap(parse(#"{"k":1,"k":2}"#))
        XCTAssertEqual(dup["k"], .number(2), "the last duplicate wins")
        XCTAssertEqual(dup.members?["k"], .number(2))
        XCTAssertEqual(JSONValue.number(3).integer(in: 0...5), 3)
        XCTAssertNil(JSONValue.number(3.5).int)
    }

    func testInvalidDocuments() {
        let bad = ["", "{", "{\"a\"}", "[1,]", "\"abc", "tru", "{\"a\":1}x", "\"\\ud83d\"", "\"\\udc00\"",
                   "\"\\ud83dx\"", "\"\\q\"", "\"\\u12g4\"", "01", "1.", ".5", "-", "1e", "+1", "[1 2]",
                   "{\"a\" 1}", "{1:2}", "\"a\u{1}b\"", "nul", "[1,,2]", "NaN", "1e999", "{} {}",
                   String(repeating: "[", count: 100) + String(repeating: "]", count: 100)]
        for text in bad { XCTAssertNil(parse(text), text) }
    }

    func testErrorsSayWhereAndWhy() {
        XCTAssertThrowsError(try JSONReader.parse("{\"a\":\"x", limits: JSONLimits())) {
            XCTAssertTrue("\($0)".contains("unterminated string"), "\($0)")
        }
        XCTAssertThrowsError(try JSONReader.parse("{\"a\":1} x")) {
            XCTAssertEqual(($0 as? JSONError)?.offset, 8)
            XCTAssertTrue("\($0)".contains("trailing characters"))
        }
        XCTAssertThrowsError(try JSONReader.parse("{\"a\":\"\\x\"}")) { XCTAssertTrue("\($0)".contains("bad escape")) }
    }

    func testCaps() {
        let flat = JSONLimits(maxBytes: 64, maxDepth: 1, maxKeys: 2, maxStringBytes: 8)
        XCTAssertNotNil(parse(#"{"a":"12345678","b":1}"#, flat))
        XCTAssertThrowsError(try JSONReader.parse(#"{"a":{"b":1}}"#, limits: flat)) {
            XCTAssertTrue("\($0)".contains("nested objects and arrays are not supported"), "\($0)")
        }
        XCTAssertNil(parse(#"{"a":1,"b":2,"c":3}"#, flat), "too many keys")
        XCTAssertNil(parse(#"{"a":"123456789"}"#, flat), "string too long")
        XCTAssertNil(parse(#"{"a":"1234567\n9"}"#, flat), "string too long after an escape")
        XCTAssertNil(parse(#"{"abcdefghi":1}"#, flat), "key too long")
        XCTAssertNil(parse("[" + String(repeating: " ", count: 64) + "]", flat), "document too long")
        var deep = JSONLimits()
        deep.maxDepth = 3
        XCTAssertNotNil(parse("[[[1]]]", deep))
        XCTAssertNil(parse("[[[[1]]]]", deep))
    }

    func testQuote() {
        XCTAssertEqual(JSONWriter.quote("a\"b\\c\n\r\t\u{1}\u{1f}/é"), #""a\"b\\c\n\r\t\u0001\u001f/é""#)
        for s in ["", "plain", "\u{0}\u{7f}\u{10FFFF}", "x\u{8}\u{c}y"] {
            XCTAssertEqual(parse(JSONWriter.quote(s)), .string(s), s)
        }
        var w = JSONObjectWriter()
        w.bool("ok", true)
        w.string("op", "x")
        w.string("none", nil)
        w.int("n", UInt64(7))
        w.raw("r", "[]")
        XCTAssertEqual(w.json, #"{"ok":true,"op":"x","none":null,"n":7,"r":[]}"#)
    }

    /// Random mutations of valid documents: the reader returns a value or an error, never
    /// crashes, and whatever it accepts stays within the caps.
    func testMutatedDocumentsNeverCrash() {
        let seeds = [
            #"{"op":"begin","label":"x\u00e9\ud83d\ude00","warmUp":1,"keep":true,"n":null,"a":-1.5e3}"#,
            #"{"Address":"0x1190","ModuleName":"m","Symbol":[{"FunctionName":"f","FileName":"a.c","Line":7,"Column":3}]}"#,
            #"[[[[{"a":[1,2,{"b":"\\\"\/"}]}]]]]"#,
        ]
        let limits = JSONLimits(maxBytes: 512, maxDepth: 4, maxKeys: 8, maxStringBytes: 32)
        let alphabet = Array(#"{}[]:,"\\/u0123456789abcdefABCDEF-+.eE ntrfl"#.utf8) + [0, 0x1f, 0x80, 0xC3, 0xED, 0xFF]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            var doc = Array(seeds.randomElement(using: &rng)!.utf8)
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                let at = Int.random(in: 0...doc.count, using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0 where at < doc.count: doc[at] = alphabet.randomElement(using: &rng)!
                case 1: doc.insert(alphabet.randomElement(using: &rng)!, at: at)
                case 2 where at < doc.count: doc.remove(at: at)
                default:
                    let end = min(doc.count, at + Int.random(in: 0...8, using: &rng))
                    doc.insert(contentsOf: doc[at..<end], at: at)
                }
            }
            if let v = try? JSONReader.parse(doc, limits: limits) {
                XCTAssertTrue(within(v, limits, depth: 0), String(decoding: doc, as: UTF8.self))
            }
        }
        // Much deeper than the stack could take if the reader recursed without a cap.
        XCTAssertNil(parse(String(repeating: "[", count: 1_000_000)))
    }

    private func within(_ v: JSONValue, _ limits: JSONLimits, depth: Int) -> Bool {
        switch v {
        case .object(let members):
            return depth < limits.maxDepth && members.count <= limits.maxKeys
                && members.allSatisfy { $0.key.utf8.count <= limits.maxStringBytes && within($0.value, limits, depth: depth + 1) }
        case .array(let items):
            return depth < limits.maxDepth && items.allSatisfy { within($0, limits, depth: depth + 1) }
        case .string(let s):
            // Repaired invalid UTF-8 may grow by U+FFFD's extra bytes.
            return s.utf8.count <= limits.maxStringBytes * 3
        default:
            return true
        }
    }
}
