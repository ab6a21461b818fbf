// `--leaks` against what LeakSanitizer's and valgrind's own tests teach
// (Fixtures/leakparity.c, deepmain.c + deepplugin.c): dead stack frames are not
// roots (nor are ended threads' stacks, but for their descriptors), registers and
// TLS are, the allocator's bookkeeping is not a reference, cycles leak, forked
// children are scanned, RTLD_DEEPBIND plugins are tracked, and every unreachable
// block of a site is counted. Each case is compared with valgrind's definitely +
// indirectly lost blocks and bytes on the same binary.

import Foundation
import HeapGenTestSupport
import XCTest

final class LeakParityTests: XCTestCase {
    /// Leaked blocks and bytes as heapgen reports them.
    private struct Verdict: Equatable, CustomStringConvertible {
        var blocks: Int
        var bytes: Int
        var description: String { "\(blocks) block(s), \(bytes) B" }
    }

    /// `heapgen run --leaks --format json -- PROGRAM ARGS`: status, report, leaked findings.
    private func heapgen(_ program: String, _ arguments: [String], flags: [String] = ["--leaks"])
        throws -> (result: ProcessResult, report: [String: Any], leaked: [[String: Any]]) {
        let result = try HeapGenCLI.run(["run", "--format", "json"] + flags + ["--", program] + arguments)
        guard let report = try? JSONSerialization.jsonObject(with: result.stdout) as? [String: Any] else {
            throw TestSupportError("not one JSON report:\n\(result.transcript)")
        }
        let leaked = (report["findings"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "leaked" }
        return (result, report, leaked)
    }

    private func total(_ leaked: [[String: Any]]) -> Verdict {
        Verdict(blocks: leaked.reduce(0) { $0 + ($1["leakedBlocks"] as? Int ?? -1_000_000) },
                bytes: leaked.reduce(0) { $0 + ($1["leakedBytes"] as? Int ?? -1_000_000) })
    }

    /// valgrind --leak-check=full: definitely + indirectly lost, and possibly lost.
    private func valgrind(_ program: String, _ arguments: [String]) throws -> (lost: Verdict, possibly: Verdict) {
        let valgrind = try tool("valgrind", hint: "apt-get install -y valgrind (.ci/run does)")
        let r = try runProcess(valgrind, ["--leak-check=full", "--run-libc-freeres=no", "--run-cxx-freeres=no",
                                          program] + arguments, timeout: 600)
        guard r.status == 0 else { throw TestSupportError("valgrind run failed:\n\(r.transcript)") }
        /// Summed over the processes valgrind followed (a forked child reports its own).
        func figure(_ label: String) -> Verdict {
            // ==1== definitely lost: 48 bytes in 1 blocks
            var sum = Verdict(blocks: 0, bytes: 0)   // "All heap blocks were freed": no summary lines
            for line in r.stderrLines where line.contains(label + ":") {
                let words = line.components(separatedBy: label + ":")[1]
                    .replacingOccurrences(of: ",", with: "").split(separator: " ")
                if words.count >= 4, let bytes = Int(words[0]), let blocks = Int(words[3]) {
                    sum.blocks += blocks
                    sum.bytes += bytes
                }
            }
            return sum
        }
        let definitely = figure("definitely lost"), indirectly = figure("indirectly lost")
        return (Verdict(blocks: definitely.blocks + indirectly.blocks, bytes: definitely.bytes + indirectly.bytes),
                figure("possibly lost"))
    }

    /// One case: heapgen's leaked blocks and bytes equal `expected` and valgrind's lost ones.
    private func check(_ arguments: [String], expected: Verdict, fixture: String = "leakparity.c",
                       file: StaticString = #filePath, line: UInt = #line) throws {
        let exe = try Fixture.build(fixture)
        let native = try runProcess(exe, arguments)
        XCTAssertStatus(native, 0, "the fixture fails without heapgen", file: file, line: line)
        let (result, _, leaked) = try heapgen(exe, arguments)
        XCTAssertStatus(result, 0, file: file, line: line)
        XCTAssertEqual(total(leaked), expected, "heapgen \(arguments)\n\(result.transcript)", file: file, line: line)
        let v = try valgrind(exe, arguments)
        XCTAssertEqual(v.lost, expected, "valgrind \(arguments)", file: file, line: line)
    }

    /// A case where heapgen judges as LeakSanitizer does and valgrind does not: heapgen's
    /// leaked blocks and bytes equal `expected`, and valgrind's lost ones pass `valgrindSays`
    /// (if valgrind's verdict changed, so may the case). Returns heapgen's report.
    @discardableResult
    private func checkWhereValgrindDiffers(_ arguments: [String], expected: Verdict, fixture: String = "leakparity.c",
                                           file: StaticString = #filePath, line: UInt = #line,
                                           valgrindSays: (Verdict) -> Bool) throws -> [String: Any] {
        let exe = try Fixture.build(fixture)
        XCTAssertStatus(try runProcess(exe, arguments), 0, "the fixture fails without heapgen", file: file, line: line)
        let (result, report, leaked) = try heapgen(exe, arguments)
        XCTAssertStatus(result, 0, file: file, line: line)
        XCTAssertEqual(total(leaked), expected, result.transcript, file: file, line: line)
        let lost = try valgrind(exe, arguments).lost
        XCTAssertTrue(valgrindSays(lost), "valgrind \(arguments): \(lost)", file: file, line: line)
        return report
    }

    /// A program nobody here wrote: perl leaves its interpreter's memory to the exit, some
    /// of it unreachable by then (45 blocks, 53.7 kB with Debian's perl 5.36). heapgen's
    /// leaked blocks and bytes equal valgrind's definitely + indirectly lost ones.
    func testPerlsOwnLeaksMatchValgrinds() throws {
        let perl = try tool("perl", hint: "apt-get install -y perl")
        let script = ["-e", "my @a = map { $_ * 2 } 1..100; my %h = map { $_ => [$_] } 1..50;"]
        let (result, _, leaked) = try heapgen(perl, script)
        XCTAssertStatus(result, 0)
        let lost = try valgrind(perl, script).lost
        XCTAssertGreaterThan(lost.blocks, 0, "perl leaks nothing any more: the case needs another program")
        XCTAssertEqual(total(leaked), lost, result.transcript)
    }

    func testAPointerLeftInAReturnedFrameKeepsNothingAlive() throws {
        try check(["deadframe"], expected: Verdict(blocks: 1, bytes: 48))
    }

    func testAPointerInAnotherThreadsRegisterIsAReference() throws {
        try check(["register"], expected: Verdict(blocks: 0, bytes: 0))
        // The 72 B block was live and reached (through r12 of the spinning thread only).
        let (_, report, _) = try heapgen(try Fixture.build("leakparity.c"), ["register"])
        let notes = report["notes"] as? [String] ?? []
        XCTAssertTrue(notes.contains("leak scan: 0 unreachable blocks (0 B) of 2 live at exit."), "\(notes)")
    }

    /// Pointers held only in vector registers (as memcpy and vectorized loops hold them
    /// while they move them): xmm7 of one spinning thread, ymm6's upper half of another
    /// (with AVX). Roots, as LeakSanitizer has them; valgrind calls both lost.
    func testAPointerInAVectorRegisterIsAReference() throws {
        let report = try checkWhereValgrindDiffers(["vector"], expected: Verdict(blocks: 0, bytes: 0)) { $0.blocks > 0 }
        let notes = report["notes"] as? [String] ?? []
        XCTAssertTrue(notes.contains { $0.hasPrefix("leak scan: 0 unreachable blocks (0 B) of ") }, "\(notes)")
    }

    func testThreadLocalVariablesAreRoots() throws {
        try check(["tls"], expected: Verdict(blocks: 0, bytes: 0))
    }

    func testAnInteriorPointerKeepsItsBlock() throws {
        try check(["interior"], expected: Verdict(blocks: 0, bytes: 0))
        // valgrind calls it possibly lost; LeakSanitizer (and heapgen) reachable.
        let v = try valgrind(try Fixture.build("leakparity.c"), ["interior"])
        XCTAssertEqual(v.possibly, Verdict(blocks: 1, bytes: 128))
    }

    /// The last block carved from the top chunk: glibc's main_arena.top points inside it
    /// when its size is 8 more than a multiple of 16, or less.
    func testEveryLeakSizeIsFoundDespiteTheAllocatorsTopPointer() throws {
        for size in [16, 24, 32, 40, 96, 100, 1000, 2664, 4096, 4104] {
            try check(["size", String(size)], expected: Verdict(blocks: 1, bytes: size))
        }
    }

    // MARK: malloc's memory beside the program's (Fixtures/leakmaps.c)

    /// The kernel merges neighbouring anonymous mappings: a program's arena and a thread stack
    /// it mapped share one line of the map with a block glibc mmap'd. The line was dropped
    /// whole as malloc's (40 + 56 B and the thread's own blocks leaked); now only the block's
    /// mapping is.
    func testTheProgramsMappingsBesideAnMmappedBlockAreRoots() throws {
        let exe = try Fixture.build("leakmaps.c")
        XCTAssertStatus(try runProcess(exe, ["merged", "strict"]), 0, "exit 3: the kernel did not merge the mappings")
        let (result, _, leaked) = try heapgen(exe, ["merged", "strict"])
        XCTAssertStatus(result, 0, "exit 3: the kernel did not merge the mappings")
        XCTAssertEqual(total(leaked), Verdict(blocks: 0, bytes: 0), result.transcript)
        XCTAssertEqual(try valgrind(exe, ["merged"]).lost, Verdict(blocks: 0, bytes: 0))
    }

    /// A parked coroutine's stack (anonymous, above a guard page, no thread's) has empty
    /// circular list heads that point at themselves, as a thread descriptor's header does: it
    /// was taken for a dead thread's stack and its frames dropped. A descriptor now also
    /// holds the process's stack and pointer guards.
    func testAParkedCoroutinesStackIsNotADeadThreads() throws {
        try check(["coroutine"], expected: Verdict(blocks: 0, bytes: 0), fixture: "leakmaps.c")
    }

    /// Only heapgen's own segment (`heapgen:<collector pid>:…`) is left out of the roots, not
    /// any memfd whose name starts with "heapgen".
    func testAMemfdOfTheProgramsNamedLikeHeapgensIsARoot() throws {
        try check(["memfd"], expected: Verdict(blocks: 0, bytes: 0), fixture: "leakmaps.c")
    }

    /// libc's data holds the program's pointers too, into the middle of blocks (setvbuf's
    /// buffer, strtok's position): only what may be malloc's own chunk header is not a
    /// reference there (valgrind: possibly lost; LeakSanitizer: reachable).
    func testLibcsPointersIntoBlocksAreReferences() throws {
        try check(["libcdata"], expected: Verdict(blocks: 0, bytes: 0), fixture: "leakmaps.c")
    }

    /// A table the program seals read-only (mprotect) after storing pointers in it: in its
    /// .bss and in an anonymous mapping. Only read-write memory was a root (5 blocks
    /// leaked, as valgrind says); read-only private memory is read, its written pages only.
    func testATableSealedReadOnlyIsARoot() throws {
        try checkWhereValgrindDiffers(["sealed"], expected: Verdict(blocks: 0, bytes: 0), fixture: "leakmaps.c") {
            $0 == Verdict(blocks: 5, bytes: 4 * 72 + 40)
        }
    }

    /// A thread arena's first heap, emptied of blocks, holds the arena's state, whose top
    /// pointer lies in the last bytes of the block carved just before the top chunk: scanned
    /// as a plain root, it kept that leaked block. Arena heaps are never roots now.
    func testAnArenaHeapHoldingOnlyTheArenasStateIsNoRoot() throws {
        try check(["arenatop"], expected: Verdict(blocks: 1, bytes: 24), fixture: "leakmaps.c")
    }

    /// libstdc++'s `new T[0]` (T with a destructor) is an 8-byte block holding the count 0;
    /// the program holds its end, which `delete[]` takes: no leak, as LeakSanitizer says
    /// (valgrind: definitely lost). It was "8 B leaked" (probe of valgrind's cases).
    func testAnEmptyArrayOfObjectsHeldByItsEndIsNoLeak() throws {
        let exe = try Fixture.build("newzero.cpp")
        XCTAssertStatus(try runProcess(exe, []), 0)
        let (result, _, leaked) = try heapgen(exe, [], flags: ["--leaks"])
        XCTAssertStatus(result, 0)
        XCTAssertEqual(total(leaked), Verdict(blocks: 0, bytes: 0), result.transcript)
        XCTAssertEqual(try valgrind(exe, []).lost, Verdict(blocks: 1, bytes: 8), "valgrind's verdict changed: so may the case")
    }

    func testACycleOfUnreachableBlocksLeaks() throws {
        try check(["cycle"], expected: Verdict(blocks: 3, bytes: 96))
    }

    func testNineOfTenBlocksOfOneSite() throws {
        try check(["ninetenths"], expected: Verdict(blocks: 9, bytes: 864))
        let exe = try Fixture.build("leakparity.c")
        let (_, _, leaked) = try heapgen(exe, ["ninetenths"])
        XCTAssertEqual(leaked.count, 1, "one site")

        // The text report and the gate say it LeakSanitizer's way.
        let text = try HeapGenCLI.run(["run", "--leaks", "--", exe, "ninetenths"])
        XCTAssertStatus(text, 0)
        let out = String(decoding: text.stdout, as: UTF8.self)
        XCTAssertTrue(out.contains("leaked: 9 blocks, 864 B"), out)
        XCTAssertTrue(out.contains("SUMMARY: heapgen: 864 byte(s) leaked in 9 allocation(s)."), out)
        let gate = try HeapGenCLI.run(["run", "--fail-on", "leaked", "--", exe, "ninetenths"])
        XCTAssertStatus(gate, 23)
        let lines = gate.stderrLines
        XCTAssertTrue(lines.contains { $0.hasPrefix("heapgen: gate failed: 1 leaked site (864 B in 9 blocks): ") }, gate.transcript)
        XCTAssertTrue(lines.contains("SUMMARY: heapgen: 864 byte(s) leaked in 9 allocation(s)."), gate.transcript)
        XCTAssertEqual(lines.last, "SUMMARY: heapgen: gate failed: 1 leaked site (864 B in 9 blocks).", gate.transcript)
    }

    /// Pointers left just below main's frame, where exit() and its handlers then run: the
    /// scan asked from exit's handlers counts the stack from above exit's frame, so the
    /// copies left between exit's own frames keep nothing alive (when main calls exit(),
    /// they did before; LeakSanitizer's exit_atexit_stale_stack test teaches the case).
    func testPointersLeftWhereExitRunsKeepNothingAlive() throws {
        try check(["exitholes"], expected: Verdict(blocks: 1, bytes: 100))
        try check(["exitholes_exit"], expected: Verdict(blocks: 1, bytes: 100))
    }

    /// The function that calls exit() keeps the only pointer to a block in a callee-saved
    /// register (sshd's accept loop its pollfd array): exit()'s frames, below where the
    /// scan's roots begin, are where that register is saved, if anywhere. heapgen's exit()
    /// copies the caller's registers into its own frame above them. Before, a false leak of
    /// 816 B, and `--fail-on leaked` failed on sshd.
    func testAPointerTheCallerOfExitKeepsInARegisterIsARoot() throws {
        try check(["exitreg"], expected: Verdict(blocks: 0, bytes: 0))
    }

    /// Two images leak (the program and a forked child): both are reported, and what is said
    /// of the whole recording (its temporary traces removed) is said once, at the end, not
    /// in each report (probe of sshd: once per image).
    func testARecordingsNoteIsSaidOnceForSeveralReports() throws {
        let exe = try Fixture.build("leakparity.c")
        let run = try HeapGenCLI.run(["run", "--leaks", "--", exe, "fork"])
        XCTAssertStatus(run, 0)
        XCTAssertEqual(run.stdoutText.components(separatedBy: "heapgen: leakparity (pid ").count - 1, 2, run.stdoutText)
        XCTAssertEqual(run.stdoutText.components(separatedBy: "were temporary files and have been removed").count - 1, 1,
                       run.stdoutText)
    }

    /// quick_exit() runs the at_quick_exit handlers and then _exit inside libc: no atexit
    /// handler and no call of our _exit. The scan runs among those handlers (before, no
    /// scan ran at all: "no verdict on its leaks"), with quick_exit's frames no roots.
    func testQuickExitIsScannedLikeExit() throws {
        try check(["exitholes_quick"], expected: Verdict(blocks: 1, bytes: 100))
    }

    /// main leaves with pthread_exit() and the last thread's exit() asks for the scan. The
    /// leader is then a zombie: it cannot be seized, and it has no memory of its own to read
    /// (the scan ended with "ended during its scan" and no verdict); the memory is read
    /// through a live thread, and the leader's stack is dead below argv.
    func testAProcessWhoseMainThreadLeftWithPthreadExit() throws {
        try check(["leaderexit"], expected: Verdict(blocks: 1, bytes: 48))
    }

    /// glibc keeps the stacks of ended threads for the next ones: the frames left there
    /// are as dead as those below a live thread's stack pointer (4 of the 8 were missed
    /// when the whole cached stack was a root).
    func testTheStaleFramesOfEndedThreadsKeepNothingAlive() throws {
        try check(["deadthreads"], expected: Verdict(blocks: 8, bytes: 384))
    }

    /// Blocks kept only in the `__thread` variables of ended threads: nothing can read those
    /// again. LeakSanitizer says leaked, as heapgen does; valgrind still scans the ended
    /// threads' TLS and says still reachable.
    func testTheThreadLocalVariablesOfEndedThreadsKeepNothingAlive() throws {
        try checkWhereValgrindDiffers(["deadtls"], expected: Verdict(blocks: 4, bytes: 224)) { $0.blocks == 0 }
    }

    /// An ended thread nobody joined yet: pthread_join can still return its value.
    func testTheValueOfAnUnjoinedThreadIsARoot() throws {
        try check(["unjoined"], expected: Verdict(blocks: 0, bytes: 0))
    }

    /// A live thread whose stack pointer is on its alternate signal stack: its own stack
    /// is still a root (found by its thread pointer).
    func testAThreadOnItsAlternateSignalStackKeepsItsFrames() throws {
        try check(["altstack"], expected: Verdict(blocks: 0, bytes: 0))
    }

    /// A forked child of a threaded parent: there the stacks of the parent's other threads
    /// look like ended threads' stacks, and hold what those threads held at the fork. They
    /// stay roots (valgrind agrees); the gate judges both images.
    func testAForkedChildKeepsWhatItsParentsOtherThreadsHeld() throws {
        let exe = try Fixture.build("leakparity.c")
        XCTAssertStatus(try runProcess(exe, ["forkthreads"]), 0, "the fixture fails without heapgen")
        let gate = try HeapGenCLI.run(["run", "--fail-on", "leaked", "--", exe, "forkthreads"])
        XCTAssertStatus(gate, 0)
        // One verdict for both images (a child that was not scanned would be "not judged").
        XCTAssertEqual(gate.stderrLines, ["SUMMARY: heapgen: gate passed: no leaked sites."], gate.transcript)
        XCTAssertEqual(try valgrind(exe, ["forkthreads"]).lost, Verdict(blocks: 0, bytes: 0))
    }

    func testNothingLeakedWhenEverythingIsKept() throws {
        try check(["none"], expected: Verdict(blocks: 0, bytes: 0))
    }

    /// The child leaks 200 B and exits normally; the parent keeps its one block.
    func testAForkedChildThatLeaksFailsTheGate() throws {
        try checkForkedChild("fork")
    }

    /// The same child leaving with _exit(0), as children that skip their parent's cleanup
    /// do: no exit handler runs, heapgen's _exit scans (valgrind reports it too; before,
    /// nothing was scanned and the gate passed).
    /// A block lost before three forks is lost in each child too, as LeakSanitizer and
    /// valgrind report it in each; the gate named each child with the same lines (nine times
    /// for a PostgreSQL server's nine processes). Children of one program with the same
    /// verdict are one entry naming their pids; a removed trace is not named.
    func testChildrenWithTheSameVerdictAreOneEntry() throws {
        let exe = try Fixture.build("leakparity.c")
        XCTAssertStatus(try runProcess(exe, ["forkinherit"]), 0)
        let r = try HeapGenCLI.run(["run", "--quiet", "--fail-on", "leaked", "--", exe, "forkinherit"])
        XCTAssertEqual(r.status, 23, r.transcript)
        let grouped = r.stderrLines.filter { $0.hasPrefix("heapgen: leakparity (pids ") }
        XCTAssertEqual(grouped.count, 1, r.stderrText)
        XCTAssertTrue(grouped.first?.hasSuffix("): the same verdict in each:") == true, r.stderrText)
        XCTAssertEqual(grouped.first?.split(separator: ",").count, 3, r.stderrText)
        XCTAssertEqual(r.stderrLines.filter { $0.hasPrefix("SUMMARY: heapgen: gate failed") }.count, 2, "the parent's and the children's: \(r.stderrText)")
        XCTAssertFalse(r.stderrText.contains("/tmp/heapgen-"), "the temporary traces are gone: \(r.stderrText)")
    }

    /// Children reaped by the raw wait4 system call (Go's runtime does it): their traces wait
    /// two seconds for a status, and the timer went on marking them, so a child that lived a
    /// millisecond had cycles, and which of six identical leaking children got a report was
    /// chance (probe of a Go program). No mark goes into a process that has exited, and with
    /// --leaks every image that leaked is reported, marked or not.
    func testEveryLeakingChildIsReportedAndNoneGetsMarksAfterItsExit() throws {
        let exe = try Fixture.build("rawreap.c")
        XCTAssertStatus(try runProcess(exe, []), 0)
        let dir = try TestPaths.freshDirectory("rawreap")
        let r = try HeapGenCLI.run(["run", "--quiet", "--leaks", "--mark-every", "50ms", "--trace", dir + "/t", "--", exe])
        XCTAssertStatus(r, 0)
        XCTAssertEqual(r.stdoutText.components(separatedBy: "Leaked: 1 site unreachable at exit").count - 1, 4, r.stdoutText)
        let children = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("t.") }
        XCTAssertEqual(children.count, 4, "\(children)")
        for child in children {
            let records = try HeapGenCLI.records(dir + "/" + child)
            let scan = try XCTUnwrap(records.lastIndex { if case .unreachable = $0 { return true }; return false }, child)
            XCTAssertFalse(records[scan...].contains { if case .mark = $0 { return true }; return false },
                           "\(child): a mark after its exit scan")
        }
    }

