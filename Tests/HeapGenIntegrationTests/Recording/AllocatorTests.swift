// Programs that bring their own allocator: heapgen wraps the allocator the
// program would have used (jemalloc here) instead of replacing it, and says
// so, on its own stderr, when the program's allocations cannot reach it.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class AllocatorTests: XCTestCase {
    /// jemalloc_user.c, linked with -ljemalloc: the standard family plus
    /// mallocx/rallocx/xallocx/sallocx/nallocx/dallocx/sdallocx, and jemalloc's
    /// own stats.allocated. Same output with and without heapgen; heapgen's
    /// totals are the program's own counts.
    func testJemallocProgramKeepsItsAllocatorAndItsStatistics() throws {
        let exe = try Fixture.build("jemalloc_user.c", flags: ["-Wl,--no-as-needed", "-ljemalloc"])
        let native = try runProcess(exe, [], timeout: 60)
        XCTAssertStatus(native, 0)
        let rec = try HeapGenCLI.recording(exe, flags: ["-q"], timeout: 120)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdoutText, native.stdoutText, "the program's output must not change under heapgen")
        XCTAssertEqual(rec.result.stderrText, "", "no warning for a program heapgen can follow:\n\(rec.result.transcript)")

        // jemalloc saw every block: its statistics equal the usable sizes, and
        // drop back to where they were.
        let out = native.stdoutText
        XCTAssertTrue(out.contains("stats match usable sizes: yes\n"), out)
        XCTAssertTrue(out.contains(", +0 after freeing\n"), out)
        let live = try XCTUnwrap(numbers(after: "stats.allocated: +", in: out).first)
        XCTAssertGreaterThan(live, 200 * 24)

        let counts = try XCTUnwrap(numbers(after: "calls: ", in: out).count == 5 ? numbers(after: "calls: ", in: out) : nil,
                                   "no counts line in:\n\(out)")
        let (mallocs, callocs, reallocs, frees, reallocFrees) = (counts[0], counts[1], counts[2], counts[3], counts[4])
        // One block is not the program's: libstdc++ (which libjemalloc needs)
        // allocates its 72,704-byte emergency pool before main and keeps it.
        let s = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(s.calls("malloc"), mallocs + 1, "malloc + mallocx, and libstdc++'s pool\n\(s)")
        XCTAssertEqual(s.calls("calloc"), callocs, "\(s)")
        XCTAssertEqual(s.calls("realloc"), reallocs, "realloc + rallocx + in-place xallocx\n\(s)")
        XCTAssertEqual(s.frees("free"), frees, "free + dallocx + sdallocx\n\(s)")
        XCTAssertEqual(s.frees("realloc"), reallocFrees, "\(s)")
        XCTAssertEqual(s.allocationCount, mallocs + callocs + reallocs + 1, "\(s)")
        XCTAssertEqual(s.unknownFrees, 0, "\(s)")
        XCTAssertEqual(s.doubleAllocations, 0, "\(s)")
        XCTAssertEqual(s.liveObjects, 1, "only libstdc++'s pool\n\(s)")
        XCTAssertEqual(s.liveBytes, 72_704, "\(s)")
        XCTAssertEqual(s.lostEvents, 0, "\(s)")
    }

    /// ownmalloc.c defines (and so exports) malloc, free, calloc and realloc:
    /// the program's calls never reach the shim. heapgen says so once, on its
    /// own stderr; the program's stdout and stderr stay byte for byte the same.
    /// The program runs as `sh -c 'exec ownmalloc 2>FILE'` so that anything the
    /// shim wrote to the program's stderr would land in FILE, apart from
    /// heapgen's own stderr.
    func testExecutableWithItsOwnMallocIsReportedOnHeapgensStderr() throws {
        let exe = try Fixture.build("ownmalloc.c")
        let dir = try TestPaths.freshDirectory("ownmalloc")
        let script = "exec \"$0\" 2>\"$1\""

        let nativeErr = dir + "/native.err"
        let native = try runProcess("/bin/sh", ["-c", script, exe, nativeErr], timeout: 60)
        XCTAssertStatus(native, 0)
        XCTAssertEqual(native.stdoutText, "own allocator\ncalls served by the program's malloc: 101 or more\n")

        let tracedErr = dir + "/traced.err"
        let rec = try HeapGenCLI.recording("/bin/sh", ["-c", script, exe, tracedErr], flags: ["-q"], timeout: 120)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdoutText, native.stdoutText)
        let programErr = try Data(contentsOf: URL(fileURLWithPath: tracedErr))
        XCTAssertEqual(programErr, try Data(contentsOf: URL(fileURLWithPath: nativeErr)),
                       "the program's stderr must not change under heapgen")
        XCTAssertEqual(String(decoding: programErr, as: UTF8.self), "program's own stderr line\n")

        // One warning, for the exec'd program (not for sh, whose malloc is glibc's).
        let warnings = rec.result.stderrLines.filter { $0.hasPrefix("heapgen: warning: ") }
        XCTAssertEqual(warnings.count, 1, rec.result.transcript)
        XCTAssertEqual(rec.result.stderrLines.count, 1, "nothing else on heapgen's stderr:\n\(rec.result.transcript)")
        let traces = rec.allTraces
        XCTAssertEqual(traces.count, 2, "sh's trace and the exec'd program's: \(traces)")
        let image = try HeapGenCLI.summary(try XCTUnwrap(traces.first { $0 != rec.trace }))
        let pid = try XCTUnwrap(image.processPid)
        XCTAssertEqual(warnings.first, "heapgen: warning: process \(pid): malloc is defined by the executable itself, "
                       + "ahead of heapgen: its allocations never reach heapgen and are not recorded")
        XCTAssertEqual(image.allocationCount, 0, "the program's allocations cannot be seen\n\(image)")
        XCTAssertTrue(image.string("process.executable")?.hasSuffix("/ownmalloc") ?? false, "\(image)")

        // The trace keeps the warning: a report, info or gate read from it later gives it,
        // and the gate does not pass in silence on what it could not see.
        let imageTrace = try XCTUnwrap(traces.first { $0 != rec.trace })
        let warning = String(try XCTUnwrap(warnings.first).dropFirst("heapgen: warning: ".count))
        let info = try HeapGenCLI.info(imageTrace)
        XCTAssertEqual(info["recordingWarnings"] as? [String], [warning], "\(info)")
        XCTAssertNil(try HeapGenCLI.info(rec.trace)["recordingWarnings"], "sh's own malloc is glibc's")
        let infoText = try HeapGenCLI.succeed(["info", imageTrace]).stdoutText
        XCTAssertTrue(infoText.contains("\nwarning      \(warning)\n"), infoText)
        let report = try HeapGenCLI.json(["report", "--format", "json", imageTrace])
        XCTAssertEqual(report["recordingWarnings"] as? [String], [warning])
        XCTAssertEqual((report["notes"] as? [String])?.first, "While recording, heapgen warned: \(warning).", "\(report)")
        let check = try HeapGenCLI.run(["check", imageTrace])
        XCTAssertStatus(check, 0)
        XCTAssertEqual(check.stderrLines.first, "heapgen: warning: the gate judged only what the recording saw: \(warning)",
                       check.transcript)
        XCTAssertTrue(check.stderrLines.last?.hasPrefix("SUMMARY: heapgen: gate passed") ?? false, check.transcript)
        XCTAssertTrue(try HeapGenCLI.succeed(["dump", imageTrace]).stdoutText.contains("recording_warning \"process \(pid): "))
    }

    /// jemalloc_new.cpp, linked with -ljemalloc: libjemalloc's operator new
    /// binds ahead of libstdc++'s and does not call malloc. heapgen cannot
    /// record those blocks and says so, once, on its own stderr.
    func testJemallocOperatorNewIsReported() throws {
        let exe = try Fixture.build("jemalloc_new.cpp", flags: ["-Wl,--no-as-needed", "-ljemalloc"])
        let native = try runProcess(exe, [], timeout: 60)
        XCTAssertStatus(native, 0)
        let rec = try HeapGenCLI.recording(exe, flags: ["-q"], timeout: 120)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdoutText, native.stdoutText)
        XCTAssertEqual(native.stdoutText, "done\n")
        let s = try HeapGenCLI.summary(rec.trace)
        let pid = try XCTUnwrap(s.processPid)
        XCTAssertEqual(rec.result.stderrLines.count, 1, rec.result.transcript)
        let line = rec.result.stderrLines.first ?? ""
        XCTAssertTrue(line.hasPrefix("heapgen: warning: process \(pid): C++ operator new is served by /"), line)
        XCTAssertTrue(line.hasSuffix("/libjemalloc.so.2 directly, not through malloc: blocks allocated with new are "
                                     + "not recorded (their deletes may count as unknown frees)"), line)
        // What heapgen does see: libstdc++'s pool, the malloc(10), stdout's
        // buffer; jemalloc's delete[] calls free, so the 10 deletes are frees
        // of blocks heapgen never saw.
        XCTAssertEqual(s.calls("malloc"), 3, "\(s)")
        XCTAssertEqual(s.allocationCount, 3, "\(s)")
        XCTAssertEqual(s.frees("free"), 11, "\(s)")
        XCTAssertEqual(s.unknownFrees, 10, "\(s)")
    }

    /// probe_jemalloc.c: a glibc program looking for jemalloc's API with dlsym.
    /// Natively there is none. Under heapgen it finds the shim's definitions
    /// (the documented trade-off): they fail like an exhausted allocator and
    /// free what they are given, recorded as frees.
    func testJemallocProbeInAGlibcProgramFindsFailingEntryPoints() throws {
        let exe = try Fixture.build("probe_jemalloc.c")
        let native = try runProcess(exe, [], timeout: 60)
        XCTAssertStatus(native, 0)
        XCTAssertEqual(native.stdoutText, "no jemalloc API\nno free_sized\n")
        let rec = try HeapGenCLI.recording(exe, flags: ["-q"], timeout: 120)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdoutText, """
            mallocx: NULL, ENOMEM
            rallocx: NULL, ENOMEM, block unchanged
            xallocx: not resized
            sallocx: usable size
            nallocx: 0
            dallocx, sdallocx: freed
            free_sized: freed

            """)
        XCTAssertEqual(rec.result.stderrText, "", rec.result.transcript)
        let s = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(s.calls("malloc"), 3, "malloc(100), malloc(10), malloc(20)\n\(s)")
        XCTAssertEqual(s.bytes("malloc"), 130)
        XCTAssertEqual(s.allocationCount, 3, "the failed mallocx and rallocx allocate nothing\n\(s)")
        XCTAssertEqual(s.frees("free"), 3, "dallocx, sdallocx, free_sized\n\(s)")
        XCTAssertEqual(s.frees("realloc"), 0, "\(s)")
        XCTAssertEqual(s.unknownFrees, 0, "\(s)")
        XCTAssertEqual(s.liveObjects, 0, "\(s)")
    }

    /// Debian's redis-server (linked with libjemalloc.so.2): it crashed at
    /// start-up when heapgen served its malloc from glibc. Started on a free
    /// port, driven by redis-cli, shut down with SHUTDOWN NOSAVE: same answers
    /// as natively, INFO memory agrees, jemalloc holds redis's blocks, and the
    /// trace has them.
    func testRedisServerRunsUnderHeapgen() throws {
        let server = try tool("redis-server", hint: "apt-get install -y redis-server (.ci/run does)")
        let native = try Redis.session(server: server) { args in try RunningProcess(server, args) }
        var trace = ""
        let traced = try Redis.session(server: server) { args in
            let (process, path) = try HeapGenCLI.start(server, args, flags: ["-q"])
            trace = path
            return process
        }
        XCTAssertStatus(native.result, 0)
        XCTAssertStatus(traced.result, 0, "redis-server under heapgen")
        XCTAssertFalse(traced.result.signaled, traced.result.transcript)
        XCTAssertEqual(traced.replies, native.replies, "redis answers the same under heapgen")
        XCTAssertEqual(traced.replies.split(separator: "\n").count, 2 * Redis.keys)

        for session in [native, traced] {
            XCTAssertEqual(session.memory["mem_allocator"]?.hasPrefix("jemalloc"), true, "\(session.memory)")
        }
        let nativeUsed = try XCTUnwrap(native.memory["used_memory"].flatMap { Int($0) })
        let tracedUsed = try XCTUnwrap(traced.memory["used_memory"].flatMap { Int($0) })
        XCTAssertLessThanOrEqual(abs(tracedUsed - nativeUsed), max(nativeUsed / 20, 64 << 10),
                                 "used_memory: native \(nativeUsed), under heapgen \(tracedUsed)")
        // jemalloc itself holds redis's blocks (not glibc behind its back).
        let allocated = try XCTUnwrap(traced.memory["allocator_allocated"].flatMap { Int($0) })
        XCTAssertGreaterThanOrEqual(allocated, tracedUsed, "\(traced.memory)")

        let s = try HeapGenCLI.summary(trace)
        XCTAssertEqual(s.endReason, "exited", "\(s)")
        XCTAssertEqual(s.endStatus, 0)
        XCTAssertGreaterThan(s.allocationCount, UInt64(2 * Redis.keys), "every SET allocates: \(s)")
        XCTAssertEqual(s.unknownFrees, 0, "\(s)")
        XCTAssertEqual(s.doubleAllocations, 0, "\(s)")
        XCTAssertEqual(s.lostEvents, 0, "\(s)")
    }

    /// The unsigned numbers following `prefix` on its line of `text`.
    private func numbers(after prefix: String, in text: String) -> [UInt64] {
        guard let line = text.split(separator: "\n").first(where: { $0.contains(prefix) }),
              let range = line.range(of: prefix) else { return [] }
        return line[range.upperBound...].split(whereSeparator: { !$0.isNumber }).compactMap { UInt64($0) }
    }
}

