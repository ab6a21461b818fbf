// A forked child's trace starts with the live heap it inherited at the fork.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class ForkInheritanceTests: XCTestCase {
    /// daemon.c: the parent keeps 1,000 × 48 B and forks; the child frees 990 of
    /// them, keeps 10, and allocates 3 × 64 B of its own.
    func testChildTraceStartsWithTheParentsLiveBlocks() throws {
        let exe = try Fixture.build("daemon.c")
        let rec = try HeapGenCLI.recording(exe)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(String(decoding: rec.result.stdout, as: UTF8.self), "child ok\n")
        guard let childPath = rec.allTraces.first(where: { $0 != rec.trace }) else {
            return XCTFail("no child trace: \(rec.allTraces)")
        }
        let child = try HeapGenCLI.summary(childPath)
        XCTAssertEqual(child.processOrigin, "fork")
        XCTAssertEqual(child.calls("inherited"), 1000, "\(child)")
        XCTAssertEqual(child.bytes("inherited"), 1000 * 48)
        XCTAssertEqual(child.calls("malloc"), 3)
        XCTAssertEqual(child.allocationCount, 3, "inherited blocks are not the child's allocations")
        XCTAssertEqual(child.frees("free"), 990)
        XCTAssertEqual(child.unknownFrees, 0, "every free names a block the child has")
        XCTAssertEqual(child.liveObjects, 13)
        XCTAssertEqual(child.liveBytes, 10 * 48 + 3 * 64)

        // The inherited records come first (after the child's process, modules,
        // stacks and types) and carry the parent's stack: make_session.
        let records = try HeapGenCLI.records(childPath)
        let firstEvent = records.firstIndex { if case .allocation = $0 { return true }; if case .free = $0 { return true }; return false }
        guard let firstEvent else { return XCTFail("no events") }
        for record in records[firstEvent..<(firstEvent + 1000)] {
            guard case let .allocation(function, _, size, stack, _) = record else {
                return XCTFail("expected 1,000 inherited blocks first, got \(record)")
            }
            XCTAssertEqual(function, .inherited)
            XCTAssertEqual(size, 48)
            XCTAssertGreaterThanOrEqual(stack, 0x8000_0000, "inherited stacks have ids of their own")
        }

        let report = try HeapGenCLI.json(["report", childPath, "--format", "json"])
        let totals = report["totals"] as? [String: Any]
        XCTAssertEqual((totals?["allocations"] as? NSNumber)?.intValue, 3, "inherited blocks are live, not allocated: \(String(describing: totals))")
        XCTAssertEqual((totals?["frees"] as? NSNumber)?.intValue, 990)
        let live = report["liveAtExit"] as? [String: Any]
        XCTAssertEqual((live?["objects"] as? NSNumber)?.intValue, 13)
        let sites = live?["sites"] as? [[String: Any]] ?? []
        let inheritedSite = sites.first { site in
            ((site["frames"] as? [[String: Any]])?.first?["function"] as? String) == "make_session"
        }
        XCTAssertEqual((inheritedSite?["objects"] as? NSNumber)?.intValue, 10,
                       "the kept inherited blocks are symbolicated with the parent's stack: \(sites)")
    }

    /// A daemon's parent leaves right after the fork: the child's getppid() was often 1 by its
    /// hello, so the collector found no parent's heap to give it, and its frees of what it
    /// inherited were 990 invalid frees (probe of memcached -d: 3 runs of 3; nginx 3 of 8).
    /// The parent's pid now travels with the fork.
    func testADaemonWhoseParentLeftAtOnceInheritsItsHeap() throws {
        let exe = try Fixture.build("daemon.c")
        for _ in 0..<5 {
            let rec = try HeapGenCLI.recording(exe, ["detach"])
            XCTAssertStatus(rec.result, 0)
            let parent = try HeapGenCLI.summary(rec.trace)
            guard let childPath = rec.allTraces.first(where: { $0 != rec.trace }) else {
                return XCTFail("no child trace: \(rec.allTraces)")
            }
            let child = try HeapGenCLI.summary(childPath)
            XCTAssertEqual(child.processOrigin, "fork")
            XCTAssertEqual(child.processParent, parent.processPid, "\(child)")
            XCTAssertEqual(child.calls("inherited"), 1000, "\(child)")
            XCTAssertEqual(child.unknownFrees, 0, "\(child)")
            XCTAssertEqual(child.liveObjects, 13)
            XCTAssertStatus(try HeapGenCLI.run(["check", "--fail-on", "invalid-free", childPath]), 0)
        }
    }

    /// With --no-follow-fork nothing is tracked for children and the parent's trace is unchanged.
    func testNoFollowForkWritesOneTrace() throws {
        let exe = try Fixture.build("daemon.c")
        let rec = try HeapGenCLI.recording(exe, flags: ["--no-follow-fork"])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.allTraces, [rec.trace])
        let parent = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(parent.calls("inherited"), 0)
    }
}