    func testAForkedChildThatLeavesWithUnderscoreExitIsJudgedToo() throws {
        try checkForkedChild("fork_exit")
    }

    private func checkForkedChild(_ mode: String) throws {
        let exe = try Fixture.build("leakparity.c")
        XCTAssertStatus(try runProcess(exe, [mode]), 0)
        let (result, _, leaked) = try heapgen(exe, [mode], flags: ["--fail-on", "leaked"])
        XCTAssertStatus(result, 23)
        XCTAssertEqual(leaked.count, 0, "the parent (the report) leaks nothing")
        let lines = result.stderrLines
        XCTAssertTrue(lines.contains { $0.hasPrefix("heapgen: gate failed: 1 leaked site (200 B in 1 block): ") }, result.transcript)
        XCTAssertTrue(lines.contains("SUMMARY: heapgen: 200 byte(s) leaked in 1 allocation(s)."), result.transcript)

        // The child's trace holds the scan: its one leaked block, and the 40 B it inherited reachable.
        let rec = try HeapGenCLI.recording(exe, [mode], flags: ["--quiet", "--leaks"])
        XCTAssertStatus(rec.result, 0)
        let traces = rec.allTraces
        XCTAssertEqual(traces.count, 2, "\(traces)")
        var unreachable: [String: [UInt64]] = [:]
        var sizes: [String: [UInt64: UInt64]] = [:]
        for trace in traces {
            for record in try HeapGenCLI.records(trace) {
                switch record {
                case let .unreachable(addresses): unreachable[trace, default: []] += addresses
                case let .allocation(_, address, size, _, _): sizes[trace, default: [:]][address] = size
                default: break
                }
            }
        }
        XCTAssertEqual(unreachable[rec.trace] ?? [], [], "the parent")
        let child = traces.first { $0 != rec.trace } ?? ""
        XCTAssertEqual((unreachable[child] ?? []).map { sizes[child]?[$0] }, [200], "the child")

        let v = try valgrind(exe, [mode])   // valgrind reports the child's leak too
        XCTAssertEqual(v.lost, Verdict(blocks: 1, bytes: 200))
    }