/// One redis-server run driven by redis-cli.
private enum Redis {
    static let keys = 300

    struct Session {
        var result: ProcessResult
        /// redis-cli's replies to the SETs and GETs.
        var replies: String
        /// INFO memory, as key -> value.
        var memory: [String: String]
    }

    /// Starts redis-server (through `start`, given its arguments) on a free
    /// port, SETs and GETs `keys` keys, reads INFO memory, and shuts it down.
    static func session(server: String, start: ([String]) throws -> RunningProcess) throws -> Session {
        let cli = try tool("redis-cli", hint: "apt-get install -y redis-tools")
        let port = try LocalPort.free()
        let dir = try TestPaths.freshDirectory("redis")
        let process = try start(["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                 "--dir", dir, "--daemonize", "no"])
        defer { process.killIfRunning() }
        let base = ["-h", "127.0.0.1", "-p", "\(port)"]

        let deadline = Date().addingTimeInterval(60)
        while true {
            let ping = try runProcess(cli, base + ["PING"], timeout: 10)
            if ping.stdoutText == "PONG\n" { break }
            if process.poll() {
                throw TestSupportError("redis-server ended before answering:\n\(process.wait(timeout: 1).transcript)")
            }
            if Date() > deadline { throw TestSupportError("redis-server did not answer PING within 60 s") }
            usleep(50_000)
        }
        var commands = ""
        for i in 0..<keys { commands += "SET key:\(i) value-\(i)-\(String(repeating: "x", count: i % 50))\n" }
        for i in 0..<keys { commands += "GET key:\(i)\n" }
        let batch = try runProcess(cli, base, stdin: Data(commands.utf8), timeout: 60)
        guard batch.status == 0 else { throw TestSupportError("redis-cli failed:\n\(batch.transcript)") }
        let info = try runProcess(cli, base + ["INFO", "memory"], timeout: 10)
        var memory: [String: String] = [:]
        for line in info.stdoutText.split(whereSeparator: { $0.isNewline }) {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { memory[String(parts[0])] = String(parts[1]) }
        }
        _ = try runProcess(cli, base + ["SHUTDOWN", "NOSAVE"], timeout: 10)
        let result = process.wait(timeout: 60)
        return Session(result: result, replies: batch.stdoutText, memory: memory)
    }
}
