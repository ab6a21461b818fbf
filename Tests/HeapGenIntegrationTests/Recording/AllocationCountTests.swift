// Exact allocation accounting: one call of every entry point, and totals
// compared with valgrind's.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class AllocationCountTests: XCTestCase {
    /// functions.c: every entry point a known number of times with known sizes.
    func testPerFunctionCountsAndBytes() throws {
        let exe = try Fixture.build("functions.c")
        let native = try runProcess(exe, [])
        XCTAssertStatus(native, 0, "the fixture fails without heapgen")

        let rec = try HeapGenCLI.recording(exe)
        XCTAssertStatus(rec.result, 0, "malloc_usable_size/alignment/EINVAL checks inside the fixture (its exit code names the check)")
        let s = try HeapGenCLI.summary(rec.trace)

        let expected: [String: (calls: UInt64, bytes: UInt64)] = [
            "malloc": (4, 11 + 22 + 33 + 8),             // 3 mallocs + strdup("heapgen")
            "calloc": (2, 100 + 21),
            "realloc": (4, 40 + 80 + 50 + 5000),         // realloc(NULL,40), →80, realloc(NULL,50), →5000
            "reallocarray": (2, 80 + 160),               // the overflowing call is not recorded
            "posix_memalign": (1, 100),                  // the two EINVAL calls are not recorded
            "aligned_alloc": (1, 128),
            "memalign": (1, 50),
            "valloc": (1, 100),
            "pvalloc": (1, UInt64(sysconf(Int32(_SC_PAGESIZE)))),   // pvalloc(100): a whole page, as it rounds up
        ]
        for (name, want) in expected.sorted(by: { $0.key < $1.key }) {
            XCTAssertEqual(s.calls(name), want.calls, "\(name) calls\n\(s)")
            XCTAssertEqual(s.bytes(name), want.bytes, "\(name) requested bytes\n\(s)")
        }
        XCTAssertEqual(s.functionsUsed, Set(expected.keys), "only these functions were called\n\(s)")
        XCTAssertEqual(s.allocationCount, 17)
        XCTAssertEqual(s.frees("free"), 9, "free(p) calls\n\(s)")
        XCTAssertEqual(s.frees("realloc"), 4, "old blocks of realloc/reallocarray, including realloc(p, 0)\n\(s)")
        XCTAssertEqual(s.freeCount, 13)
        XCTAssertEqual(s.freeNullCalls, 3, "free(NULL) is counted, not recorded\n\(s)")
        // Leaked on purpose: malloc(22), calloc(3,7), realloc →5000, memalign(32,50).
        // The realloc(p, 0) block is not live.
        XCTAssertEqual(s.liveObjects, 4, "\(s)")
        XCTAssertEqual(s.liveBytes, 22 + 21 + 5000 + 50, "\(s)")
        XCTAssertEqual(s.unknownFrees, 0)
        XCTAssertEqual(s.doubleAllocations, 0)
        XCTAssertEqual(s.endReason, "exited")
        XCTAssertEqual(s.endStatus, 0)

        // The same from the records themselves: realloc(p, 0) is one realloc-kind free and nothing else.
        let records = try HeapGenCLI.records(rec.trace)
        var reallocFrees: [UInt64] = []
        var reallocAllocs: [UInt64: UInt64] = [:]   // address → size
        for r in records {
            if case let .free(.realloc, address) = r { reallocFrees.append(address) }
            if case let .allocation(.realloc, address, size, _, _) = r { reallocAllocs[address] = size }
        }
        XCTAssertEqual(reallocFrees.count, 4)
        let sizes = records.compactMap { r -> UInt64? in
            if case let .allocation(.realloc, _, size, _, _) = r { return size }
            return nil
        }
        XCTAssertEqual(sizes, [40, 80, 50, 5000], "realloc allocations in order")
    }

    /// A C mixed workload with realloc chains.
    func testTotalsMatchValgrindMixedC() throws {
        try compareWithValgrind(try Fixture.build("mixed.c"))
    }

    /// C++: new/delete, new[]/delete[], vector, string, map (libstdc++'s pool included on both sides).
    func testTotalsMatchValgrindCxx() throws {
        try compareWithValgrind(try Fixture.build("cxx.cpp"))
    }

    /// 8 threads (pthread's own allocations included on both sides).
    func testTotalsMatchValgrindThreads() throws {
        try compareWithValgrind(try Fixture.build("threads.c"))
    }

    private func compareWithValgrind(_ exe: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let rec = try HeapGenCLI.recording(exe)
        XCTAssertStatus(rec.result, 0, file: file, line: line)
        let s = try HeapGenCLI.summary(rec.trace)
        let vg = try Valgrind.heapUsage(exe)
        XCTAssertGreaterThan(vg.allocs, 1000, "the fixture does real work", file: file, line: line)
        XCTAssertEqual(s.allocationCount, vg.allocs, "allocations: heapgen vs valgrind\n\(s)", file: file, line: line)
        XCTAssertEqual(s.freeCount, vg.frees, "frees: heapgen vs valgrind\n\(s)", file: file, line: line)
        XCTAssertEqual(s.unknownFrees, 0, file: file, line: line)
        XCTAssertEqual(s.doubleAllocations, 0, file: file, line: line)
    }
}
