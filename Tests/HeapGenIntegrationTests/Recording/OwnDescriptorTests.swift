// The program's descriptors are the program's: the shim never opens, reads or
// writes a descriptor the program may own (issue 7 item 1: libunwind's memory
// validation pipe read the program's input and wrote into its output file),
// and the unwinder still gets through frames without unwind information and
// through signal frames.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class OwnDescriptorTests: XCTestCase {
    private static let input = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

    /// Runs fdsafe natively and under `heapgen record`, each with its own
    /// input/output files, and returns (native, recorded) stdout + output bytes.
    private func runBoth() throws -> (native: (ProcessResult, Data), traced: (ProcessResult, Data), rec: Recording) {
        let exe = try Fixture.build("fdsafe.c")
        func files() throws -> (String, String) {
            let dir = try TestPaths.freshDirectory("fdsafe")
            try Data(Self.input.utf8).write(to: URL(fileURLWithPath: dir + "/in.txt"))
            return (dir + "/in.txt", dir + "/out.txt")
        }
        let (nin, nout) = try files()
        let native = try runProcess(exe, [nin, nout], timeout: 60)
        let (tin, tout) = try files()
        let rec = try HeapGenCLI.recording(exe, [tin, tout], flags: ["--quiet"])
        return ((native, try Data(contentsOf: URL(fileURLWithPath: nout))),
                (rec.result, try Data(contentsOf: URL(fileURLWithPath: tout))), rec)
    }

    /// fdsafe.c: closefrom(3), its own files on fds 3 and 4, allocations from
    /// code without CFI (recursion, a signal handler), 2 bytes copied from
    /// input to output after each. Byte for byte the same with and without
    /// heapgen: output file, stdout (which lists /proc/self/fd four times;
    /// the shim keeps no descriptor, so nothing of its may show).
    func testProgramFilesAreUntouched() throws {
        let (native, traced, _) = try runBoth()
        XCTAssertStatus(native.0, 0)
        XCTAssertStatus(traced.0, 0)
        // 5 + 1 (recursion) + 3 (handler) + 3 round trips of 2 bytes each
        let expected = Data(Self.input.utf8.prefix(24))
        XCTAssertEqual(native.1, expected, "native output file")
        XCTAssertEqual(traced.1, expected, "output file under heapgen: \(Array(traced.1))")
        XCTAssertEqual(traced.0.stdoutText, native.0.stdoutText)
        XCTAssertEqual(traced.0.stdout, native.0.stdout)
        let lines = native.0.stdoutText.split(separator: "\n").map(String.init)
        // (the start list also holds whatever the test runner let the program inherit)
        XCTAssertTrue(lines.first?.hasPrefix("fds start: 0 1 2") == true, "\(lines)")
        XCTAssertEqual(Array(lines.dropFirst()), ["fds opened: 0 1 2 3 4",
                               "read: " + String(Self.input.prefix(24)),
                               "fds after: 0 1 2 3 4",
                               "left in input: \(Self.input.utf8.count - 24)",
                               "blocks: 27",
                               "fds end: 0 1 2 3 4"])
    }

    /// fdtable.c: /proc/self/fd listed in the first image, a forked child and an exec'd
    /// image, as Python's test_subprocess does (it failed under heapgen: the exec'd image
    /// showed the shim's socket and memfd at 500 and 501). The same lists, byte for byte,
    /// with and without heapgen, and each of the three images was traced.
    func testEveryImageSeesOnlyItsOwnDescriptors() throws {
        let exe = try Fixture.build("fdtable.c")
        let native = try runProcess(exe, [], timeout: 60)
        XCTAssertStatus(native, 0)
        let lines = native.stdoutText.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.map { $0.prefix { $0 != ":" } }, ["first image", "forked child", "exec'd image"], native.stdoutText)
        XCTAssertTrue(lines.last?.contains(" 7") == true, "the passed descriptor: \(native.stdoutText)")
        let rec = try HeapGenCLI.recording(exe, flags: ["--quiet"])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdoutText, native.stdoutText)
        XCTAssertEqual(rec.allTraces.count, 3, "root, forked child, exec'd image: \(rec.allTraces)\n\(rec.result.transcript)")
        for trace in rec.allTraces {
            XCTAssertGreaterThan(try HeapGenCLI.summary(trace).uint("allocationCount") ?? 0, 0, trace)
        }
    }

    /// The same recording: every allocation is there; the 12 stacks that
    /// start in noinfo_heap_fp (no CFI, RBP pointing into the heap) stop
    /// there, counted as cut short; the stacks through noinfo_fp (no CFI, a
    /// real frame pointer) and through the signal frame are complete.
    func testStacksWithoutUnwindInfoAndThroughSignalFrames() throws {
        let (_, traced, rec) = try runBoth()
        XCTAssertStatus(traced.0, 0)
        let s = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(s.lostEvents, 0)
        XCTAssertEqual(s.unknownFrees, 0)
        XCTAssertEqual(s.uint("end.unwindFallbacks"), 12, "stacks cut short: the 12 noinfo_heap_fp calls\n\(s)")

        var stacks: [UInt32: [UInt64]] = [:]
        var modules: [ModuleRecord] = []
        var bySize: [UInt64: [UInt32]] = [:]
        for r in try HeapGenCLI.records(rec.trace) {
            switch r {
            case let .stack(id, frames): stacks[id] = frames
            case let .moduleLoad(m): modules.append(m)
            case let .allocation(.malloc, _, size, stack, _): bySize[size, default: []].append(stack)
            default: break
            }
        }
        // noinfo_fp(100 / 101 / 102), noinfo_heap_fp(200 / 201 / 202), malloc(5151) in the handler
        XCTAssertEqual(bySize[100]?.count, 8)
        XCTAssertEqual(bySize[101]?.count, 1)
        XCTAssertEqual(bySize[102]?.count, 3)
        XCTAssertEqual(bySize[200]?.count, 8)
        XCTAssertEqual(bySize[201]?.count, 1)
        XCTAssertEqual(bySize[202]?.count, 3)
        XCTAssertEqual(bySize[5151]?.count, 3)

        func names(_ stack: UInt32) throws -> [String] {
            try LLVMSymbolizer.functionNames(frames: try XCTUnwrap(stacks[stack], "stack \(stack)"), modules: modules)
        }
        for size: UInt64 in [200, 201, 202] {
            for stack in bySize[size] ?? [] {
                XCTAssertEqual(try names(stack), ["noinfo_heap_fp"], "size \(size)")
            }
        }
        for stack in bySize[100] ?? [] {
            let n = try names(stack)
            XCTAssertEqual(Array(n.prefix(2)), ["noinfo_fp", "round_trip"], "\(n)")
            XCTAssertTrue(n.contains("main"), "\(n)")
        }
        for stack in bySize[101] ?? [] {       // 200 levels of recursion, cut at the frame limit
            let n = try names(stack)
            XCTAssertEqual(Array(n.prefix(3)), ["noinfo_fp", "round_trip", "recurse"], "\(n)")
            XCTAssertEqual(n.count, 128, "HG_DEFAULT_FRAMES: \(n)")
            XCTAssertEqual(n.count, StackCompleteness.defaultFrameLimit, "the reports' idea of the shim's default limit")
        }
        // In the handler: handler, the sigreturn trampoline, raise's innards,
        // then the interrupted chain level3 → level2 → level1 → main.
        for stack in (bySize[5151] ?? []) + (bySize[102] ?? []) {
            let n = try names(stack)
            let chain = n.filter { ["handler", "level3", "level2", "level1", "main"].contains($0) }
            XCTAssertEqual(chain, ["handler", "level3", "level2", "level1", "main"], "\(n)")
            XCTAssertTrue(["__libc_start_call_main", "__libc_start_main", "_start"].contains { n.last?.contains($0) == true },
                          "complete to the program's start: \(n)")
        }
    }

    /// No libunwind (nor anything else that opens descriptors) in the shim.
    func testShimDoesNotLinkLibunwind() throws {
        let readelf = try tool("readelf", hint: "install binutils")
        let r = try runProcess(readelf, ["-d", try TestPaths.shim()], timeout: 60)
        XCTAssertStatus(r, 0)
        let needed = r.stdoutText.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        XCTAssertFalse(needed.isEmpty)
        XCTAssertFalse(needed.contains { $0.contains("unwind") }, "\(needed)")
    }
}
