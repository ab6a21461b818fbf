// HeapGenControlProtocol: requests parse with the collector's caps and error texts, the
// collector's hand-written answers keep their exact bytes, and clients decode answers.

import Foundation
import XCTest
import HeapGenControlProtocol
import HeapGenJSON

final class ControlProtocolTests: XCTestCase {
    private func parse(_ text: String) throws(ControlProtocolError) -> ControlRequest {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBufferPointer { (b: UnsafeBufferPointer<UInt8>) throws(ControlProtocolError) in
            try ControlRequest.parse(b)
        }
    }

    private func error(_ text: String) -> String {
        do {
            _ = try parse(text)
            return "accepted"
        } catch {
            return error.description
        }
    }

    func testRequests() throws {
        let r = try parse(#"{"op":"object","address":"0x1f","sp":"42","n":7,"keep":true}"#)
        XCTAssertEqual(r.op, .object)
        XCTAssertEqual(r.address("address"), 0x1f)
        XCTAssertEqual(r.address("sp"), 42)
        XCTAssertEqual(r.address("n"), 7)
        XCTAssertNil(r.address("missing"))
        XCTAssertTrue(r.keep)
        XCTAssertNil(try parse(#"{"op":"nope"}"#).op)
        let long = try parse(#"{"op":"begin","label":""# + String(repeating: "x", count: 300) + #""}"#)
        XCTAssertEqual(long.label?.count, ControlLimits.maxLabelCharacters)
    }

    /// The texts the control-channel integration test looks for.
    func testErrors() {
        XCTAssertTrue(error("garbage").hasPrefix("malformed request"))
        XCTAssertTrue(error("").hasPrefix("malformed request"))
        XCTAssertTrue(error(#"{"op":"object","address":{"x":1}}"#).contains("nested objects and arrays are not supported"))
        XCTAssertTrue(error(#"{"address":"0x1"}"#).contains("no \"op\""))
        XCTAssertTrue(error(#"{"op":"ping"} x"#).contains("trailing characters"))
        XCTAssertTrue(error(#"{"op":"ping"#).contains("unterminated string"))
        XCTAssertTrue(error(#"{"op":"p\qing"}"#).contains("bad escape"))
        XCTAssertTrue(error("[[[[[[[[").hasPrefix("malformed request"))
        XCTAssertTrue(error("[1]").hasPrefix("malformed request"))
        XCTAssertTrue(error(#"{"op":"ping","x":""# + String(repeating: "y", count: 5000) + #""}"#).contains("string longer than 4096"))
        let keys = (0..<40).map { "\"k\($0)\":1" }.joined(separator: ",")
        XCTAssertTrue(error(#"{"op":"ping","# + keys + "}").contains("more than 32 keys"))
        XCTAssertTrue(error("{\"op\":\"ping\",\"x\":\"" + String(repeating: "y", count: 17_000) + "\"}").contains("longer than 16384"))
        XCTAssertEqual(ControlProtocolError.unknownOp("fly").description, #"unknown op "fly""#)
    }

    func testGrowthOptions() throws {
        let r = try parse(#"{"op":"begin","warmUp":2,"toleratedMisses":null,"minBytesPerCycle":64}"#)
        XCTAssertEqual(try r.growthOptions(base: GrowthOptions()),
                       GrowthOptions(warmUp: 2, toleratedMisses: 1, minBytesPerCycle: 64, minObjectsPerCycle: 0))
        for bad in [#"{"op":"begin","warmUp":-1}"#, #"{"op":"begin","warmUp":1.5}"#, #"{"op":"begin","warmUp":"1"}"#,
                    #"{"op":"begin","toleratedMisses":1000001}"#] {
            XCTAssertThrowsError(try parse(bad).growthOptions(base: GrowthOptions()), bad) {
                XCTAssertTrue("\($0)".contains("must be a non-negative integer"))
            }
        }
    }

    /// Byte for byte what the collector wrote before these types existed.
    func testAnswerTexts() {
        XCTAssertEqual(ControlAnswerText.error("a \"b\"\n"), #"{"ok":false,"error":"a \"b\"\n"}"#)
        XCTAssertEqual(ControlAnswerText.ping(tracking: false), #"{"ok":true,"op":"ping","tracking":false}"#)
        XCTAssertEqual(ControlAnswerText.track(since: 12, already: true),
                       #"{"ok":true,"op":"track","tracking":true,"since":12,"already":true}"#)
        XCTAssertEqual(ControlAnswerText.untrack, #"{"ok":true,"op":"untrack","tracking":false}"#)
        XCTAssertEqual(ControlAnswerText.begin(since: 5), #"{"ok":true,"op":"begin","since":5}"#)
        XCTAssertEqual(ControlAnswerText.end(ended: true), #"{"ok":true,"op":"end","ended":true}"#)
        XCTAssertEqual(ControlAnswerText.Status(tracking: true, liveBlocks: 3, marks: 2, session: false, untrackedFrees: 1,
                                                answered: 9, rejected: 4, ignored: 0).json,
                       #"{"ok":true,"op":"status","tracking":true,"liveBlocks":3,"marks":2,"session":false,"untrackedFrees":1,"answered":9,"rejected":4,"ignored":0}"#)
        XCTAssertEqual(ControlAnswerText.Scan(unreachable: 3, indirect: 1, live: 120, scannedBytes: 4096, rootBytes: 512,
                                              rootRegions: 7, threads: 2, threadsStopped: 2, deadStackBytes: 64,
                                              microseconds: 900).json,
                       #"{"ok":true,"op":"scan","unreachable":3,"indirect":1,"live":120,"scannedBytes":4096,"rootBytes":512,"rootRegions":7,"threads":2,"threadsStopped":2,"deadStackBytes":64,"microseconds":900}"#)
    }

    /// Byte for byte what HeapGenTesting sent before.
    func testRequestTexts() {
        XCTAssertEqual(ControlRequestText.simple(.track), #"{"op":"track"}"#)
        XCTAssertEqual(ControlRequestText.object(address: 0xabc), #"{"op":"object","address":"0xabc"}"#)
        XCTAssertEqual(ControlRequestText.begin(label: "Mod/F.swift:12", options: GrowthOptions(warmUp: 2, toleratedMisses: 1,
                                                minBytesPerCycle: 0, minObjectsPerCycle: 3)),
                       #"{"op":"begin","label":"Mod/F.swift:12","warmUp":2,"toleratedMisses":1,"minBytesPerCycle":0,"minObjectsPerCycle":3}"#)
    }

    func testDecodeAnswers() throws {
        let growth = try JSONReader.parse(#"""
            {"cycles":10,"findings":[{"averageBytesPerCycle":48,"bytesPerCycle":[48,48],"cycles":10,"cyclesWithGrowth":9,
            "frames":[{"address":"0x10","function":"f","inlined":false,"line":3},{"address":"0x20"}],"kind":"growth",
            "objectsPerCycle":[1,1],"survivingBytes":480,"survivingObjects":10,"typeName":"M.T","userFrame":0}],
            "judgedCycles":8,"label":"x:1","marks":11,"notes":["n"],"ok":true,"op":"growth","toleratedMisses":1,"warmUp":2}
            """#)
        let g = try ControlGrowthAnswer(json: growth)
        XCTAssertEqual(g.findings.count, 1)
        XCTAssertEqual(g.findings[0].frames[0].function, "f")
        XCTAssertEqual(g.findings[0].frames[1].address, "0x20")
        XCTAssertEqual(g.findings[0].bytesPerCycle, [48, 48])
        XCTAssertEqual(g.label, "x:1")
        XCTAssertEqual(g.judgedCycles, 8)

        let dead = try ControlObjectAnswer(json: JSONReader.parse(#"{"address":"0x1","live":false,"ok":true,"op":"object"}"#))
        XCTAssertFalse(dead.live)
        XCTAssertNil(dead.frames)
        let live = try ControlObjectAnswer(json: JSONReader.parse(
            #"{"address":"0x1","allocation":7,"frames":[],"generation":0,"generationLabel":null,"live":true,"ok":true,"op":"object","size":48}"#))
        XCTAssertEqual(live.allocation, 7)
        XCTAssertEqual(live.frames?.count, 0)

        let refused = try ControlStatusAnswer(json: JSONReader.parse(#"{"ok":false,"error":"why"}"#))
        XCTAssertEqual(refused.error, "why")
        XCTAssertThrowsError(try ControlGrowthAnswer(json: JSONReader.parse(#"{"ok":true}"#)))
        XCTAssertThrowsError(try ControlObjectAnswer(json: JSONReader.parse(#"{"ok":true,"live":"yes"}"#)))
    }

    /// The collector writes the `object` answer with the type the client reads it with: what it
    /// writes reads back the same, frames carry every member (null when unknown, as in
    /// reports), and a dead block's answer is just the four members it always had.
    func testObjectAnswerIsWrittenWithTheTypeThatReadsIt() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let dead = ControlObjectAnswer(address: "0x1")
        XCTAssertEqual(String(decoding: try encoder.encode(dead), as: UTF8.self),
                       #"{"address":"0x1","live":false,"ok":true,"op":"object"}"#)

        var live = ControlObjectAnswer(address: "0x10")
        live.live = true
        live.allocation = 7
        live.size = 48
        live.generation = 2
        live.frames = [ControlFrame(function: "f()", shortFunction: nil, file: "/src/a.c", line: 3, column: nil,
                                    module: "/bin/app", address: "0x401000", inlined: false)]
        live.userFrame = 0
        let text = String(decoding: try encoder.encode(live), as: UTF8.self)
        XCTAssertEqual(text, #"{"address":"0x10","allocation":7,"frames":[{"address":"0x401000","column":null,"#
            + #""file":"/src/a.c","function":"f()","inlined":false,"line":3,"module":"/bin/app","shortFunction":null}],"#
            + #""generation":2,"live":true,"ok":true,"op":"object","size":48,"userFrame":0}"#)
        let back = try ControlObjectAnswer(json: JSONReader.parse(text))
        XCTAssertEqual(back.frames?.first?.file, "/src/a.c")
        XCTAssertEqual(back.frames?.first?.inlined, false)
        XCTAssertEqual(back.allocation, 7)
        XCTAssertEqual(back.address, "0x10")
    }

    /// `retention`: the request text, and the answer written with the type that reads it back
    /// (steps with and without fields, a cycle, nil members left out); a bad step is refused.
    func testRetentionRoundTrip() throws {
        XCTAssertEqual(ControlRequestText.retention(address: 0xabc), #"{"op":"retention","address":"0xabc"}"#)
        let request = try parse(#"{"op":"retention","address":"0xabc","tid":42}"#)
        XCTAssertEqual(request.op, .retention)
        XCTAssertEqual(request.address("address"), 0xabc)

        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let dead = ControlRetentionAnswer(address: "0x1")
        XCTAssertEqual(String(decoding: try encoder.encode(dead), as: UTF8.self),
                       #"{"address":"0x1","live":false,"ok":true,"op":"retention","reachable":false}"#)

        let path = [ControlRetentionStep(kind: "root", name: "static M.EventBus.shared", detail: "app"),
                    ControlRetentionStep(kind: "block", name: "M.EventBus", field: "subscribers"),
                    ControlRetentionStep(kind: "block", name: "block from EventBus.subscribe(_:)", field: "+0x28"),
                    ControlRetentionStep(kind: "block", name: "M.ProfileViewModel", detail: "init(), a.swift:3")]
        let cycle = [ControlRetentionStep(kind: "block", name: "M.Parent", field: "child"),
                     ControlRetentionStep(kind: "block", name: "M.Child", field: "parent")]
        let live = ControlRetentionAnswer(address: "0x10", live: true, reachable: true, path: path, cycle: cycle)
        let text = String(decoding: try encoder.encode(live), as: UTF8.self)
        XCTAssertTrue(text.hasPrefix(#"{"address":"0x10","cycle":[{"field":"child","kind":"block","name":"M.Parent"}"#), text)
        let back = try ControlRetentionAnswer(json: JSONReader.parse(text))
        XCTAssertEqual(back, live)
        XCTAssertEqual(ControlRetentionAnswer.text(back.path!),
                       "static M.EventBus.shared → M.EventBus.subscribers → block from EventBus.subscribe(_:)+0x28 → M.ProfileViewModel")

        var only = live
        only.askingThreadOnly = true
        only.cycle = nil
        XCTAssertEqual(try ControlRetentionAnswer(json: JSONReader.parse(String(decoding: try encoder.encode(only), as: UTF8.self))), only)

        XCTAssertThrowsError(try ControlRetentionAnswer(json: JSONReader.parse(#"{"ok":true,"reachable":true,"path":[{"kind":"root"}]}"#)))
        XCTAssertThrowsError(try ControlRetentionAnswer(json: JSONReader.parse(#"{"ok":true}"#)))
    }
}
