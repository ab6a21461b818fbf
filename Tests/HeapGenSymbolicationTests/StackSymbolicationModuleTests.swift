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

final class ShimFrameTests: XCTestCase {
    let fx = Fixtures.shared

    /// A signal handler's stack that interrupted heapgen's shim: of each run of shim frames
    /// only the outermost entry stays (the function the program called); other stacks keep
    /// every frame.
    func testOnlyTheOutermostShimFrameOfARunStays() {
        let shim = ModuleFixtures.library("/opt/heapgen/libHeapGenShim.so", at: 0x7200_0000)
        let timeline = ModuleTimeline(events: [ModuleFixtures.load(ModuleFixtures.exe, at: 1), ModuleFixtures.load(shim, at: 2)])
        var table = AddressTable(timeline: timeline)
        let exe = ModuleFixtures.exe.loadBias, s = shim.loadBias
        // handler, its caller, the signal return (here in the program), three shim frames, main
        let interrupted = table.add([exe + 0x10, exe + 0x20, exe + 0x30, s + 0x100, s + 0x200, s + 0x300, exe + 0x40], at: 3)
        let plain = table.add([exe + 0x10, exe + 0x40], at: 3)
        let outermost = table.add([exe + 0x10, s + 0x100, s + 0x300], at: 3)
        let (addresses, _) = table.symbolicate(with: StackSymbolication(symbolizer:
            Symbolizer(options: .init(symbolizerPath: "/nonexistent", allowFallbacks: false))))
        func offsets(_ entries: [UInt32]) -> [UInt64] { entries.map { addresses[Int($0)].address } }
        XCTAssertEqual(offsets(interrupted), [exe + 0x10, exe + 0x20, exe + 0x30, s + 0x300, exe + 0x40])
        XCTAssertEqual(offsets(plain), [exe + 0x10, exe + 0x40])
        XCTAssertEqual(offsets(outermost), [exe + 0x10, s + 0x300])
    }

    /// The shim frame that stays is named after the function the program called, without the
    /// shim's helpers inlined into it: an address of the built shim's `free` whose look-up gives
    /// inlined frames comes out as `free` alone.
    func testTheShimFrameThatStaysHasNoInlinedFrames() throws {
        let path = try TestPaths.shim()
        let free = try fx.symbol(path, "free")
        let m = module(path, loadBias: 0x7300_0000)
        let probe = Symbolizer()
        let answers = probe.symbolize(scan(m, free))
        guard let i = answers.firstIndex(where: { $0.frames.count > 1 && $0.frames.last?.function == "free" }) else {
            return XCTFail("no address of the shim's free has inlined frames: \(answers.map { $0.frames.map { $0.function ?? "?" } })")
        }
        let address = m.loadBias + free.address + UInt64(i)
        let record = ModuleRecord(loadBias: m.loadBias, path: path, buildID: m.buildID,
                                  segments: [.init(vaddr: 0, memsz: 0x100_0000, flags: 5)])
        var table = AddressTable(timeline: ModuleTimeline(events: [ModuleFixtures.load(record, at: 1)]))
        // +1: a return address is looked up a byte before.
        let entries = table.add([address + 1], at: 2)
        let (addresses, _) = table.symbolicate(with: StackSymbolication(symbolizer: Symbolizer()))
        XCTAssertEqual(addresses[Int(entries[0])].frames.map(\.function), ["free"])
    }
}