/// The collector makes its map of a parent's live heap at the first fork, by replaying the
/// parent's trace so far, and keeps it up to date from then on: every later fork, and a
/// child's own fork (whose map starts with what it inherited), must see the heap exactly.
final class RepeatedForkTests: XCTestCase {
    func testEveryForkInheritsTheHeapOfItsMoment() throws {
        let exe = try Fixture.build("forkagain.c")
        for flags in [[], ["--leaks"]] {  // --leaks keeps the map from the first event: both agree
            let rec = try HeapGenCLI.recording(exe, flags: flags)
            XCTAssertStatus(rec.result, 0)
            let children = try rec.allTraces.filter { $0 != rec.trace }.map { try HeapGenCLI.summary($0) }
            XCTAssertEqual(children.count, 3, "\(flags): \(rec.allTraces)")
            let inherited = children.map { [$0.calls("inherited"), $0.bytes("inherited")] }
                .sorted { $0[0] < $1[0] }
            XCTAssertEqual(inherited, [[80, 2_880], [100, 2_720], [105, 2_760]], "\(flags)")
            for child in children {
                XCTAssertEqual(child.processOrigin, "fork")
                XCTAssertEqual(child.unknownFrees, 0, "\(flags): \(child)")
            }
        }
    }
}

/// Fork snapshots when the shim's arena has gone through epochs (heapgen_protocol.h, "Arena
/// epochs"): the stack of a block kept from the start lies in a half the shim has long
/// written over, yet the child's trace names it, whether the collector kept its live map from
/// the start (`--leaks`) and copied the frames at release, or makes it at the fork from the
/// trace.
final class ArenaEpochForkTests: XCTestCase {
    func testInheritedStacksFromReleasedEpochs() throws {
        try check(flags: [])
    }

    func testInheritedStacksFromReleasedEpochsWithTheLiveMapKeptFromTheStart() throws {
        try check(flags: ["--leaks"])
    }

    private func check(flags: [String]) throws {
        let exe = try Fixture.build("epochfork.c")
        let native = try runProcess(exe, [], timeout: 60)
        XCTAssertStatus(native, 0)
        let environment = ProcessInfo.processInfo.environment.merging(["HEAPGEN_ARENA_MB": "2"]) { _, new in new }
        let rec = try HeapGenCLI.recording(exe, flags: flags + ["--quiet"], environment: environment)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, native.stdout, "the program's output is its own")

        var parentStacks = Set<UInt32>()
        var end: EndRecord?
        for record in try HeapGenCLI.records(rec.trace) {
            if case let .stack(id, _) = record { parentStacks.insert(id) }
            if case let .end(e) = record { end = e }
        }
        XCTAssertEqual(end?.stacksLost, 0, "nothing lost")
        XCTAssertGreaterThan(parentStacks.filter { $0 >= 1 << 24 }.count, 1_000, "the arena went through epochs")

        guard let childPath = rec.allTraces.first(where: { $0 != rec.trace }) else {
            return XCTFail("no child trace: \(rec.allTraces)")
        }
        var stacks: [UInt32: [UInt64]] = [:]
        var modules: [ModuleRecord] = []
        var inherited: [UInt64: UInt32] = [:]   // size → stack
        for record in try HeapGenCLI.records(childPath) {
            switch record {
            case let .stack(id, frames): stacks[id] = frames
            case let .moduleLoad(m): modules.append(m)
            case let .allocation(.inherited, _, size, stack, _) where size == 777 || size == 555:
                inherited[size] = stack
            default: break
            }
        }
        for (size, function) in [(UInt64(777), "keep_early"), (555, "keep_late")] {
            let stack = try XCTUnwrap(inherited[size], "inherited block of \(size) B")
            let frames = try XCTUnwrap(stacks[stack], "its stack is defined")
            XCTAssertFalse(frames.isEmpty)
            let names = try LLVMSymbolizer.functionNames(frames: frames, modules: modules)
            XCTAssertEqual(names.first, function, "\(size) B: \(names)")
            XCTAssertTrue(names.contains("main"), "\(names)")
        }
    }
}
