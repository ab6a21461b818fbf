// Stacks: the recorded frames of an allocation in -O2 code without frame
// pointers resolve to the right functions, and the unwinder's own checker.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class StackTests: XCTestCase {
    /// stacks.c: main → outer → middle → leaf_alloc → malloc(4242), three times.
    func testStackOfKnownCallPath() throws {
        let exe = try Fixture.build("stacks.c", flags: ["-fomit-frame-pointer"])
        let rec = try HeapGenCLI.recording(exe)
        XCTAssertStatus(rec.result, 0)
        var stacks: [UInt32: [UInt64]] = [:]
        var modules: [ModuleRecord] = []
        var found: [[UInt64]] = []
        for r in try HeapGenCLI.records(rec.trace) {
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
            let names = try LLVMSymbolizer.functionNames(frames: frames, modules: modules)
            XCTAssertEqual(Array(names.prefix(4)), ["leaf_alloc", "middle", "outer", "main"],
                           "frames: \(frames.map { String($0, radix: 16) }) → \(names)")
            // Below main: libc's start-up, never the shim.
            for (pc, name) in zip(frames, names) {
                let path = LLVMSymbolizer.module(containing: pc, in: modules)?.path ?? "?"
                XCTAssertFalse(path.contains("libHeapGenShim"), "shim frame \(name) in a recorded stack")
            }
        }
    }

    /// coroutines.c: allocations inside makecontext coroutines, on a malloc'd and an mmap'd
    /// stack. Each stack runs leaf first through descend() to the coroutine's function and
    /// ends with glibc's __start_context, whole: the return address makecontext planted there
    /// follows no call, and the walk was cut at it (every coroutine stack counted as cut
    /// short and truncated).
    func testCoroutineStacksEndAtTheirContextsStart() throws {
        let exe = try Fixture.build("coroutines.c", flags: ["-fomit-frame-pointer"])
        let rec = try HeapGenCLI.recording(exe, flags: ["--quiet"])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdoutText, "2000\n")
        var stacks: [UInt32: [UInt64]] = [:]
        var modules: [ModuleRecord] = []
        var bySize: [UInt64: Set<UInt32>] = [:]
        var count = 0
        for r in try HeapGenCLI.records(rec.trace) {
            switch r {
            case let .stack(id, frames): stacks[id] = frames
            case let .moduleLoad(m): modules.append(m)
            case let .allocation(.malloc, _, size, stack, _) where (1000..<1004).contains(size):
                bySize[size, default: []].insert(stack)
                count += 1
            default: break
            }
        }
        XCTAssertEqual(count, 2000, "every coroutine allocation")
        for (size, ids) in bySize.sorted(by: { $0.key < $1.key }) {
            XCTAssertEqual(ids.count, 1, "one stack for coroutine \(size - 1000)")
            let frames = try XCTUnwrap(stacks[try XCTUnwrap(ids.first)])
            let names = try LLVMSymbolizer.functionNames(frames: frames, modules: modules)
            let depth = Int(size - 1000) + 1
            // The last one is __start_context's first byte: looked up as a return address (its
            // byte before), it names no function.
            XCTAssertEqual(Array(names.dropLast()), Array(repeating: "descend", count: depth) + ["coroutine"],
                           "frames: \(frames.map { String($0, radix: 16) }) → \(names)")
            XCTAssertEqual(frames.count, depth + 2, "\(names)")
        }
        let s = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(s.uint("truncatedStackCount"), 0, "\(s)")
        XCTAssertEqual(s.uint("end.unwindFallbacks"), 0, "stacks cut short\n\(s)")
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

final class DispatchStackTests: XCTestCase {
    /// Objects made on libdispatch worker threads: every Job allocation has a
    /// stack through `makeJob` that runs to the thread's start (complete,
    /// through Dispatch's frames), and the Swift type is attached.
    func testStacksOnDispatchThreadsAreComplete() throws {
        let exe = try Fixture.build("DispatchFixture.swift")
        let rec = try HeapGenCLI.recording(exe)
        XCTAssertStatus(rec.result, 0)
        var stacks: [UInt32: [UInt64]] = [:]
        var modules: [ModuleRecord] = []
        var jobType: UInt32?
        var jobStacks: [UInt32: Int] = [:]
        var threads = Set<UInt32>()
        for r in try HeapGenCLI.records(rec.trace) {
            switch r {
            case let .stack(id, frames): stacks[id] = frames
            case let .moduleLoad(m): modules.append(m)
            case let .type(id, _, name) where name == "Fixture.Job": jobType = id
            case let .threadStart(tid): threads.insert(tid)
            case let .allocation(_, _, _, stack, type) where type != 0 && type == jobType:
                jobStacks[stack, default: 0] += 1
            default: break
            }
        }
        XCTAssertNotNil(jobType, "the Fixture.Job type name is recorded")
        XCTAssertGreaterThanOrEqual(jobStacks.values.reduce(0, +), 300 + 299, "every Job (plus the sort's) is typed")
        XCTAssertGreaterThan(threads.count, 1, "allocations came from worker threads")
        var workerStacks = 0
        for stack in jobStacks.keys {
            let frames = try XCTUnwrap(stacks[stack])
            let names = try LLVMSymbolizer.functionNames(frames: frames, modules: modules)
            XCTAssertTrue(names.contains { $0.contains("makeJob") }, "makeJob in \(names)")
            let outermost = names.last ?? ""
            // Complete: the walk ends where threads begin, not somewhere inside Dispatch.
            XCTAssertTrue(["start_thread", "clone3", "__clone3", "_start", "__libc_start_main", "__libc_start_call_main"]
                            .contains { outermost.contains($0) },
                          "stack ends at a thread start: \(names)")
            if names.contains(where: { $0.contains("start_thread") || $0.contains("clone") }) { workerStacks += 1 }
        }
        XCTAssertGreaterThan(workerStacks, 0, "some Job stacks run through Dispatch worker threads")
    }
}

final class ShimDependencyTests: XCTestCase {
    /// The preload library brings nothing into the target that allocates on
    /// its own behalf: no Swift runtime, no libstdc++ (whose 72 KiB exception
    /// pool would show up as the program's memory, as it does with heaptrack).
    func testShimNeedsOnlyCLibraries() throws {
        let readelf = try tool("readelf", hint: "install binutils")
        let r = try runProcess(readelf, ["-d", try TestPaths.shim()], timeout: 60)
        XCTAssertStatus(r, 0)
        let needed = r.stdoutText.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        XCTAssertFalse(needed.isEmpty)
        for line in needed {
            XCTAssertFalse(line.contains("swift") || line.contains("stdc++") || line.contains("libm.so"),
                           "unexpected dependency: \(line)")
        }
    }
}
