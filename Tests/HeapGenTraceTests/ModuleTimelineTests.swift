// Unit tests of the module timeline: loads, unloads, reloads, position lookups.

import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class ModuleTimelineTests: XCTestCase {
    func testLoadIsSeenOnlyAfterItsRecord() {
        let t = ModuleFixtures.timeline
        XCTAssertNil(t.module(containing: ModuleFixtures.exe.loadBias + 0x10, at: 0))
        XCTAssertNil(t.module(containing: ModuleFixtures.exe.loadBias + 0x10, at: 1), "the load record itself is not before position 1")
        XCTAssertEqual(t.module(containing: ModuleFixtures.exe.loadBias + 0x10, at: 2), ModuleFixtures.exe)
        XCTAssertEqual(t.modules(at: 6), [ModuleFixtures.exe, ModuleFixtures.libA])
        XCTAssertEqual(t.modules(at: UInt64.max), [ModuleFixtures.exe, ModuleFixtures.libB, ModuleFixtures.libA2])
    }

    func testSegmentsBoundTheModule() {
        let t = ModuleFixtures.timeline
        let base = ModuleFixtures.libA.loadBias
        XCTAssertEqual(t.module(containing: base, at: 6), ModuleFixtures.libA)
        XCTAssertEqual(t.module(containing: base + 0xfff, at: 6), ModuleFixtures.libA)
        XCTAssertNil(t.module(containing: base + 0x1000, at: 6), "between the segments")
        XCTAssertEqual(t.module(containing: base + 0x3800, at: 6), ModuleFixtures.libA)
        XCTAssertNil(t.module(containing: base + 0x4000, at: 6))
    }

    func testUnloadAndReloadAtAnotherAddress() {
        let t = ModuleFixtures.timeline
        let place = ModuleFixtures.libA.loadBias + 0x100
        XCTAssertEqual(t.module(containing: place, at: 10), ModuleFixtures.libA, "the unload record itself is not before 10")
        XCTAssertNil(t.module(containing: place, at: 11), "unloaded")
        XCTAssertEqual(t.module(containing: place, at: 13)?.path, "/lib/libB.so", "another library in the same place")
        XCTAssertNil(t.module(containing: ModuleFixtures.libA2.loadBias + 0x100, at: 13))
        XCTAssertEqual(t.module(containing: ModuleFixtures.libA2.loadBias + 0x100, at: 16), ModuleFixtures.libA2)
        XCTAssertEqual(t.module(containing: place, at: 16)?.path, "/lib/libB.so")
    }

    func testUnloadRemovesTheLatestLoadWithThatBias() {
        let first = ModuleFixtures.library("/lib/first.so", at: 0x7000_0000)
        let second = ModuleFixtures.library("/lib/second.so", at: 0x7000_0000)
        let t = ModuleTimeline(events: [ModuleFixtures.load(first, at: 1), ModuleFixtures.load(second, at: 2), ModuleFixtures.unload(0x7000_0000, at: 3)])
        XCTAssertEqual(t.module(containing: 0x7000_0010, at: 3)?.path, "/lib/second.so", "the latest load wins")
        XCTAssertEqual(t.module(containing: 0x7000_0010, at: 4)?.path, "/lib/first.so")
    }

    func testCursorMatchesLookupsAndIgnoresEarlierPositions() {
        let t = ModuleFixtures.timeline
        var cursor = t.cursor()
        let place = ModuleFixtures.libA.loadBias + 0x20
        for position: UInt64 in [0, 2, 6, 11, 13, 16, 100] {
            cursor.advance(to: position)
            XCTAssertEqual(cursor.module(containing: place), t.module(containing: place, at: position), "at \(position)")
            XCTAssertEqual(cursor.loaded, t.modules(at: position), "at \(position)")
        }
        cursor.advance(to: 3)
        XCTAssertEqual(cursor.loaded, t.modules(at: 100), "positions only grow")
    }

    func testLoadedNow() {
        let t = ModuleTimeline(loaded: [ModuleFixtures.exe, ModuleFixtures.libA])
        XCTAssertEqual(t.module(containing: ModuleFixtures.libA.loadBias + 1, at: UInt64.max), ModuleFixtures.libA)
        XCTAssertEqual(t.modules(at: 1), [ModuleFixtures.exe, ModuleFixtures.libA])
    }
}
