// Stacks: the recorded frames of an allocation in -O2 code without frame
// pointers resolve to the right functions, and the unwinder's own checker.

import Foundation
import HeapGenTrace
import XCTest

final class StackTests: XCTestCase {
    /// stacks.c: main → outer → middle → leaf_alloc → malloc(4242), three times.
    func testStackOfKnownCallPath() throws {
        let exe = try Fixture.build("stacks.c", flags: ["-fomit-frame-pointer"])
        let rec = try HeapGen.record(exe)
        XCTAssertStatus(rec.result, 0)
        var stacks: [UInt32: [UInt64]] = [:]
        var modules: [ModuleRecord] = []
        var found: [[UInt64]] = []
        for r in try HeapGen.records(rec.trace) {
            switch r {
            case let .stack(id, frames): stacks[id] = frames
            case let .moduleLoad(m): modules.append(m)
            case let .allocation(.malloc, _, 4242, stack, _):
                found.append(stacks[stack] ?? [])
            default: break
            }
        }
        XCTAssertEqual(found.count, 3, "three malloc(4242)")
        XCTAssertTrue(modules.contains { $0.path == exe }, "moduleLoad for the executable: \(modules.map(\.path))")
        for frames in found {
            XCTAssertGreaterThanOrEqual(frames.count, 4, "at least leaf_alloc, middle, outer, main")
            let names = try Symbolizer.functionNames(frames: frames, modules: modules)
            XCTAssertEqual(Array(names.prefix(4)), ["leaf_alloc", "middle", "outer", "main"],
                           "frames: \(frames.map { String($0, radix: 16) }) → \(names)")
            // Below main: libc's start-up, never the shim.
            for (pc, name) in zip(frames, names) {
                let path = Symbolizer.module(containing: pc, in: modules)?.path ?? "?"
                XCTAssertFalse(path.contains("libHeapGenShim"), "shim frame \(name) in a recorded stack")
            }
        }
    }

    /// scripts/check-unwind: the fast unwinder against libunwind at many call sites.
    func testUnwinderChecker() throws {
        let script = TestPaths.repoRoot + "/scripts/check-unwind"
        guard FileManager.default.isExecutableFile(atPath: script) else {
            return XCTFail("\(script) is missing or not executable")
        }
        let r = try runProcess("/bin/bash", [script], directory: TestPaths.repoRoot, timeout: 300)
        XCTAssertStatus(r, 0, "scripts/check-unwind")
    }
}
