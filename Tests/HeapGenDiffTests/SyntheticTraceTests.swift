// HeapDiffer and HeapProfile on small traces written with TraceWriter: realloc,
// reallocUndo, Swift types, generations, points.

import Foundation
import HeapGenTestSupport
import HeapGenAnalysis
import HeapGenDiff
import HeapGenSymbolication
import HeapGenTrace
import XCTest

final class SyntheticTraceTests: XCTestCase {
    /// No symbolizer needed: no frame is in a module.
    let differ = HeapDiffer(symbolizer: Symbolizer(options: .init(symbolizerPath: "/nonexistent", allowFallbacks: false)))

    func testAddedRemovedWithReallocAndUndo() throws {
        let t = try SyntheticTrace()
        t.alloc(0xa0, 10)                 // live at A, freed by B: removed
        t.alloc(0xb0, 20)                 // live at A and B
        t.alloc(0xc0, 30, stack: 2, type: 1)
        t.mark("A")
        t.free(0xa0)
        t.alloc(0xd0, 40)                 // added
        t.alloc(0xe0, 50)                 // allocated and freed between: neither
        t.free(0xe0)
        t.free(0xb0, .realloc)            // a realloc that fails: 0xb0 comes back
        t.writer.appendReallocUndo(address: 0xb0)
        t.free(0xc0, .realloc)            // a realloc that succeeds: 0xc0 gone, 0xf0 new (realloc's site)
        t.alloc(0xf0, 60, stack: 2, type: 1, .realloc)
        t.mark("B")
        t.alloc(0x100, 70)                // after B: not counted
        let path = try t.finish()

        let diff = try differ.diff(trace: path, from: .label("A"), to: .label("B"))
        XCTAssertEqual(diff.mode, .marks)
        XCTAssertEqual(diff.base.point, ResolvedPoint(kind: .mark, index: 0, label: "A"))
        XCTAssertEqual(diff.new.point, ResolvedPoint(kind: .mark, index: 1, label: "B"))
        XCTAssertEqual(diff.entries.count, 2)
        let plain = try XCTUnwrap(diff.entries.first { $0.typeName == nil })
        XCTAssertEqual(plain.change.objectsBefore, 2)
        XCTAssertEqual(plain.change.objectsAfter, 2)
        XCTAssertEqual(plain.change.bytesBefore, 30)
        XCTAssertEqual(plain.change.bytesAfter, 60)
        XCTAssertEqual(plain.change.added, HeapDiff.Amount(objects: 1, bytes: 40))
        XCTAssertEqual(plain.change.removed, HeapDiff.Amount(objects: 1, bytes: 10))
        let model = try XCTUnwrap(diff.entries.first { $0.typeName == "App.Model" })
        XCTAssertEqual(model.change.added, HeapDiff.Amount(objects: 1, bytes: 60))
        XCTAssertEqual(model.change.removed, HeapDiff.Amount(objects: 1, bytes: 30))
        XCTAssertEqual(model.change.bytesDelta, 30)
        // Equal changes (+30 B each, same before and after): a stable order, untyped first.
        XCTAssertEqual(diff.entries.map(\.typeName), [nil, "App.Model"])
        XCTAssertEqual(diff.types.map(\.typeName), ["App.Model"])
        XCTAssertEqual(diff.totals.change.bytesDelta, 60)
        XCTAssertEqual(diff.totals.change.added, HeapDiff.Amount(objects: 2, bytes: 100))

        // start → end: everything live at the end was added.
        let whole = try differ.diff(trace: path, from: .start, to: .end)
        XCTAssertEqual(whole.totals.change.objectsAfter, 4)
        XCTAssertEqual(whole.totals.change.added?.objects, 4)
        XCTAssertEqual(whole.totals.change.removed?.objects, 0)

        // JSON round trip; typeName null is written.
        let json = try DiffJSON.render(diff)
        XCTAssertTrue(json.contains("\"typeName\" : null"), json)
        XCTAssertTrue(json.contains("\"schema\" : \"heapgen-diff/1\""), json)
        XCTAssertEqual(try DiffJSON.decode(Data(json.utf8)), diff)
    }

    func testPointErrors() throws {
        let t = try SyntheticTrace()
        t.alloc(0xa0, 10)
        t.mark("x")
        t.mark("x")
        let path = try t.finish()
        XCTAssertThrowsError(try differ.diff(trace: path, from: .label("x"), to: .end)) { error in
            XCTAssertTrue("\(error)".contains("2 marks are labelled \"x\""), "\(error)")
        }
        XCTAssertThrowsError(try differ.diff(trace: path, from: .mark(5), to: .end))
        XCTAssertThrowsError(try differ.diff(trace: path, from: .end, to: .mark(0)))
        XCTAssertNoThrow(try differ.diff(trace: path, from: .mark(1), to: .mark(1)))
    }

    /// Two traces with the same (unsymbolized) stacks: matched by frame, types kept apart.
    func testTwoTracesMatchAndAddedRemovedSites() throws {
        let a = try SyntheticTrace()
        a.alloc(0xa0, 10)
        a.alloc(0xb0, 30, stack: 2, type: 1)
        a.mark("end of run")
        let b = try SyntheticTrace()
        b.alloc(0x1a0, 10)
        b.alloc(0x1b0, 10)
        b.alloc(0x1c0, 5, stack: 2)       // same stack, no type: another site
        b.mark("end of run")
        let diff = try differ.diff(base: try a.finish(), new: try b.finish(), at: .finalSnapshot)
        XCTAssertEqual(diff.mode, .traces)
        XCTAssertEqual(diff.entries.map(\.status), [.removed, .matched, .added])
        XCTAssertEqual(diff.entries.map(\.change.bytesDelta), [-30, 10, 5])
        XCTAssertEqual(diff.totals.matchedEntries, 1)
        XCTAssertNil(diff.totals.change.added)
        XCTAssertEqual(diff.new.point.label, "end of run")
    }
}
