// Unit tests of the module timeline (loads, unloads, reloads, position lookups) and of the
// batch symbolicator's address → module step, with no symbolizer and no files.

import HeapGenAnalysis
import HeapGenSymbolication
import HeapGenTrace
import XCTest

final class ModuleTimelineTests: XCTestCase {
    static let exe = ModuleRecord(loadBias: 0x5555_0000_0000, path: "/usr/bin/app", buildID: [1, 2, 3],
                                  segments: [.init(vaddr: 0, memsz: 0x10000, flags: 5)])

    static func library(_ path: String, at bias: UInt64) -> ModuleRecord {
        ModuleRecord(loadBias: bias, path: path, buildID: [9, 9],
                     segments: [.init(vaddr: 0, memsz: 0x1000, flags: 5), .init(vaddr: 0x3000, memsz: 0x1000, flags: 6)])
    }

    static func load(_ m: ModuleRecord, at position: UInt64) -> ModuleEvent {
        ModuleEvent(kind: .load, loadBias: m.loadBias, module: m, recordIndex: position, generation: 0)
    }

    static func unload(_ bias: UInt64, at position: UInt64) -> ModuleEvent {
        ModuleEvent(kind: .unload, loadBias: bias, module: nil, recordIndex: position, generation: 0)
    }

    static let libA = library("/lib/libA.so", at: 0x7000_0000)
    static let libB = library("/lib/libB.so", at: 0x7000_0000)   // libA's place, after libA left
    static let libA2 = library("/lib/libA.so", at: 0x7100_0000)  // libA again, elsewhere

    /// exe at 1; libA at 5, gone at 10; libB at libA's place at 12; libA again elsewhere at 15.
    static let timeline = ModuleTimeline(events: [
        load(exe, at: 1), load(libA, at: 5), unload(libA.loadBias, at: 10), load(libB, at: 12), load(libA2, at: 15),
    ])

    func testLoadIsSeenOnlyAfterItsRecord() {
        let t = Self.timeline
        XCTAssertNil(t.module(containing: Self.exe.loadBias + 0x10, at: 0))
        XCTAssertNil(t.module(containing: Self.exe.loadBias + 0x10, at: 1), "the load record itself is not before position 1")
        XCTAssertEqual(t.module(containing: Self.exe.loadBias + 0x10, at: 2), Self.exe)
        XCTAssertEqual(t.modules(at: 6), [Self.exe, Self.libA])
        XCTAssertEqual(t.modules(at: UInt64.max), [Self.exe, Self.libB, Self.libA2])
    }

    func testSegmentsBoundTheModule() {
        let t = Self.timeline
        let base = Self.libA.loadBias
        XCTAssertEqual(t.module(containing: base, at: 6), Self.libA)
        XCTAssertEqual(t.module(containing: base + 0xfff, at: 6), Self.libA)
        XCTAssertNil(t.module(containing: base + 0x1000, at: 6), "between the segments")
        XCTAssertEqual(t.module(containing: base + 0x3800, at: 6), Self.libA)
        XCTAssertNil(t.module(containing: base + 0x4000, at: 6))
    }

    func testUnloadAndReloadAtAnotherAddress() {
        let t = Self.timeline
        let place = Self.libA.loadBias + 0x100
        XCTAssertEqual(t.module(containing: place, at: 10), Self.libA, "the unload record itself is not before 10")
        XCTAssertNil(t.module(containing: place, at: 11), "unloaded")
        XCTAssertEqual(t.module(containing: place, at: 13)?.path, "/lib/libB.so", "another library in the same place")
        XCTAssertNil(t.module(containing: Self.libA2.loadBias + 0x100, at: 13))
        XCTAssertEqual(t.module(containing: Self.libA2.loadBias + 0x100, at: 16), Self.libA2)
        XCTAssertEqual(t.module(containing: place, at: 16)?.path, "/lib/libB.so")
    }

    func testUnloadRemovesTheLatestLoadWithThatBias() {
        let first = Self.library("/lib/first.so", at: 0x7000_0000)
        let second = Self.library("/lib/second.so", at: 0x7000_0000)
        let t = ModuleTimeline(events: [Self.load(first, at: 1), Self.load(second, at: 2), Self.unload(0x7000_0000, at: 3)])
        XCTAssertEqual(t.module(containing: 0x7000_0010, at: 3)?.path, "/lib/second.so", "the latest load wins")
        XCTAssertEqual(t.module(containing: 0x7000_0010, at: 4)?.path, "/lib/first.so")
    }

    func testCursorMatchesLookupsAndIgnoresEarlierPositions() {
        let t = Self.timeline
        var cursor = t.cursor()
        let place = Self.libA.loadBias + 0x20
        for position: UInt64 in [0, 2, 6, 11, 13, 16, 100] {
            cursor.advance(to: position)
            XCTAssertEqual(cursor.module(containing: place), t.module(containing: place, at: position), "at \(position)")
            XCTAssertEqual(cursor.loaded, t.modules(at: position), "at \(position)")
        }
        cursor.advance(to: 3)
        XCTAssertEqual(cursor.loaded, t.modules(at: 100), "positions only grow")
    }

    func testLoadedNow() {
        let t = ModuleTimeline(loaded: [Self.exe, Self.libA])
        XCTAssertEqual(t.module(containing: Self.libA.loadBias + 1, at: UInt64.max), Self.libA)
        XCTAssertEqual(t.modules(at: 1), [Self.exe, Self.libA])
    }

    /// The batch path without a symbolizer: each address from the module of its stack's
    /// position, addresses outside every module kept without one, notes as reports show them.
    func testBatchNamesModulesByPosition() {
        let none = Symbolizer(options: .init(symbolizerPath: "/nonexistent", allowFallbacks: false))
        let symbolication = StackSymbolication(symbolizer: none)
        let place = Self.libA.loadBias + 0x100
        let (stacks, notes) = symbolication.symbolicate([
            (id: 2, addresses: [place, Self.exe.loadBias + 0x40], position: 13),
            (id: 1, addresses: [place, 0x10], position: 6),
            (id: 1, addresses: [], position: 0),   // a repeated id: its first entry counts
            (id: 3, addresses: [], position: 0),
        ], timeline: Self.timeline)
        XCTAssertEqual(stacks[1]?.frames.map(\.module), ["/lib/libA.so", nil])
        XCTAssertEqual(stacks[1]?.addresses.map(\.moduleOffset), [0x100, nil])
        XCTAssertEqual(stacks[2]?.frames.map(\.module), ["/lib/libB.so", "/usr/bin/app"])
        XCTAssertEqual(stacks[2]?.name(ofFrame: 0), "libB.so+0x100")
        XCTAssertEqual(stacks[3]?.frames, [])
        XCTAssertEqual(stacks[1]?.frames.last, SymbolicatedFrame(module: nil, address: 0x10))
        XCTAssertEqual(notes, [
            "No symbolizer was found (llvm-symbolizer or addr2line; HEAPGEN_SYMBOLIZER names one): frames show addresses only.",
            // The modules are not on this machine.
            "Changed or missing since the recording, so their frames may lack names: /lib/libA.so, /lib/libB.so, /usr/bin/app.",
            "1 frame address was in no recorded module (generated code?): shown without a module.",
        ])
    }
}
