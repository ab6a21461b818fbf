// Programs that lock themselves into a seccomp filter (sshd's privilege-separated child,
// a sandboxed worker): under heapgen they run as they do natively, with everything they
// allocate recorded and their leaks judged.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class SandboxTests: XCTestCase {
    /// sandboxed.c allows memory, futex, I/O, fork, wait and exit, and is killed (SIGSYS)
    /// on any other system call. With a ring of 1,024 slots the shim waits for room
    /// hundreds of times inside the sandbox; before, its first sleep (sched_yield) killed
    /// the program. Then: allocations from a recursion deeper than any stack reached before
    /// (checked by process_vm_readv before), a forked child (which would connect), and an exit
    /// scan with --leaks (which reads the executable for suppressions, and polls).
    /// A filter the kernel refuses installs nothing (Chromium probes with a NULL program):
    /// it was taken for a sandbox, the program's children ran untraced, the user was told
    /// it had locked itself in, and with --leaks a child Chromium cloned ran the exit scan
    /// in its parent's name and crashed the zygote.
    func testARefusedFilterIsNoSandbox() throws {
        let exe = try Fixture.build("sandboxed.c")
        let native = try runProcess(exe, ["probe"])
        XCTAssertEqual(native.stdoutText, "refused 14, child 0\n", native.transcript)
        let rec = try HeapGenCLI.recording(exe, ["probe"], flags: ["--quiet", "--leaks"])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, native.stdout)
        XCTAssertEqual(rec.result.stderrLines, [], "no sandbox note, no missing scan: \(rec.result.transcript)")
        let child = try XCTUnwrap(rec.allTraces.first { $0 != rec.trace }, "the child is traced: \(rec.allTraces)")
        XCTAssertEqual(try HeapGenCLI.summary(child).calls("malloc"), 1)
    }

    func testASandboxedProgramRunsAsItDoesNatively() throws {
        let exe = try Fixture.build("sandboxed.c")
        let native = try runProcess(exe, ["300000"], timeout: 60)
        XCTAssertStatus(native, 0, native.transcript)
        let rec = try HeapGenCLI.recording(exe, ["300000"], flags: ["--quiet", "--leaks", "--ring-slots", "1024"],
                                           timeout: 120)
        XCTAssertStatus(rec.result, 0, rec.result.transcript)
        XCTAssertEqual(rec.result.stdout, native.stdout, "the program's output is its own")
        XCTAssertEqual(rec.result.stderrLines, [
            "heapgen: note: \(rec.trace): the program locked itself into a seccomp sandbox, where heapgen makes no "
                + "system calls of its own: a process forked there runs untraced, and a stack that cannot be "
                + "walked without one is cut short",
        ], rec.result.transcript)
        XCTAssertEqual(rec.allTraces, [rec.trace], "the child forked in the sandbox runs untraced")

        let lines = native.stdoutText.split(separator: "\n")
        let mallocs = try XCTUnwrap(lines.last.flatMap { UInt64($0.split(separator: " ").last ?? "") })
        let s = try HeapGenCLI.summary(rec.trace)
        // Its own mallocs in the sandbox, one before it, none lost, every stack walked whole.
        XCTAssertEqual(s.calls("malloc"), mallocs + 1, "\(s)")
        XCTAssertEqual(s.lostEvents, 0)
        XCTAssertEqual(s.uint("end.unwindFallbacks"), 0, "stacks cut short\n\(s)")
        XCTAssertGreaterThan(s.producerWaits ?? 0, 10, "the ring filled up inside the sandbox: \(s)")
        XCTAssertEqual(s.endReason, "exited")

        let report = try HeapGenCLI.json(["report", "--format", "json", rec.trace])
        let leaked = (report["findings"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "leaked" }
        XCTAssertEqual(leaked.count, 1, "\(leaked)")
        XCTAssertTrue("\(leaked)".contains("lose_in_sandbox"), "\(leaked)")
    }
}
