// The heap profile at trace points and its pprof and collapsed encodings, on a synthetic trace.

import HeapGenAnalysis
import HeapGenExport
import HeapGenSymbolication
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class ProfileExportTests: XCTestCase {
    func testProfileGenerationsAndPoints() throws {
        let t = try SyntheticTrace()
        t.alloc(0xa0, 10)                 // setup, closed by "start"
        t.mark("start")
        t.alloc(0xb0, 20)                 // cycle #1
        t.alloc(0xb8, 1)
        t.free(0xb8)
        t.mark("cycle")
        t.alloc(0xc0, 30, stack: 2, type: 1)   // cycle #2
        t.mark("cycle")
        t.mark("heapgen.settle")          // not a generation boundary
        t.alloc(0xd0, 40)                 // tail: "end"
        let path = try t.finish()

        let atEnd = try HeapProfile.load(trace: path)
        XCTAssertEqual(atEnd.generationNames, ["start", "cycle #1", "cycle #2", "end"])
        XCTAssertEqual(atEnd.point, .end)
        let v = atEnd.samples.map { "\(atEnd.generationNames[$0.generation]) \($0.values.allocObjects) \($0.values.allocSpace) \($0.values.inuseObjects) \($0.values.inuseSpace)" }
        XCTAssertEqual(Set(v), ["start 1 10 1 10", "cycle #1 2 21 1 20", "cycle #2 1 30 1 30", "end 1 40 1 40"])

        // At the final snapshot (the settle mark): the tail allocation is not counted.
        let settled = try HeapProfile.load(trace: path, at: .finalSnapshot)
        XCTAssertEqual(settled.point, ResolvedPoint(kind: .mark, index: 3, label: "heapgen.settle"))
        XCTAssertEqual(settled.samples.map(\.values.inuseSpace).reduce(0, +), 60)
        XCTAssertEqual(settled.samples.map(\.values.allocObjects).reduce(0, +), 4)

        let atOne = try HeapProfile.load(trace: path, at: .mark(1))
        XCTAssertEqual(atOne.samples.map(\.values.inuseSpace).reduce(0, +), 30)
        XCTAssertEqual(atOne.samples.map(\.values.allocSpace).reduce(0, +), 31)

        // The pprof message: 4 sample types, labels, the string table.
        let symbolication = StackSymbolication(symbolizer: Symbolizer(options: .init(symbolizerPath: "/nonexistent", allowFallbacks: false)))
        let encoded = try PprofExport.encode(atEnd, symbolication: symbolication).bytes
        let fields = try decode(encoded)
        let strings = fields.filter { $0.number == 6 }.map { String(decoding: $0.bytes ?? [], as: UTF8.self) }
        XCTAssertEqual(strings.first, "")
        let types = try fields.filter { $0.number == 1 }.map { try decode($0.bytes ?? []).map { strings[Int($0.varint ?? 0)] } }
        XCTAssertEqual(types, [["alloc_objects", "count"], ["alloc_space", "bytes"], ["inuse_objects", "count"], ["inuse_space", "bytes"]])
        XCTAssertEqual(fields.filter { $0.number == 2 }.count, 4, "one sample per site and generation")
        let defaultType = try XCTUnwrap(fields.first { $0.number == 14 }?.varint)
        XCTAssertEqual(strings[Int(defaultType)], "inuse_space")
        XCTAssertTrue(strings.contains("App.Model") && strings.contains("generation") && strings.contains("type"))

        // Collapsed: outermost first, frames without modules named by address.
        let collapsed = try CollapsedExport.render(atEnd, sample: .inuseSpace, symbolication: symbolication).text
        XCTAssertEqual(collapsed, "0x2000;0x1000 70\n0x2000;0x1100 30\n")
    }
}