    /// Stopping the threads for the scan is invisible to the program: a read() and a
    /// nanosleep() in progress go on (the kernel restarts them), output and status are
    /// those of the run without heapgen.
    func testThreadsStoppedForTheScanDoNotNotice() throws {
        let exe = try Fixture.build("leakparity.c")
        let native = try runProcess(exe, ["blocked"])
        XCTAssertStatus(native, 0)
        XCTAssertEqual(native.stdoutText, "main done\n")
        for _ in 1...3 {
            let rec = try HeapGenCLI.recording(exe, ["blocked"], flags: ["--quiet", "--leaks"])
            XCTAssertStatus(rec.result, 0)
            XCTAssertEqual(rec.result.stdout, native.stdout, rec.result.transcript)
            var scans = 0
            for record in try HeapGenCLI.records(rec.trace) {
                if case let .unreachable(addresses) = record { scans += 1; XCTAssertEqual(addresses, []) }
            }
            XCTAssertEqual(scans, 2, "the program's scan, then the one at exit")
            // The program's scan stopped its three threads.
            XCTAssertTrue(rec.result.stderrText.contains("\"threads\":3,\"threadsStopped\":3,"), rec.result.transcript)
        }
    }

    /// A child its parent already traces (PTRACE_TRACEME): the collector may not stop its
    /// threads, says so, and bounds the requesting thread's stack by the stack pointer the
    /// shim sent: the pointer in the dead frame still keeps nothing alive.
    func testWithoutPtraceTheRequestersStackPointerBoundsTheStack() throws {
        let exe = try Fixture.build("leakparity.c")
        XCTAssertStatus(try runProcess(exe, ["traced"]), 0)
        let (result, _, leaked) = try heapgen(exe, ["traced"], flags: ["--fail-on", "leaked"])
        XCTAssertStatus(result, 23)
        XCTAssertEqual(leaked.count, 0, "the parent leaks nothing")
        let lines = result.stderrLines
        XCTAssertTrue(lines.contains { $0.hasPrefix("heapgen: note: the leak scan could not stop the threads of process ")
                                       && $0.contains("(Operation not permitted: another tracer") }, result.transcript)
        XCTAssertTrue(lines.contains { $0.hasPrefix("heapgen: gate failed: 1 leaked site (48 B in 1 block): blocks at leave_in_frame") },
                      result.transcript)
        XCTAssertTrue(lines.contains("SUMMARY: heapgen: 48 byte(s) leaked in 1 allocation(s)."), result.transcript)
    }

