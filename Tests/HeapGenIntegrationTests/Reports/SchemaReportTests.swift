// The shape of heapgen-report/1 (docs/report-schema.md): every documented field,
// with its JSON type, on real reports; and the documented order of findings.

import Foundation
import HeapGenTestSupport
import XCTest

final class SchemaReportTests: XCTestCase {
    func testEveryDocumentedFieldHasItsType() throws {
        let fixture = try ReportFixture.c("sites.c")
        let run = try HeapGenCLI.runJSON(fixture, ["leaky", "8"])
        let r = run.report
        // Exact JSON types (JSONSerialization on Linux blurs 0/1 and false/true).
        let typed = try JSONDecoder().decode(JSONValue.self, from: Data(r.raw.utf8))
        var problems: [String] = []
        func check(_ obj: [String: Any], _ key: String, _ path: String, _ kind: Kind, nullable: Bool = false) {
            let full = path.isEmpty ? key : path + "." + key
            guard let value = typed.at(full) else { problems.append("\(full): missing"); return }
            if case .null = value {
                if !nullable { problems.append("\(full): null") }
                return
            }
            if !kind.matches(value) { problems.append("\(full): \(value) is not \(kind)") }
        }

        check(r.json, "schema", "", .string)
        XCTAssertEqual(r.schema, "heapgen-report/1")
        check(r.json, "trace", "", .string)
        check(r.json, "program", "", .object)
        for (k, kind, nullable) in [("path", Kind.string, false), ("args", .array, false), ("pid", .int, false),
                                    ("exitStatus", .int, true), ("signal", .int, true)] {
            check(r.program, k, "program", kind, nullable: nullable)
        }
        check(r.json, "options", "", .object)
        for k in ["warmUp", "toleratedMisses"] { check(r.options, k, "options", .int) }
        check(r.json, "totals", "", .object)
        for k in ["allocations", "frees", "allocatedBytes", "peakBytes", "peakGeneration", "liveAtExitObjects",
                  "liveAtExitBytes", "producerWaits", "producerWaitNanoseconds", "lostEvents", "untrackedFrees"] {
            check(r.totals, k, "totals", .int)
        }
        check(r.json, "cycles", "", .int)
        check(r.json, "judgedCycles", "", .int)
        check(r.json, "generations", "", .array)
        for (i, g) in r.generations.enumerated() {
            let isTail = i == r.generations.count - 1
            check(g.json, "index", "generations.\(i)", .int)
            check(g.json, "label", "generations.\(i)", .string, nullable: isTail)
            for k in ["allocations", "frees", "allocatedBytes", "liveObjects", "liveBytes", "persistentObjects", "persistentBytes"] {
                check(g.json, k, "generations.\(i)", .int)
            }
        }
        check(r.json, "findings", "", .array)
        XCTAssertFalse(r.findings.isEmpty)
        for (i, f) in r.findings.enumerated() {
            let p = "findings.\(i)"
            check(f.json, "kind", p, .string)
            XCTAssertTrue(["abandoned", "leaked", "cache"].contains(f.kind), "\(p).kind = \(f.kind)")
            check(f.json, "typeName", p, .string, nullable: true)
            check(f.json, "frames", p, .array)
            check(f.json, "userFrame", p, .int, nullable: true)
            for k in ["cycles", "cyclesWithGrowth", "survivingObjects", "survivingBytes"] { check(f.json, k, p, .int) }
            check(f.json, "averageBytesPerCycle", p, .number)
            for k in ["objectsPerCycle", "bytesPerCycle"] {
                check(f.json, k, p, .array)
                let values = f.json[k] as? [Any] ?? []
                XCTAssertEqual(values.count, r.cycles, "\(p).\(k) has one entry per cycle, warm-up included")
                for j in values.indices { check([:], "\(j)", "\(p).\(k)", .int) }
            }
            if let u = f.userFrameIndex { XCTAssertTrue(f.frames.indices.contains(u), "\(p).userFrame \(u) out of range") }
            for (j, frame) in f.frames.enumerated() { checkFrame(frame.json, "\(p).frames.\(j)", check) }
        }
        check(r.json, "liveAtExit", "", .object)
        let live = r.json["liveAtExit"] as? [String: Any] ?? [:]
        check(live, "objects", "liveAtExit", .int)
        check(live, "bytes", "liveAtExit", .int)
        check(live, "sites", "liveAtExit", .array)
        for (i, site) in (live["sites"] as? [[String: Any]] ?? []).enumerated() {
            check(site, "typeName", "liveAtExit.sites.\(i)", .string, nullable: true)
            check(site, "objects", "liveAtExit.sites.\(i)", .int)
            check(site, "bytes", "liveAtExit.sites.\(i)", .int)
            check(site, "frames", "liveAtExit.sites.\(i)", .array)
            for (j, frame) in (site["frames"] as? [[String: Any]] ?? []).enumerated() {
                checkFrame(frame, "liveAtExit.sites.\(i).frames.\(j)", check)
            }
        }
        check(live, "startup", "liveAtExit", .object)
        let startup = live["startup"] as? [String: Any] ?? [:]
        check(startup, "objects", "liveAtExit.startup", .int)
        check(startup, "bytes", "liveAtExit.startup", .int)
        check(startup, "parts", "liveAtExit.startup", .array)
        for (i, part) in (startup["parts"] as? [[String: Any]] ?? []).enumerated() {
            for k in ["name", "module"] { check(part, k, "liveAtExit.startup.parts.\(i)", .string) }
            for k in ["objects", "bytes"] { check(part, k, "liveAtExit.startup.parts.\(i)", .int) }
        }
        XCTAssertEqual(jsonInt(live["objects"]), r.total("liveAtExitObjects"))
        XCTAssertEqual(jsonInt(live["bytes"]), r.total("liveAtExitBytes"))
        check(r.json, "otherTraces", "", .array)
        check(r.json, "notes", "", .array)
        XCTAssertTrue(problems.isEmpty, "schema problems:\n" + problems.joined(separator: "\n") + "\n\(r)")
    }

