// The program's errno is its own: malloc and free leave it as they found it, also when the
// shim waits for a collector that fell behind and a signal interrupts that wait (free must
// not change errno: POSIX 2024, glibc). Before the shim kept it, a timer signal during the
// wait for ring room or for the stack store left EINTR in errno.

import Foundation
import HeapGenTestSupport
import XCTest

final class ErrnoTests: XCTestCase {
    /// A 1,024-slot ring and a collector stopped for 400 ms: the program waits for room in
    /// free and malloc, woken by a signal every 200 µs, and errno never changes.
    func testWaitingForRingRoomKeepsErrno() throws {
        try checkErrnoKept(mode: "ring", flags: ["--ring-slots", "1024"], environment: [:])
    }

    /// A 2 MiB stack store and 2^16 distinct stacks while the collector is stopped: the
    /// program waits for a half to be released, woken by the same signals, and errno never
    /// changes.
    func testWaitingForTheStackStoreKeepsErrno() throws {
        try checkErrnoKept(mode: "arena", flags: [], environment: ["HEAPGEN_ARENA_MB": "2"])
    }

    private func checkErrnoKept(mode: String, flags: [String], environment extra: [String: String]) throws {
        let exe = try Fixture.build("errnokeep.c")
        let native = try runProcess(exe, [mode], timeout: 120)
        XCTAssertStatus(native, 0, "native run")
        let environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
        let rec = try HeapGenCLI.recording(exe, [mode], flags: flags + ["--quiet"], environment: environment)
        XCTAssertStatus(rec.result, 0, "errno changed under heapgen")
        XCTAssertEqual(rec.result.stdout, native.stdout, "the program's output is the same under heapgen")
        XCTAssertTrue(rec.result.stdoutText.contains("errno changed by 0 of"), rec.result.transcript)
        // The waits this test is about happened.
        let summary = try HeapGenCLI.summary(rec.trace)
        XCTAssertGreaterThan(summary.producerWaits ?? 0, 0, "the program never waited for the collector\n\(summary)")
    }
}