    /// deepmain loads deepplugin with RTLD_DEEPBIND: the plugin's malloc and free bind inside
    /// it, past the preloaded shim, unless the shim rebinds them. The plugin frees a block of
    /// main's; missed, it would stay live and unreachable: a false leak.
    func testADeepBindPluginIsTrackedAndLeaksNothing() throws {
        let plugin = try Fixture.build("deepplugin.c", shared: true)
        let exe = try Fixture.build("deepmain.c")
        for mode in [[], ["plain"]] {
            let native = try runProcess(exe, [plugin] + mode)
            XCTAssertStatus(native, 0, "the fixture fails without heapgen")
            let (result, _, leaked) = try heapgen(exe, [plugin] + mode, flags: ["--leaks", "--fail-on", "leaked"])
            XCTAssertStatus(result, 0)
            XCTAssertEqual(leaked.count, 0, "\(mode)\n\(result.transcript)")

            let rec = try HeapGenCLI.recording(exe, [plugin] + mode, flags: ["--quiet"])
            XCTAssertStatus(rec.result, 0)
            let s = try HeapGenCLI.summary(rec.trace)
            let usage = try Valgrind.heapUsage(exe, [plugin] + mode)
            XCTAssertEqual(s.allocationCount, usage.allocs, "\(mode)\n\(s)")
            XCTAssertEqual(s.freeCount, usage.frees, "\(mode)\n\(s)")
            XCTAssertEqual(s.unknownFrees, 0, "\(mode)\n\(s)")
        }
    }

    /// A plugin dlopen'd with RTLD_DEEPBIND by its bare name, found through the executable's
    /// RUNPATH: the shim made the call, so glibc searched the shim's path and the program's
    /// dlopen failed under heapgen only (probe of heaptrack's tests; heaptrack fails too).
    func testADeepBindPluginNamedBareIsFoundThroughTheCallersRunpath() throws {
        let plugin = try Fixture.build("deepplugin.c", shared: true)
        let directory = (plugin as NSString).deletingLastPathComponent
        let exe = try Fixture.build("deepmain.c", flags: ["-Wl,--enable-new-dtags,-rpath,\(directory)"])
        let name = (plugin as NSString).lastPathComponent
        XCTAssertStatus(try runProcess(exe, [name]), 0, "the fixture fails without heapgen (exit 3: dlopen failed)")
        let (result, _, leaked) = try heapgen(exe, [name], flags: ["--leaks", "--fail-on", "leaked"])
        XCTAssertStatus(result, 0, "exit 3: dlopen failed")
        XCTAssertEqual(leaked.count, 0, result.transcript)
    }
}
