// Naming and shortening of retention paths and cycles.

import HeapGenReport
import HeapGenTrace
import XCTest

final class RetentionTextTests: XCTestCase {
    typealias Step = Report.RetentionStep

    func testPathNamesRootFieldsAndOffsets() {
        let steps = [
            Step(kind: .root, name: "static Demo.EventBus.shared", detail: "Demo", offset: 0),
            Step(kind: .block, name: "Demo.EventBus", field: "subscribers", offset: 16, typeName: "Demo.EventBus"),
            Step(kind: .block, name: "block", detail: "accept_client, registry.c:27", offset: 8),
            Step(kind: .block, name: "Demo.ViewModel", typeName: "Demo.ViewModel"),
        ]
        XCTAssertEqual(RetentionText.path(steps),
                       "static Demo.EventBus.shared (Demo) → Demo.EventBus .subscribers → block (accept_client, registry.c:27) +0x8 → Demo.ViewModel")
    }

    func testRootInsideItsSymbolShowsTheOffset() {
        XCTAssertEqual(Step(kind: .root, name: "g_trees", detail: "retention", offset: 0x18).text, "g_trees (retention)+0x18")
    }

    func testLongPathKeepsTwoAtEachEnd() {
        let steps = (0 ..< 8).map { Step(kind: .block, name: "n\($0)", offset: $0 < 7 ? 8 : nil) }
        XCTAssertEqual(RetentionText.path(steps), "n0 +0x8 → n1 +0x8 → … 4 more … → n6 +0x8 → n7")
        let five = Array(steps.prefix(5))
        XCTAssertFalse(RetentionText.path(five).contains("…"), "five steps are shown whole")
    }

    func testCycleClosesOnItsFirstType() {
        let steps = [
            Step(kind: .block, name: "Fixture.A", field: "b", offset: 16, typeName: "Fixture.A"),
            Step(kind: .block, name: "Fixture.B", field: "a", offset: 16, typeName: "Fixture.B"),
        ]
        XCTAssertEqual(RetentionText.cycle(steps), "A.b → B.a → A")
    }

    func testCBlocksInACycleAreNamedByTheirAllocatingFunction() {
        let frame = Report.Frame(function: "make_node", shortFunction: "make_node", file: "ring.c", line: 9, column: 3,
                                 module: "/bin/ring", address: 0x1000, inlined: false)
        let steps = [Step(kind: .block, name: "block", offset: 8, frame: frame), Step(kind: .block, name: "block", offset: 0, frame: frame)]
        XCTAssertEqual(RetentionText.cycle(steps), "block (make_node)+0x8 → block (make_node)+0x0 → block (make_node)")
    }

    func testFieldAtOrContainingTheOffset() {
        let fields = [ReferenceGraphRecord.Field(offset: 16, name: "name"), .init(offset: 32, name: "handlers"),
                      .init(offset: 40, name: "inline")]
        XCTAssertEqual(RetentionNames.field(at: 32, in: fields), "handlers")
        XCTAssertEqual(RetentionNames.field(at: 48, in: fields), "inline", "a property containing the offset")
        XCTAssertNil(RetentionNames.field(at: 8, in: fields), "the object header is no property")
        XCTAssertNil(RetentionNames.field(at: 8, in: []))
        XCTAssertEqual(RetentionNames.register(1), "rbx")
        XCTAssertEqual(RetentionNames.global("FoundationEssentials.(_defaultCenter in _D7F0FBD11A4908D9351EC62B4910EBB5) : FoundationEssentials.NotificationCenter"),
                       "FoundationEssentials._defaultCenter")
        XCTAssertEqual(RetentionNames.global("static Demo.EventBus.shared : Demo.EventBus"), "static Demo.EventBus.shared")
        XCTAssertEqual(RetentionNames.global("g_clients"), "g_clients")
        XCTAssertEqual(RetentionNames.register(12), "r12")
        XCTAssertEqual(RetentionNames.register(16), "xmm0")
        XCTAssertEqual(RetentionNames.register(31), "xmm7")
        XCTAssertEqual(RetentionNames.register(60), "ymm6")
        XCTAssertEqual(RetentionNames.register(80), "register 80")
    }
}
