// 64 threads allocating and freeing at once, with cross-thread frees, marks,
// and a ring so small that producers must wait for the collector.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class ThreadStressTests: XCTestCase {
    static let threads = 64
    static let ops = 20_000

    func testSixtyFourThreadsTinyRingNothingLost() throws {
        let exe = try Fixture.build("stress.c")
        let rec = try HeapGenCLI.recording(exe, ["\(Self.threads)", "\(Self.ops)"], flags: ["--ring-slots", "1024"], timeout: 400)
        XCTAssertStatus(rec.result, 0)
        let s = try HeapGenCLI.summary(rec.trace)

        // stress.c: every operation mallocs 8 + ((id * 7919 + i * 31) % 2048) bytes; pthread's own
        // allocations use calloc, not malloc.
        var bytes: UInt64 = 0
        for id in 0..<Self.threads {
            for i in 0..<Self.ops { bytes += 8 + UInt64((id * 7919 + i * 31) % 2048) }
        }
        let n = UInt64(Self.threads * Self.ops)
        XCTAssertEqual(s.calls("malloc"), n, "\(s)")
        XCTAssertEqual(s.bytes("malloc"), bytes)
        XCTAssertGreaterThanOrEqual(s.frees("free"), n, "every block the fixture allocated is freed")
        // Consistency: no block freed twice or freed before it was allocated, whichever thread did it.
        XCTAssertEqual(s.unknownFrees, 0, "\(s.problems.prefix(5))")
        XCTAssertEqual(s.doubleAllocations, 0, "\(s.problems.prefix(5))")
        XCTAssertEqual(s.uint("badUndos"), 0)
        XCTAssertTrue(s.problems.isEmpty, "\(s.problems.prefix(5))")
        // What is left is libc's (thread control blocks and the like), never the fixture's blocks.
        XCTAssertLessThan(s.liveObjects, 200, "\(s)")
        XCTAssertEqual(s.lostEvents, 0)
        XCTAssertEqual(s.uint("end.lostEvents"), 0)
        XCTAssertEqual(s.uint("end.tornEvents"), 0)

        // Marks: "start", one "half" per worker, "end".
        let labels = s.markLabels
        XCTAssertEqual(labels.count, Self.threads + 2, "\(labels)")
        XCTAssertEqual(labels.first, "start")
        XCTAssertEqual(labels.last, "end")
        XCTAssertEqual(labels.filter { $0 == "half" }.count, Self.threads)
        // Marks sit in the global order: "end" comes after every fixture event.
        let endMark = s.marks.last
        let position = (endMark?["eventPosition"] as? NSNumber)?.uint64Value ?? 0
        XCTAssertGreaterThanOrEqual(position, 2 * n + UInt64(Self.threads) + 1, "\(String(describing: endMark))")

        // A 1,024-slot ring with 64 producers: they had to wait, and nothing was dropped.
        XCTAssertGreaterThan(s.producerWaits ?? 0, 0, "producers never waited on a 1,024-slot ring?\n\(s)")
        XCTAssertGreaterThanOrEqual(s.uint("threadCount") ?? 0, UInt64(Self.threads + 1))
    }

    /// Threads on 16 KiB stacks (PTHREAD_STACK_MIN) that use 6 KiB of them before they
    /// allocate run as they do natively: the shim's per-thread state is not static TLS (which
    /// glibc takes out of every thread's stack; with ~5 KiB of it such a thread crashed), and
    /// its frame buffer is not on the allocating call's stack. 64 threads in waves of 8, so
    /// thread blocks go back to the pool and are taken again; every allocation is recorded
    /// with its own stack.
    func testThreadsOnTheSmallestStacksRunAsNatively() throws {
        let exe = try Fixture.build("smallstacks.c", flags: ["-O2", "-g", "-pthread"])
        let native = try runProcess(exe, ["64"], timeout: 60)
        XCTAssertStatus(native, 0, "native run")
        let rec = try HeapGenCLI.recording(exe, ["64"], flags: ["--quiet"])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, native.stdout)

        var stacks: [UInt32: [UInt64]] = [:]
        var modules: [ModuleRecord] = []
        var bySize: [UInt64: [UInt32]] = [:]
        try HeapGenCLI.records(rec.trace).forEach { r in
            switch r {
            case let .stack(id, frames): stacks[id] = frames
            case let .moduleLoad(m): modules.append(m)
            case let .allocation(_, _, size, stack, _) where size >= 1000 && size < 1064: bySize[size, default: []].append(stack)
            default: break
            }
        }
        XCTAssertEqual(bySize.count, 64, "one allocation size per thread")
        XCTAssertTrue(bySize.values.allSatisfy { $0.count == 1 }, "each once")
        for size: UInt64 in [1000, 1007, 1031, 1063] {
            let frames = stacks[bySize[size]?.first ?? 0] ?? []
            let names = try LLVMSymbolizer.functionNames(frames: frames, modules: modules)
            XCTAssertEqual(Array(names.prefix(2)), ["deep_in_small_stack", "run"], "\(size)-byte allocation: \(names)")
        }
        let s = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(s.unknownFrees, 0, "\(s.problems.prefix(5))")
        XCTAssertTrue(s.problems.isEmpty, "\(s.problems.prefix(5))")
    }
}
