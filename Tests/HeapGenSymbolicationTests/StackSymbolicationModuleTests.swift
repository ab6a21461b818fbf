// The batch symbolicator names each frame from the module that held it at its stack's position.

import HeapGenAnalysis
import HeapGenSymbolication
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class StackSymbolicationModuleTests: XCTestCase {
    /// The batch path without a symbolizer: each address from the module of its stack's
    /// position, addresses outside every module kept without one, notes as reports show them.
    func testBatchNamesModulesByPosition() {
        let none = Symbolizer(options: .init(symbolizerPath: "/nonexistent", allowFallbacks: false))
        let symbolication = StackSymbolication(symbolizer: none)
        let place = ModuleFixtures.libA.loadBias + 0x100
        let (stacks, notes) = symbolication.symbolicate([
            (id: 2, addresses: [place, ModuleFixtures.exe.loadBias + 0x40], position: 13),
            (id: 1, addresses: [place, 0x10], position: 6),
            (id: 1, addresses: [], position: 0),   // a repeated id: its first entry counts
            (id: 3, addresses: [], position: 0),
        ], timeline: ModuleFixtures.timeline)
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

final class AddressTableTests: XCTestCase {
    /// One entry per (module, address): shared by stacks, told apart when another module
    /// holds the address later; a rewound table gives the same stacks the same entries.
    func testEntriesAreDistinctAddressesByModule() {
        let none = Symbolizer(options: .init(symbolizerPath: "/nonexistent", allowFallbacks: false))
        var table = AddressTable(timeline: ModuleFixtures.timeline)
        let a = ModuleFixtures.libA.loadBias + 0x100
        let exe = ModuleFixtures.exe.loadBias + 0x40
        let stacks: [(frames: [UInt64], position: UInt64)] = [
            ([a, exe], 6),        // libA
            ([a, a, exe], 7),     // the same entries again
            ([0x10, 0x10], 8),    // in no module: one entry, two frames
            ([a, exe], 13),       // libB at libA's place now
            ([], 14),
        ]
        let first = stacks.map { table.add($0.frames, at: $0.position) }
        XCTAssertEqual(first, [[0, 1], [0, 0, 1], [2, 2], [3, 1], []])
        XCTAssertEqual(table.count, 4)
        table.rewind()
        XCTAssertEqual(stacks.map { table.add($0.frames, at: $0.position) }, first)
        XCTAssertEqual(table.count, 4)

        let (addresses, notes) = table.symbolicate(with: StackSymbolication(symbolizer: none))
        XCTAssertEqual(addresses.map { $0.module?.path }, ["/lib/libA.so", "/usr/bin/app", nil, "/lib/libB.so"])
        XCTAssertEqual(addresses.map(\.address), [a, exe, 0x10, a])
        XCTAssertEqual(addresses[2].frames, [SymbolicatedFrame(module: nil, address: 0x10)])
        XCTAssertEqual(notes.last, "2 frame addresses were in no recorded module (generated code?): shown without a module.")
    }
}