    private func checkFrame(_ frame: [String: Any], _ path: String,
                            _ check: ([String: Any], String, String, Kind, Bool) -> Void) {
        check(frame, "function", path, .string, true)
        check(frame, "shortFunction", path, .string, true)
        check(frame, "file", path, .string, true)
        check(frame, "line", path, .int, true)
        check(frame, "column", path, .int, true)
        check(frame, "module", path, .string, true)
        check(frame, "address", path, .hexString, false)
        check(frame, "inlined", path, .bool, false)
        check(frame, "moduleOffset", path, .hexString, true)
        // The offset is the address in its module's numbering: the module's frames say where it loaded.
        if frame["module"] is String {
            check(frame, "moduleOffset", path, .hexString, false)
        }
    }

    /// Abandoned, then leaked, then cache; within a kind by bytes per cycle, largest first.
    func testFindingsAreInTheDocumentedOrder() throws {
        let fixture = try ReportFixture.swift("Patterns")
        let r = try HeapGenCLI.runJSON(fixture, ["6"]).report
        XCTAssertGreaterThan(r.findings.count, 3, r.findingsSummary)
        let rank = ["abandoned": 0, "leaked": 1, "cache": 2]
        let kinds = r.findings.map { rank[$0.kind] ?? 99 }
        XCTAssertEqual(kinds, kinds.sorted(), "kinds out of order:\n\(r.findingsSummary)")
        for kind in ["abandoned", "leaked", "cache"] {
            let bytes = r.findings(kind: kind).map { $0.averageBytesPerCycle ?? -1 }
            XCTAssertEqual(bytes, bytes.sorted(by: >), "\(kind) findings not by bytes per cycle, largest first: \(bytes)")
        }
    }
}

enum Kind: CustomStringConvertible {
    case string, int, number, bool, array, object, hexString

    func matches(_ value: JSONValue) -> Bool {
        switch (self, value) {
        case (.string, .string), (.int, .int), (.number, .int), (.number, .double), (.bool, .bool),
             (.array, .array), (.object, .object):
            return true
        case (.hexString, .string(let s)):
            return s.hasPrefix("0x") && s.count > 2 && UInt64(s.dropFirst(2), radix: 16) != nil
        default:
            return false
        }
    }

    var description: String {
        switch self {
        case .string: "a string"
        case .int: "an integer"
        case .number: "a number"
        case .bool: "a boolean"
        case .array: "an array"
        case .object: "an object"
        case .hexString: "a \"0x…\" string"
        }
    }
}

/// A JSON value with its exact type.
indirect enum JSONValue: Decodable, CustomStringConvertible {
    case null, bool(Bool), int(Int64), double(Double), string(String), array([JSONValue]), object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null; return }
        if let b = try? c.decode(Bool.self) { self = .bool(b); return }
        if let i = try? c.decode(Int64.self) { self = .int(i); return }
        if let d = try? c.decode(Double.self) { self = .double(d); return }
        if let s = try? c.decode(String.self) { self = .string(s); return }
        if let a = try? c.decode([JSONValue].self) { self = .array(a); return }
        self = .object(try c.decode([String: JSONValue].self))
    }

    /// The value at a dotted path; array elements by index ("findings.0.frames.2.line").
    func at(_ path: String) -> JSONValue? {
        var cur: JSONValue? = self
        for part in path.split(separator: ".") {
            switch cur {
            case .object(let o)?: cur = o[String(part)]
            case .array(let a)?: cur = Int(part).flatMap { a.indices.contains($0) ? a[$0] : nil }
            default: return nil
            }
        }
        return cur
    }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let b): "boolean \(b)"
        case .int(let i): "integer \(i)"
        case .double(let d): "number \(d)"
        case .string(let s): "string \"\(s)\""
        case .array(let a): "array of \(a.count)"
        case .object(let o): "object with \(o.count) keys"
        }
    }
}
