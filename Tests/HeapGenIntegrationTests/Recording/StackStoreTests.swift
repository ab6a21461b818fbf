// The shim's call-tree stack store (issue 7, items 12 and 16): hundreds of thousands of
// distinct stacks are all stored in a small arena; when the store does fill, every stack
// it could not keep is counted and said everywhere (collector, info, report, gate);
// stacks cut at the frame limit are marked; the collector rejects malformed node chains.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class StackStoreTests: XCTestCase {
    /// manystacks.c with 2^k paths: its allocations of 16 + bits bytes, in path order.
    struct PathRun {
        var stacks: [UInt32: [UInt64]] = [:]
        var modules: [ModuleRecord] = []
        /// Stack id of path `bits` at index `bits`.
        var pathStacks: [UInt32] = []
        /// Allocations (all of them) recorded with stack 0.
        var stacklessAllocations: UInt64 = 0
        var end: EndRecord?
    }

    /// What the checks read from a trace besides its allocations, which go to `allocation`
    /// (size, stack id) in trace order.
    struct StackTrace {
        var stacks: [UInt32: [UInt64]] = [:]
        var modules: [ModuleRecord] = []
        var end: EndRecord?

        init(_ trace: String, allocation: (UInt64, UInt32) -> Void) throws {
            var reader = try TraceReader(path: trace)
            var read = StackTrace()
            try reader.forEach { record in
                switch record {
                case let .stack(id, frames): read.stacks[id] = frames
                case let .moduleLoad(m): read.modules.append(m)
                case let .allocation(_, _, size, stack, _): allocation(size, stack)
                case let .end(e): read.end = e
                default: break
                }
            }
            self = read
        }

        private init() {}
    }

    private func readPaths(_ trace: String, k: Int) throws -> PathRun {
        var pathStacks: [UInt32] = []
        var stackless: UInt64 = 0
        let read = try StackTrace(trace) { size, stack in
            if stack == 0 { stackless += 1 }
            if pathStacks.count < 1 << k && size == UInt64(16 + pathStacks.count) {
                pathStacks.append(stack)
            }
        }
        return PathRun(stacks: read.stacks, modules: read.modules, pathStacks: pathStacks,
                       stacklessAllocations: stackless, end: read.end)
    }

    /// The program's own output, without heapgen.
    private func nativeOutput(_ exe: String, _ arguments: [String]) throws -> Data {
        let r = try runProcess(exe, arguments, timeout: 120)
        XCTAssertStatus(r, 0, "native run")
        return r.stdout
    }

    private func environment(_ extra: [String: String]) -> [String: String] {
        ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
    }

    /// 2^18 distinct stacks (~50 MB as whole stacks, more than the 32 MiB arena given) are
    /// all stored: each path allocation has its own stack, and a sample of them names exactly
    /// the path its size encodes.
    func testHundredsOfThousandsOfDistinctStacksFitASmallArena() throws {
        let k = 18
        let exe = try Fixture.build("manystacks.c")
        let native = try nativeOutput(exe, [String(k)])
        let rec = try HeapGenCLI.recording(exe, [String(k)], environment: environment(["HEAPGEN_ARENA_MB": "32"]))
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, native, "the program's output is the same under heapgen")
        XCTAssertFalse(rec.result.stderrText.contains("without a stack"), rec.result.transcript)

        let run = try readPaths(rec.trace, k: k)
        let end = try XCTUnwrap(run.end)
        XCTAssertEqual(end.stacksLost, 0)
        XCTAssertEqual(end.arenaFull, 0)
        XCTAssertEqual(run.pathStacks.count, 1 << k, "one allocation per path")
        XCTAssertFalse(run.pathStacks.contains(0), "every path allocation has a stack")
        XCTAssertEqual(Set(run.pathStacks).count, 1 << k, "every path has its own stack")
        // Complete stacks: all paths are equally deep, so all their stacks are equally long.
        let length = try XCTUnwrap(run.stacks[run.pathStacks[0]]).count
        XCTAssertGreaterThanOrEqual(length, k + 3, "k + 1 steps, run_paths and main")
        XCTAssertEqual(run.pathStacks.filter { run.stacks[$0]?.count != length }.count, 0)

        // A sample, symbolicated in one batch: innermost first, level k down to level 0, then
        // run_paths and main.
        var sample: [UInt32] = [0, UInt32(1 << k) - 1]
        for i in 0..<48 {
            let bits: Int = (i * 5_461 + i * i * 37) % (1 << k)
            sample.append(UInt32(bits))
        }
        var all: [UInt64] = []
        for bits in sample { all += run.stacks[run.pathStacks[Int(bits)]]! }
        let names = try LLVMSymbolizer.functionNames(frames: all, modules: run.modules)
        XCTAssertEqual(names.count, all.count)
        for (i, bits) in sample.enumerated() {
            var expected = ["step_a"] + (0..<k).map { (bits >> UInt32($0)) & 1 == 1 ? "step_b" : "step_a" }
            expected.reverse()
            expected += ["run_paths", "main"]
            let got = Array(names[(i * length)..<(i * length + k + 3)])
            XCTAssertEqual(got, expected, "path \(String(bits, radix: 2))")
        }
    }

    /// Four threads run the same 2^16 paths at once, racing to store the same new edges: every
    /// allocation still gets exactly its own path's stack (a race may store an edge twice,
    /// never mix two up), and nothing is lost.
    func testThreadsRacingToStoreTheSameStacks() throws {
        let ids = try checkRacingThreads(environment: ProcessInfo.processInfo.environment)
        XCTAssertTrue(ids.allSatisfy { $0 < 1 << 24 }, "one arena epoch: stack ids are arena refs")
    }

    /// The same race in the smallest arena (two 1 MiB halves, ~43 k nodes each, for a tree of
    /// ~196 k): the arena goes through many epochs while the threads build, halves are handed
    /// back and written over, builds that see the arena move on start again, and still every
    /// allocation has its own path's frames and none is lost.
    func testThreadsRacingThroughManyArenaEpochs() throws {
        let ids = try checkRacingThreads(environment: environment(["HEAPGEN_ARENA_MB": "2"]))
        XCTAssertGreaterThan(ids.filter { $0 >= 1 << 24 }.count, 10_000, "stacks defined in later epochs")
        XCTAssertGreaterThan(ids.filter { $0 < 1 << 24 }.count, 100, "and in the first")
    }

    /// The same, each path followed by an allocation from one of two fixed sites: the
    /// unwinder's memo answers those walks and keeps their stack refs, which must be interned
    /// again whenever the arena has moved on (a ref kept from an earlier epoch names a half
    /// the collector may have handed back). Every hot allocation has its own site's frames.
    func testRepeatedStacksThroughManyArenaEpochs() throws {
        let ids = try checkRacingThreads(environment: environment(["HEAPGEN_ARENA_MB": "2", "MANYSTACKS_HOT": "1"]),
                                         hot: true)
        XCTAssertGreaterThan(ids.filter { $0 >= 1 << 24 }.count, 10_000, "stacks defined in later epochs")
    }

    /// A signal handler that allocates along paths of its own, every 20 us, lands in the
    /// middle of the shim storing the program's new stacks (a build nested in a build, which
    /// both use the thread's hint of its last built stack): every path allocation of the
    /// program and every one of the handler still has exactly its own path's frames.
    func testSignalHandlersStoringStacksInTheMiddleOfAStore() throws {
        let k = 14, handlerLevels = 6
        let exe = try Fixture.build("manystacks.c")
        let env = environment(["MANYSTACKS_SIGNAL": "1"])
        let rec = try HeapGenCLI.recording(exe, [String(k)], flags: ["--quiet"], environment: env)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdoutText, "paths \(1 << k) threads 0 allocated \(1 << k)\n")
        let runs = try XCTUnwrap(rec.result.stderrText.firstMatch(of: /handler runs (\d+)/).flatMap { Int($0.1) })
        XCTAssertGreaterThan(runs, 1_000, "the handler ran often enough to land in stores")

        var programStacks: [UInt32] = [], handlerStacks: [UInt32] = []
        let read = try StackTrace(rec.trace) { size, stack in
            if size == 24 { programStacks.append(stack) }
            if size == 40 { handlerStacks.append(stack) }
        }
        let stacks = read.stacks, modules = read.modules
        XCTAssertEqual(read.end?.stacksLost, 0)
        // The first of each size is main's warm-up, before the paths and the timer.
        XCTAssertEqual(programStacks.count, 1 + (1 << k))
        XCTAssertEqual(handlerStacks.count, 1 + runs)
        programStacks.removeFirst()
        handlerStacks.removeFirst()

        // Symbolicated once per distinct address: the frames each path's stack must begin with.
        let checked = programStacks.map { (stacks[$0] ?? []).prefix(k + 2) } + handlerStacks.map { (stacks[$0] ?? []).prefix(handlerLevels + 2) }
        let addresses = Array(Set(checked.joined()))
        let names = Dictionary(uniqueKeysWithValues: zip(addresses, try LLVMSymbolizer.functionNames(frames: addresses, modules: modules)))
        func expected(_ bits: Int, levels: Int, below: String) -> [String] {
            var path = ["step_a"] + (0..<levels).map { (bits >> $0) & 1 == 1 ? "step_b" : "step_a" }
            path.reverse()
            return path + [below]
        }
        var wrong: [String] = []
        for (n, frames) in checked.enumerated() {
            let program = n < programStacks.count
            let want = program ? expected(n, levels: k, below: "run_paths")
                               : expected((n - programStacks.count) % (1 << handlerLevels), levels: handlerLevels, below: "on_prof")
            let got = frames.map { names[$0] ?? "?" }
            if got != want { wrong.append("\(program ? "path" : "handler run") \(program ? n : n - programStacks.count): \(got)") }
        }
        XCTAssertEqual(wrong.count, 0, "stacks with other frames than their path's, e.g. \(wrong.prefix(3))")
    }

    /// manystacks with 2^16 paths on 4 threads, recorded with `environment`: checks every
    /// path's stack (and with `hot`, every hot site's); returns the stack ids the trace defines.
    private func checkRacingThreads(environment: [String: String], hot: Bool = false) throws -> [UInt32] {
        let k = 16, threads = 4
        let exe = try Fixture.build("manystacks.c")
        let native = try nativeOutput(exe, [String(k), String(threads)])
        let rec = try HeapGenCLI.recording(exe, [String(k), String(threads)], flags: ["--quiet"], environment: environment)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, native)

        var allocations: [(bits: Int, stack: UInt32)] = []
        var hotStacks: [UInt64: [UInt32: Int]] = [:]   // size -> stack id -> allocations
        let read = try StackTrace(rec.trace) { size, stack in
            if size >= 16 && size < 16 + (1 << k) {
                allocations.append((Int(size - 16), stack))
            } else if size == 16 + (1 << k) + 1 || size == 16 + (1 << k) + 2 {
                hotStacks[size, default: [:]][stack, default: 0] += 1
            }
        }
        let stacks = read.stacks, modules = read.modules, end = read.end
        // Which path lost them, if any: the shim's store (arenaFull) or the collector (a stack
        // read after its half was written over).
        XCTAssertEqual(end?.stacksLost, 0, "arenaFull \(end?.arenaFull ?? 0), producer waits \(end?.producerWaits ?? 0)")
        XCTAssertEqual(allocations.filter { $0.stack == 0 }.count, 0)
        // The C library's own allocations (thread set-up, stdio) can share a size with a path;
        // path stacks are the ones of the common length (all paths are equally deep).
        var lengthCounts: [Int: Int] = [:]
        for a in allocations { lengthCounts[stacks[a.stack]?.count ?? 0, default: 0] += 1 }
        let length = lengthCounts.max { $0.value < $1.value }!.key
        XCTAssertGreaterThanOrEqual(length, k + 3, "k + 1 steps, run_paths and the thread start")
        var firstStack = [UInt32](repeating: 0, count: 1 << k)   // per path: the first stack seen
        var perPath = [Int](repeating: 0, count: 1 << k)
        var mismatches = 0
        for a in allocations where stacks[a.stack]?.count == length {
            perPath[a.bits] += 1
            if firstStack[a.bits] == 0 {
                firstStack[a.bits] = a.stack
            } else if a.stack != firstStack[a.bits] && stacks[a.stack] != stacks[firstStack[a.bits]] {
                mismatches += 1
            }
        }
        XCTAssertEqual(perPath.filter { $0 != threads }.count, 0, "each path allocated once per thread")
        XCTAssertEqual(mismatches, 0, "all allocations of one path have the same frames")
        XCTAssertEqual(Set(firstStack.map { stacks[$0] ?? [] }).count, 1 << k, "distinct paths, distinct stacks")
        if hot {
            for (size, site) in [(UInt64(16 + (1 << k) + 1), "hot_a"), (UInt64(16 + (1 << k) + 2), "hot_b")] {
                let byStack = hotStacks[size] ?? [:]
                XCTAssertEqual(byStack.values.reduce(0, +), threads << (k - 1), "\(site): one allocation per thread and path")
                XCTAssertNil(byStack[0], "\(site): allocations without a stack")
                for id in byStack.keys.sorted() {
                    let frames = stacks[id] ?? []
                    let names = try LLVMSymbolizer.functionNames(frames: frames, modules: modules)
                    XCTAssertEqual(Array(names.prefix(2)), [site, "run_paths"], "\(site): stack \(id) of \(byStack[id] ?? 0)")
                }
            }
        }

        var sample: [UInt32] = []
        for i in 0..<24 { sample.append(UInt32((i * 2_731 + 5) % (1 << k))) }
        var all: [UInt64] = []
        var offsets: [Int] = []
        for bits in sample {
            offsets.append(all.count)
            all += stacks[firstStack[Int(bits)]] ?? []
        }
        let names = try LLVMSymbolizer.functionNames(frames: all, modules: modules)
        for (i, bits) in sample.enumerated() {
            var expected = ["step_a"] + (0..<k).map { (bits >> UInt32($0)) & 1 == 1 ? "step_b" : "step_a" }
            expected.reverse()
            expected.append("run_paths")
            XCTAssertEqual(Array(names[offsets[i]..<min(names.count, offsets[i] + k + 2)]), expected,
                           "path \(String(bits, radix: 2))")
        }
        return Array(stacks.keys)
    }

    /// A tiny arena and a collector that cannot keep up (the program stops it while it makes
    /// its stacks, as a collector starved of CPU would be): once both halves are full and the
    /// shim has waited its time, the stacks that did not fit are counted exactly (every
    /// allocation recorded with stack 0 and nothing else), never stored partially, and said by
    /// the collector, `info`, the text and JSON reports, and the gate, which fails.
    func testLostStacksAreCountedAndSaidEverywhere() throws {
        let k = 16
        let exe = try Fixture.build("manystacks.c")
        let stall = [String(k), "0", "stall"]
        let native = try nativeOutput(exe, stall)
        let rec = try HeapGenCLI.recording(exe, stall, environment: environment(["HEAPGEN_ARENA_MB": "2"]))
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, native, "the program's output is the same under heapgen")

        let run = try readPaths(rec.trace, k: k)
        let lost = try XCTUnwrap(run.end).stacksLost
        XCTAssertGreaterThan(lost, 10_000, "two 1 MiB halves hold ~87 k nodes, the tree has ~196 k")
        XCTAssertLessThan(lost, 1 << k)
        XCTAssertEqual(run.stacklessAllocations, lost, "each allocation without a stack is counted, and only those")
        XCTAssertEqual(run.pathStacks.count, 1 << k)
        let stored = run.pathStacks.filter { $0 != 0 }
        XCTAssertEqual(Set(stored).count, stored.count, "stored stacks stay distinct")
        let lengths = Set(stored.map { run.stacks[$0]?.count ?? 0 })
        XCTAssertEqual(lengths.count, 1, "a stack is stored whole or not at all: \(lengths)")

        let count = formatted(lost)
        // The collector: one line at the end.
        let lines = rec.result.stderrText.split(separator: "\n").filter { $0.contains("without a stack") }
        XCTAssertEqual(lines, ["heapgen: warning: \(rec.trace): \(count) allocations recorded without a stack: the stack store was full (the collector fell behind; HEAPGEN_ARENA_MB gives it more room), so their sites are unknown and findings may be incomplete"],
                       rec.result.transcript)

        // info, text and JSON.
        let info = try HeapGenCLI.run(["info", rec.trace])
        XCTAssertStatus(info, 0)
        XCTAssertEqual(row(info.stdoutText, "stacks lost"),
                       "warning: \(count) allocations recorded without a stack: the stack store was full (the collector fell behind; HEAPGEN_ARENA_MB gives it more room), so their sites are unknown and findings may be incomplete")
        let summary = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(summary.uint("end.stacksLost"), lost)

        // The report, text and JSON.
        let text = try HeapGenCLI.run(["report", rec.trace])
        XCTAssertStatus(text, 0)
        XCTAssertTrue(text.stdoutText.contains("  warning: \(count) allocations recorded without a stack: the stack store was full"), text.stdoutText)
        let json = try HeapGenCLI.run(["report", rec.trace, "--format", "json"])
        XCTAssertStatus(json, 0)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        let totals = try XCTUnwrap(report["totals"] as? [String: Any])
        XCTAssertEqual((totals["stacksLost"] as? NSNumber)?.uint64Value, lost)
        XCTAssertTrue((report["notes"] as? [String] ?? []).contains { $0.hasPrefix("Warning: \(count) allocations recorded without a stack") })

        // The gate fails on partial data, with one clear line; the same run stored whole passes.
        let gate = try HeapGenCLI.run(["check", rec.trace, "--fail-on", "abandoned"])
        XCTAssertStatus(gate, 23, "gate on a trace with lost stacks")
        XCTAssertTrue(gate.stderrText.contains("heapgen: gate failed: the trace is incomplete: \(count) allocations recorded without a stack"), gate.stderrText)
        XCTAssertTrue(gate.stderrText.contains("SUMMARY: heapgen: gate failed: \(count) allocations without a stack (incomplete trace)."), gate.stderrText)

        // `heapgen run` gates the same way, after the program ran (its output untouched).
        let runTrace = try TestPaths.freshDirectory("trace") + "/run.trace"
        let run2 = try HeapGenCLI.run(["run", "--trace", runTrace, "--fail-on", "abandoned", "--", exe] + stall,
                                      environment: environment(["HEAPGEN_ARENA_MB": "2"]))
        XCTAssertStatus(run2, 23, "run with lost stacks")
        XCTAssertEqual(run2.stdout.prefix(native.count), native, "the program's output comes first, untouched")
        XCTAssertTrue(run2.stderrText.contains("heapgen: gate failed: the trace is incomplete: "), run2.stderrText)

        let whole = try HeapGenCLI.recording(exe, [String(k)], flags: ["--quiet"])
        XCTAssertStatus(whole.result, 0)
        let passing = try HeapGenCLI.run(["check", whole.trace, "--fail-on", "abandoned"])
        XCTAssertStatus(passing, 0, "the same program with room for its stacks")
        XCTAssertEqual(try readPaths(whole.trace, k: k).end?.stacksLost, 0)
    }

    /// The value of the `label` row of `heapgen info`'s table (label, padding, value).
    private func row(_ table: String, _ label: String) -> String? {
        for line in table.split(separator: "\n") where line.hasPrefix(label + " ") {
            return String(line.dropFirst(label.count).drop { $0 == " " })
        }
        return nil
    }

    /// 1234567 → "1,234,567" (HumanUnits.count's grouping).
    private func formatted(_ n: UInt64) -> String {
        var digits = Array(String(n))
        var i = digits.count - 3
        while i > 0 {
            digits.insert(",", at: i)
            i -= 3
        }
        return String(digits)
    }

    /// deeprec.c: the site allocated 200 calls deep is cut at 128 frames, marked in the trace,
    /// and its finding says so; the shallow one is complete. With HEAPGEN_MAX_FRAMES=256
    /// nothing is cut.
    func testStacksCutAtTheFrameLimitAreMarked() throws {
        let exe = try Fixture.build("deeprec.c")
        let rec = try HeapGenCLI.recording(exe, flags: ["--quiet"])
        XCTAssertStatus(rec.result, 0)
        var stacks: [UInt32: [UInt64]] = [:]
        var truncated = Set<UInt32>()
        var bySize: [UInt64: Set<UInt32>] = [:]
        for record in try HeapGenCLI.records(rec.trace) {
            switch record {
            case let .stack(id, frames): stacks[id] = frames
            case let .stackTruncated(id): truncated.insert(id)
            case let .allocation(_, _, size, stack, _) where size == 48 || size == 40:
                bySize[size, default: []].insert(stack)
            default: break
            }
        }
        let deep = try XCTUnwrap(bySize[48])
        let shallow = try XCTUnwrap(bySize[40])
        XCTAssertEqual(deep.count, 1, "one deep site")
        XCTAssertEqual(shallow.count, 1, "one shallow site")
        XCTAssertEqual(stacks[deep.first!]?.count, 128, "cut at the default limit")
        XCTAssertTrue(truncated.contains(deep.first!), "the deep stack is marked truncated")
        XCTAssertFalse(truncated.contains(shallow.first!), "the shallow stack is complete")

        let info = try HeapGenCLI.run(["info", rec.trace])
        XCTAssertEqual(row(info.stdoutText, "  truncated"), "1 (cut at the frame limit, which HEAPGEN_MAX_FRAMES raises, or where unwinding stopped)")

        let text = try HeapGenCLI.run(["report", rec.trace])
        XCTAssertStatus(text, 0)
        XCTAssertEqual(text.stdoutText.components(separatedBy: "stack truncated at 128 frames").count - 1, 1, text.stdoutText)

        let json = try reportFindings(rec.trace)
        XCTAssertEqual(json.count, 2, "two abandoned sites: \(json)")
        let deepFinding = try XCTUnwrap(json.first { $0.functions.contains("descend") })
        let shallowFinding = try XCTUnwrap(json.first { $0.functions.contains("shallow_keep") })
        XCTAssertEqual(deepFinding.truncatedAt, 128)
        XCTAssertNil(shallowFinding.truncatedAt)

        // A higher limit keeps the whole stack: 200 descend frames, deep_keep, main.
        let full = try HeapGenCLI.recording(exe, flags: ["--quiet"],
                                            environment: environment(["HEAPGEN_MAX_FRAMES": "256"]))
        XCTAssertStatus(full.result, 0)
        var fullDeep: [[UInt64]] = []
        var fullStacks: [UInt32: [UInt64]] = [:]
        var anyTruncated = false
        for record in try HeapGenCLI.records(full.trace) {
            switch record {
            case let .stack(id, frames): fullStacks[id] = frames
            case .stackTruncated: anyTruncated = true
            case let .allocation(_, _, 48, stack, _): fullDeep.append(fullStacks[stack] ?? [])
            default: break
            }
        }
        XCTAssertFalse(anyTruncated)
        XCTAssertEqual(fullDeep.count, 6)
        XCTAssertGreaterThanOrEqual(fullDeep.first?.count ?? 0, 203, "201 descend frames, deep_keep, main")
        XCTAssertNil(try reportFindings(full.trace).first { $0.functions.contains("descend") }?.truncatedAt)
    }

    private func reportFindings(_ trace: String) throws -> [(functions: [String], truncatedAt: Int?)] {
        let r = try HeapGenCLI.run(["report", trace, "--format", "json"])
        XCTAssertStatus(r, 0)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        return (report["findings"] as? [[String: Any]] ?? []).map { f in
            let frames = f["frames"] as? [[String: Any]] ?? []
            return (frames.compactMap { $0["shortFunction"] as? String ?? $0["function"] as? String },
                    (f["stackTruncatedAt"] as? NSNumber)?.intValue)
        }
    }

    /// The collector's node-chain reader on a hand-made arena (node_chains.c compiles
    /// Sources/CHeapGenCollector/segment.c in): valid chains read whole, every malformed one
    /// (cycles, parents out of range or above their child, depths that do not count down,
    /// flags that disagree, a string where a node should be, too deep) reads as 0.
    func testMalformedNodeChainsAreRejected() throws {
        let exe = try Fixture.buildWithCollector("node_chains.c", ["segment.c"])
        let r = try runProcess(exe, [], timeout: 60)
        XCTAssertStatus(r, 0)
        XCTAssertEqual(r.stdoutText, """
            valid 3 0 300 200 100
            valid-inner 2 0 200 100
            buffer-too-small 0 0
            truncated 2 1 222 111
            flags-disagree 0 0
            unknown-flag 0 0
            self-cycle 0 0
            two-cycle 0 0
            parent-above 0 0
            parent-out-of-range 0 0
            depth-skips 0 0
            root-with-parent 0 0
            missing-parent 0 0
            depth-zero 0 0
            string-blob 0 0
            parent-not-node 0 0
            ref-zero 0 0
            ref-past-end 0 0
            ref-far 0 0
            depth-64 64 0 1040 103f 103e 103d
            depth-65 0 0

            """)
    }
}
