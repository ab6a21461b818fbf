// Module records and a module timeline with known answers: an executable, a library that
// leaves, another loaded at its place, and the first again elsewhere.

import HeapGenTrace

public enum ModuleFixtures {
    public static let exe = ModuleRecord(loadBias: 0x5555_0000_0000, path: "/usr/bin/app", buildID: [1, 2, 3],
                                  segments: [.init(vaddr: 0, memsz: 0x10000, flags: 5)])

    public static func library(_ path: String, at bias: UInt64) -> ModuleRecord {
        ModuleRecord(loadBias: bias, path: path, buildID: [9, 9],
                     segments: [.init(vaddr: 0, memsz: 0x1000, flags: 5), .init(vaddr: 0x3000, memsz: 0x1000, flags: 6)])
    }

    public static func load(_ m: ModuleRecord, at position: UInt64) -> ModuleEvent {
        ModuleEvent(kind: .load, loadBias: m.loadBias, module: m, recordIndex: position, generation: 0)
    }

    public static func unload(_ bias: UInt64, at position: UInt64) -> ModuleEvent {
        ModuleEvent(kind: .unload, loadBias: bias, module: nil, recordIndex: position, generation: 0)
    }

    public static let libA = library("/lib/libA.so", at: 0x7000_0000)
    public static let libB = library("/lib/libB.so", at: 0x7000_0000)   // libA's place, after libA left
    public static let libA2 = library("/lib/libA.so", at: 0x7100_0000)  // libA again, elsewhere

    /// exe at 1; libA at 5, gone at 10; libB at libA's place at 12; libA again elsewhere at 15.
    public static let timeline = ModuleTimeline(events: [
        load(exe, at: 1), load(libA, at: 5), unload(libA.loadBias, at: 10), load(libB, at: 12), load(libA2, at: 15),
    ])
}
