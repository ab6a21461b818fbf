// Unit tests of the HeapGenReport module: the report model and its JSON, the builder on
// synthetic analyses, and the text renderer.

import Foundation
import HeapGenTestSupport
import HeapGenAnalysis
@testable import HeapGenReport
import HeapGenSymbolication
import HeapGenTrace
import XCTest

/// The module's report type (the integration tests of this target define their own `Report`).
typealias ModelReport = HeapGenReport.Report

final class ReportJSONTests: XCTestCase {
    static func sampleReport() -> ModelReport {
        let frame = ModelReport.Frame(function: "App.Model.init() -> App.Model", shortFunction: "Model.init()",
                                 file: "/src/main.swift", line: 42, column: 9, module: "/app/bin",
                                 address: 0x55d0_c0ff_ee00, inlined: false)
        let unknown = ModelReport.Frame(module: nil, address: 0xffff_ffff_ffff_fff0)
        let finding = ModelReport.Finding(kind: .abandoned, typeName: nil, frames: [frame, unknown], userFrame: 0, cycles: 3,
                                     cyclesWithGrowth: 3, objectsPerCycle: [1, 1, 1, 1], bytesPerCycle: [48, 48, 48, 48],
                                     averageBytesPerCycle: 48, survivingObjects: 3, survivingBytes: 144)
        return ModelReport(
            trace: "/tmp/app.trace",
            program: ModelReport.Program(path: "/app/bin", args: ["bin"], pid: 7, exitStatus: nil, signal: 9),
            options: ModelReport.Options(warmUp: 1, toleratedMisses: 1),
            totals: ModelReport.Totals(allocations: 10, frees: 4),
            cycles: 4, judgedCycles: 3,
            generations: [ModelReport.Generation(index: 0, label: nil, allocations: 1, frees: 0, allocatedBytes: 8,
                                            liveObjects: 1, liveBytes: 8, persistentObjects: 1, persistentBytes: 8)],
            findings: [finding],
            liveAtExit: ModelReport.LiveAtExit(objects: 6, bytes: 200, sites: [ModelReport.Site(typeName: nil, objects: 6, bytes: 200, frames: [frame])]),
            otherTraces: ["/tmp/app.trace.8"], notes: ["a note"])
    }

    func testShapeNullsAndAddresses() throws {
        let json = try JSONReport.render(Self.sampleReport())
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        XCTAssertEqual(Set(object.keys), ["schema", "trace", "program", "options", "totals", "cycles", "judgedCycles",
                                          "generations", "findings", "liveAtExit", "otherTraces", "notes"])
        XCTAssertEqual(object["schema"] as? String, "heapgen-report/1")
        let program = try XCTUnwrap(object["program"] as? [String: Any])
        XCTAssertTrue(program["exitStatus"] is NSNull, "nil is written as null, not left out")
        XCTAssertEqual(program["signal"] as? Int, 9)
        let finding = try XCTUnwrap((object["findings"] as? [[String: Any]])?.first)
        XCTAssertEqual(Set(finding.keys), ["kind", "typeName", "frames", "userFrame", "cycles", "cyclesWithGrowth",
                                           "objectsPerCycle", "bytesPerCycle", "averageBytesPerCycle",
                                           "survivingObjects", "survivingBytes", "inLibraries", "stackTruncatedAt", "scope",
                                           "onsetCycle", "cyclesWithGrowthSinceOnset"])
        XCTAssertTrue(finding["scope"] is NSNull && finding["onsetCycle"] is NSNull, "nil is written as null")
        XCTAssertTrue(finding["typeName"] is NSNull)
        XCTAssertTrue(finding["stackTruncatedAt"] is NSNull, "a whole stack")
        let frames = try XCTUnwrap(finding["frames"] as? [[String: Any]])
        XCTAssertEqual(Set(frames[0].keys), ["function", "shortFunction", "file", "line", "column", "module", "address", "inlined",
                                             "moduleOffset"])
        XCTAssertEqual(frames[0]["address"] as? String, "0x55d0c0ffee00")
        XCTAssertEqual(frames[1]["address"] as? String, "0xfffffffffffffff0")
        XCTAssertTrue(frames[1]["module"] is NSNull)
        let generation = try XCTUnwrap((object["generations"] as? [[String: Any]])?.first)
        XCTAssertTrue(generation["label"] is NSNull)
        let live = try XCTUnwrap(object["liveAtExit"] as? [String: Any])
        XCTAssertEqual(Set(live.keys), ["objects", "bytes", "sites", "startup"])
        XCTAssertEqual(Set(try XCTUnwrap(live["startup"] as? [String: Any]).keys), ["objects", "bytes", "parts"])
        XCTAssertEqual(Set(try XCTUnwrap((live["sites"] as? [[String: Any]])?.first).keys), ["typeName", "objects", "bytes", "frames"])
        // Sorted keys: "cycles" comes before "findings" before "generations".
        let c = try XCTUnwrap(json.range(of: "\"cycles\"")), f = try XCTUnwrap(json.range(of: "\"findings\""))
        XCTAssertLessThan(c.lowerBound, f.lowerBound)
        XCTAssertFalse(json.contains("\\/"), "slashes are not escaped")
    }

    func testRoundTrip() throws {
        let report = Self.sampleReport()
        XCTAssertEqual(try JSONReport.decode(JSONReport.data(report)), report)
    }

    func testAddressParsing() {
        XCTAssertEqual(ModelReport.Frame.parseAddress("0x7f3A"), 0x7f3a)
        XCTAssertNil(ModelReport.Frame.parseAddress("7f3a"))
        XCTAssertNil(ModelReport.Frame.parseAddress("0x"))
        XCTAssertEqual(ModelReport.Frame.formatAddress(0), "0x0")
    }
}

final class ReportBuilderTests: XCTestCase {
    /// A symbolizer that finds nothing: frames keep module and address only.
    let symbolizer = Symbolizer(options: .init(symbolizerPath: "/nonexistent/llvm-symbolizer", allowFallbacks: false))

    static func module(_ path: String, bias: UInt64) -> ModuleRecord {
        ModuleRecord(loadBias: bias, path: path, buildID: [1, 2, 3],
                     segments: [.init(vaddr: 0, memsz: 0x1000, flags: 5)])
    }

    /// 0x10000: the app; 0x20000: libswiftCore, later replaced at the same place by a plugin.
    func analysis(cycles: Int = 6, grow: Bool = true) -> Analysis {
        var a = GenerationAnalyzer(options: AnalysisOptions(warmUp: 1, toleratedMisses: 1))
        a.consume(.process(ProcessRecord(pid: 99, ppid: 1, origin: .root, executable: "/app/bin", arguments: ["bin", "-x"],
                                         startUnixNanoseconds: 0)))
        a.consume(.moduleLoad(Self.module("/app/bin", bias: 0x10000)))
        a.consume(.moduleLoad(Self.module("/opt/swift/usr/lib/swift/linux/libswiftCore.so", bias: 0x20000)))
        a.consume(.stack(id: 1, frames: [0x20100, 0x10200, 0x10300]))     // runtime, then app
        a.consume(.type(id: 1, metadata: 0x5000, name: "App.Model"))
        a.consume(.stack(id: 2, frames: [0x10400]))                        // cache
        var address: UInt64 = 0x100000
        func next() -> UInt64 { address += 0x100; return address }
        a.consume(.mark(label: "start", timeNanoseconds: 1, origin: .program))
        for cycle in 1...cycles {
            if grow { a.consume(.allocation(function: .malloc, address: next(), size: 48, stack: 1, type: 1)) }
            if cycle == 1 { a.consume(.allocation(function: .malloc, address: next(), size: 4096, stack: 2, type: 0)) }
            a.consume(.mark(label: "cycle \(cycle)", timeNanoseconds: UInt64(cycle + 1), origin: .program))
        }
        // The library is replaced by another at the same address: stack 3 belongs to the new one.
        a.consume(.moduleUnload(loadBias: 0x20000))
        a.consume(.moduleLoad(Self.module("/app/plugins/libplugin.so", bias: 0x20000)))
        a.consume(.stack(id: 3, frames: [0x20100]))
        for size in [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120] as [UInt64] {
            a.consume(.stack(id: UInt32(100 + size), frames: [0x10000 + size]))
            a.consume(.allocation(function: .malloc, address: next(), size: size, stack: UInt32(100 + size), type: 0))
        }
        a.consume(.allocation(function: .malloc, address: next(), size: 5000, stack: 3, type: 0))
        a.consume(.end(EndRecord(reason: .exited, status: 3)))
        return a.finish()
    }

    func testFindingsFramesModulesAndUserFrame() throws {
        let report = ReportBuilder(symbolizer: symbolizer).build(analysis(), trace: "/t/app.trace", otherTraces: ["/t/app.trace.5"])
        XCTAssertEqual(report.schema, ModelReport.schemaVersion)
        XCTAssertEqual(report.trace, "/t/app.trace")
        XCTAssertEqual(report.otherTraces, ["/t/app.trace.5"])
        XCTAssertEqual(report.program, ModelReport.Program(path: "/app/bin", args: ["bin", "-x"], pid: 99, exitStatus: 3, signal: nil, ending: .exited))
        XCTAssertEqual(report.options, ModelReport.Options(warmUp: 1, toleratedMisses: 1))
        XCTAssertEqual(report.cycles, 6)
        XCTAssertEqual(report.judgedCycles, 5)

        let abandoned = try XCTUnwrap(report.findings.first)
        XCTAssertEqual(abandoned.kind, .abandoned)
        XCTAssertEqual(abandoned.typeName, "App.Model")
        XCTAssertEqual(abandoned.frames.map(\.address), [0x20100, 0x10200, 0x10300])
        XCTAssertEqual(abandoned.frames.map(\.module),
                       ["/opt/swift/usr/lib/swift/linux/libswiftCore.so", "/app/bin", "/app/bin"])
        XCTAssertEqual(abandoned.userFrame, 1, "the runtime frame is skipped")
        XCTAssertEqual(abandoned.averageBytesPerCycle, 48)
        XCTAssertEqual(abandoned.objectsPerCycle, [1, 1, 1, 1, 1, 1])
        XCTAssertEqual(report.findings.last?.kind, .cache)
        XCTAssertTrue(report.notes.contains { $0.contains("No symbolizer") }, "\(report.notes)")
    }

    func testLiveAtExitTopTenAndModuleMapOfTheTime() throws {
        let report = ReportBuilder(symbolizer: symbolizer).build(analysis(), trace: "/t/app.trace")
        let sites = report.liveAtExit.sites
        XCTAssertEqual(sites.count, ReportBuilder.maxLiveSites)
        XCTAssertEqual(sites.map(\.bytes), sites.map(\.bytes).sorted(by: >))
        XCTAssertEqual(sites.first?.bytes, 5000)
        // Same address as the runtime frame of stack 1, but defined after the library was replaced.
        XCTAssertEqual(sites.first?.frames.first?.module, "/app/plugins/libplugin.so")
        XCTAssertEqual(sites[1].bytes, 4096)
        XCTAssertEqual(report.liveAtExit.objects, report.totals.liveAtExitObjects)
        XCTAssertEqual(report.liveAtExit.bytes, report.totals.liveAtExitBytes)
    }

    func testCleanProgramText() {
        let report = ReportBuilder(symbolizer: symbolizer).build(analysis(grow: false), trace: "/t/app.trace")
        XCTAssertTrue(report.findings(.abandoned).isEmpty)
        let text = TextReport.render(report)
        XCTAssertTrue(text.contains("No growth across 5 cycles."), text)
        XCTAssertTrue(text.contains("Caches (filled, then flat — not failures)"), text)
        XCTAssertFalse(text.contains("Abandoned"), text)
        XCTAssertFalse(text.contains("\u{1B}["), "no escapes without colour")
    }

    /// A hash table that doubles frees its old block for a larger one: its cache line has
    /// bytes and no more blocks (it read "+786.4 kB in 0 objects" on redis's dictionary).
    func testACacheOfLargerBlocksSaysSo() {
        let frames = [ModelReport.Frame(function: "dict_expand", file: "/src/dict.c", line: 9, column: 3, module: "/app",
                                        address: 0x40)]
        let table = ModelReport.Finding(kind: .cache, typeName: nil, frames: frames, userFrame: 0, cycles: 4,
                                        cyclesWithGrowth: 1, objectsPerCycle: [1, 0, 0, 0, 0],
                                        bytesPerCycle: [4096, 4096, 0, 0, 0], averageBytesPerCycle: 0,
                                        survivingObjects: 0, survivingBytes: 4096)
        let lines = TextReport.cacheLines([table], TextStyle(enabled: false))
        XCTAssertEqual(lines, ["  - dict_expand (src/dict.c:9)  +8.2 kB in 1 object, filled by cycle 2"])
        var grown = table
        grown.objectsSeries = CycleSeries([0, 0, 0, 0, 0])
        XCTAssertEqual(TextReport.cacheLines([grown], TextStyle(enabled: false)),
                       ["  - dict_expand (src/dict.c:9)  +8.2 kB in larger blocks, no more of them, filled by cycle 2"])
    }
}

/// Leaks found at exit in a run without marks: no growth to show.
final class LeakedTextTests: XCTestCase {
    static func leak(objects: UInt64, bytes: UInt64, retained: UInt64, address: UInt64) -> ModelReport.Finding {
        var f = ModelReport.Finding(kind: .leaked, typeName: nil, frames: SourceSitesTests.frames(address: address), userFrame: 0,
                                    cycles: 0, cyclesWithGrowth: 0, objectsPerCycle: [0], bytesPerCycle: [0],
                                    averageBytesPerCycle: 0, survivingObjects: 0, survivingBytes: 0)
        f.leakedBlocks = objects
        f.leakedBytes = bytes
        f.retainedBytes = retained
        return f
    }

    /// A stripped binary's sites (no function names): each finding is titled by its own
    /// `module+0xOFFSET`, as the gate names it. Every sshd finding read "blocks from an
    /// unknown site".
    func testAFindingInAStrippedBinaryIsTitledByItsModuleAndOffset() {
        var f = Self.leak(objects: 1, bytes: 816, retained: 816, address: 0x5599_0000_9ef7)
        f.frames = [ModelReport.Frame(module: "/usr/sbin/sshd", address: 0x5599_0000_9ef7, moduleOffset: 0x99ef7),
                    ModelReport.Frame(module: "/usr/sbin/sshd", address: 0x5599_0001_0b26, moduleOffset: 0x10b26)]
        XCTAssertEqual(TextReport.title(f), "blocks from sshd+0x99ef7")
        f.frames = []
        XCTAssertEqual(TextReport.title(f), "blocks from an unknown site")
    }

    /// It read "0 objects / 0 B per cycle" and "per cycle:    grew in 0 of 0 judged cycles";
    /// two sites shown as one retained the first one's bytes only.
    func testALeakWithoutCyclesShowsWhatLeakedAndTheGroupsSums() {
        let lines = TextReport.growthFinding(TextReport.summed(Self.leak(objects: 1, bytes: 100, retained: 100, address: 1),
                                                               Self.leak(objects: 99, bytes: 9_900, retained: 9_900, address: 2)),
                                             number: 1, sites: 2, TextStyle(enabled: false))
        XCTAssertEqual(lines[0], "  1. blocks from leak_session  (2 sites whose stacks differ only outside the frames shown)")
        XCTAssertEqual(lines[1], "     leaked: 100 blocks, 10.0 kB")
        XCTAssertFalse(lines.contains { $0.contains("per cycle") }, "\(lines)")
        XCTAssertTrue(lines.contains("     retains 10.0 kB"), "\(lines)")
        // With cycles, the growth line is as before.
        var grown = Self.leak(objects: 1, bytes: 100, retained: 100, address: 1)
        grown.cycles = 2
        grown.objectsSeries = CycleSeries([0, 1, 1])
        XCTAssertTrue(TextReport.growthFinding(grown, number: 1, TextStyle(enabled: false))[1].hasPrefix("     per cycle: "))
    }

    /// The line for the leaks past the tenth said "0 B per cycle together" (probe of heaptrack's
    /// callgraph test under --leaks): it says what they leaked.
    func testTheLineForTheRestOfTheLeaksSaysWhatTheyLeaked() {
        let leaks = (1...13).map { i -> ModelReport.Finding in
            var f = Self.leak(objects: 1, bytes: UInt64(10 * i), retained: 0, address: UInt64(i) << 12)
            f.frames[0].function = "leak_\(i)"
            return f
        }
        let lines = TextReport.growthFindings(leaks, TextStyle(enabled: false))
        XCTAssertEqual(lines.last, "  … 3 more sites, 360 B leaked together (--format json lists every site)", "\(lines)")
    }
}

final class SourceSitesTests: XCTestCase {
    static func finding(_ kind: ModelReport.Finding.Kind, objects: [Int], column: Int = 5, address: UInt64 = 1,
                        function: String? = "leak_session") -> ModelReport.Finding {
        let frames = [ModelReport.Frame(function: function, file: "/src/a.c", line: 32, column: column, module: "/app", address: address),
                      ModelReport.Frame(function: "main", file: "/src/a.c", line: 50, column: 7, module: "/app", address: address + 100)]
        return ModelReport.Finding(kind: kind, typeName: nil, frames: frames, userFrame: 0, cycles: objects.count - 1,
                                   cyclesWithGrowth: objects.dropFirst().filter { $0 > 0 }.count, objectsPerCycle: objects,
                                   bytesPerCycle: objects.map { $0 * 64 }, averageBytesPerCycle: 0,
                                   survivingObjects: UInt64(objects.dropFirst().reduce(0, +)), survivingBytes: 0)
    }

    /// A site that missed a cycle: "missing at most 1" (it read "grew in every judged cycle
    /// but at most 1", probe of Perl scripts).
    func testGrowthClaimNamesTheMissedCycles() {
        XCTAssertEqual(TextReport.growthClaim([Self.finding(.abandoned, objects: [1, 1, 1, 1, 1])]), "grew in every judged cycle")
        XCTAssertEqual(TextReport.growthClaim([Self.finding(.abandoned, objects: [1, 1, 0, 1, 1])]),
                       "grew in every judged cycle, missing at most 1")
    }

    /// Symbolicated frames of a stack through `leak_session` (line 32, `column`) called from main.
    static func frames(address: UInt64, column: Int = 5, function: String? = "leak_session") -> [ModelReport.Frame] {
        finding(.abandoned, objects: [1], column: column, address: address, function: function).frames
    }

    /// A Swift task's stack, resumed by one worker path or another: one source path up to
    /// the executor's job entry, whatever lies outside it. Without that entry, the frames
    /// outside still count.
    func testPathKeyEndsAtTheExecutorsJobEntry() {
        /// Frames of `names`, innermost first; the first `own` in the program's source.
        func stack(_ names: [String], own: Int) -> [ModelReport.Frame] {
            names.enumerated().map { i, name in
                ModelReport.Frame(function: name, file: i < own ? "/src/main.swift" : nil, line: i < own ? 10 + i : nil,
                                  column: nil, module: i < own ? "/app" : "/lib/libswift_Concurrency.so",
                                  address: UInt64(0x100 * (i + 1)))
            }
        }
        let task = ["Registry.open(_:)", "closure #1 in main", "swift::runJobInEstablishedExecutorContext(swift::Job*)"]
        let viaLane = stack(task + ["swift_job_run", "_dispatch_lane_serial_drain", "start_thread"], own: 2)
        let viaPop = stack(task + ["swift_job_run", "_dispatch_continuation_pop", "_dispatch_worker_thread2", "start_thread"],
                           own: 2)
        XCTAssertEqual(SourceSites.pathKey(viaLane), SourceSites.pathKey(viaPop))
        XCTAssertEqual(SourceSites.pathKey(viaLane)?.count, 3)
        let plain = Array(viaLane.prefix(2))
        XCTAssertNotEqual(SourceSites.pathKey(plain + [viaLane[4]]), SourceSites.pathKey(plain + [viaPop[4]]))
        // A block run by DispatchQueue.sync runs for its caller: its callers still count.
        func synced(from caller: String) -> [ModelReport.Frame] {
            stack(["closure #1 in work", "_dispatch_client_callout", "_dispatch_sync_invoke_and_complete", caller, "main"],
                  own: 0)
        }
        XCTAssertNotEqual(SourceSites.pathKey(synced(from: "fromA")), SourceSites.pathKey(synced(from: "fromB")))
        XCTAssertEqual(SourceSites.pathKey(synced(from: "fromA"))?.count, 5)
    }

    /// Node: one leaking JavaScript function allocated through two stacks, its interpreted
    /// calls' (through more of V8's builtins, the walk ending in generated code) and its
    /// optimized calls'; one site, ended at the innermost builtin, as a job entry.
    func testPathKeyEndsAtV8sBuiltins() {
        func stack(_ names: [String]) -> [ModelReport.Frame] {
            names.enumerated().map { i, name in
                ModelReport.Frame(function: name, module: "/usr/bin/node", address: UInt64(0x100 * (i + 1)))
            }
        }
        let runtime = ["node::NodeArrayBufferAllocator::Allocate(unsigned long)",
                       "v8::internal::Builtin_ArrayBufferConstructor(int, unsigned long*, v8::internal::Isolate*)",
                       "Builtins_CEntry_Return1_ArgvOnStack_BuiltinExit"]
        let interpreted = stack(runtime + ["Builtins_JSBuiltinsConstructStub", "Builtins_CreateTypedArray",
                                           "Builtins_TypedArrayConstructor"])
        let optimized = stack(runtime)
        XCTAssertEqual(SourceSites.pathKey(interpreted), SourceSites.pathKey(optimized))
        XCTAssertEqual(SourceSites.pathKey(interpreted)?.count, 3)
    }

    /// gcc peels the first iteration: stack 1 allocates in cycle 1 only (alone a cache), stack 2
    /// from cycle 2 on (alone abandoned, missing cycle 1). Their frames are one source path, so
    /// the report judges them as one site; stack 3 (another column) and stacks without function
    /// names stay apart.
    func testSitesOfOneSourcePathAreJudgedAsOne() throws {
        var a = GenerationAnalyzer()
        for id: UInt32 in 1...6 { a.consume(.stack(id: id, frames: [0x1000 * UInt64(id)])) }
        var address: UInt64 = 0x100000
        func alloc(_ stack: UInt32, _ size: UInt64 = 64) {
            address += 0x100
            a.consume(.allocation(function: .malloc, address: address, size: size, stack: stack, type: 0))
        }
        a.consume(.mark(label: "start", timeNanoseconds: 1, origin: .program))
        for cycle in 1...5 {
            for _ in 0..<3 { alloc(cycle == 1 ? 1 : 2) }
            alloc(3, 8)
            alloc(cycle == 1 ? 4 : 5, 16)
            if cycle == 1 { alloc(6, 32) }
            a.consume(.mark(label: "cycle", timeNanoseconds: UInt64(cycle + 1), origin: .program))
        }
        let analysis = a.finish()
        XCTAssertEqual(analysis.findings.count, 6, "\(analysis.findings)")

        let frames: [UInt32: [ModelReport.Frame]] = [
            1: Self.frames(address: 0x1000), 2: Self.frames(address: 0x2000), 3: Self.frames(address: 0x3000, column: 9),
            4: Self.frames(address: 0x4000, function: nil), 5: Self.frames(address: 0x5000, function: nil),
        ]   // stack 6: not symbolicated, stays alone
        let findings = ReportBuilder.findings(of: analysis, frames: frames)
        XCTAssertEqual(findings.map(\.kind), [.abandoned, .abandoned, .abandoned, .cache, .cache], "\(findings)")
        let leak = findings[0]
        XCTAssertEqual(leak.frames.first?.address, 0x2000, "frames of the copy with the survivors")
        XCTAssertEqual(leak.objectsPerCycle, [3, 3, 3, 3, 3])
        XCTAssertEqual(leak.bytesPerCycle, [192, 192, 192, 192, 192])
        XCTAssertEqual(leak.cyclesWithGrowth, 4)
        XCTAssertEqual(leak.averageBytesPerCycle, 192)
        XCTAssertEqual(leak.survivingObjects, 12)
        XCTAssertEqual(leak.userFrame, 0)
        XCTAssertEqual(findings[1].frames.first?.address, 0x5000, "no function names: no merge")
        XCTAssertEqual(findings[1].objectsPerCycle, [0, 1, 1, 1, 1])
        XCTAssertEqual(findings[2].frames.first?.address, 0x3000, "another column")
        XCTAssertEqual(findings[3].frames.first?.address, 0x4000)
        XCTAssertEqual(findings[4].frames, [], "no frames: alone")
        XCTAssertEqual(findings[4].objectsPerCycle, [1, 0, 0, 0, 0])
    }

    func testSourcePathKeys() {
        let f = Self.frames(address: 1), g = Self.frames(address: 2)
        XCTAssertEqual(SourceSites.pathKey(f), SourceSites.pathKey(g))
        XCTAssertNotEqual(SourceSites.pathKey(f), SourceSites.pathKey(Self.frames(address: 1, column: 9)))
        XCTAssertNotEqual(SourceSites.pathKey(Self.frames(address: 1, function: nil)),
                          SourceSites.pathKey(Self.frames(address: 2, function: nil)))
        XCTAssertNil(SourceSites.pathKey([]))
        let named = SourceSites.Key(path: 0, typeID: 1, typeName: "App.Model")
        XCTAssertEqual(named, SourceSites.Key(path: 0, typeID: 2, typeName: "App.Model"), "one name, one type")
        XCTAssertNotEqual(SourceSites.Key(path: 0, typeID: 1, typeName: nil), SourceSites.Key(path: 0, typeID: 2, typeName: nil))
        XCTAssertNotEqual(named, SourceSites.Key(path: 1, typeID: 1, typeName: "App.Model"))
    }

    func testLiveSitesMergeAndSort() {
        let f = SourceSitesTests.finding(.cache, objects: [1]).frames
        let g = SourceSitesTests.finding(.cache, objects: [1], column: 1).frames
        let merged = SourceSites.merge([ModelReport.Site(typeName: nil, objects: 1, bytes: 10, frames: f),
                                        ModelReport.Site(typeName: nil, objects: 1, bytes: 15, frames: g),
                                        ModelReport.Site(typeName: nil, objects: 2, bytes: 10, frames: f)])
        XCTAssertEqual(merged.map(\.bytes), [20, 15])
        XCTAssertEqual(merged.map(\.objects), [3, 1])
    }
}

final class TextReportTests: XCTestCase {
    func testSectionsAndSummaryLine() {
        var report = ReportJSONTests.sampleReport()
        report.totals.producerWaits = 3
        report.totals.producerWaitNanoseconds = 1_500_000
        report.totals.lostEvents = 2
        report.liveAtExit = ModelReport.LiveAtExit(objects: 34, bytes: 4096, sites: [])
        let text = TextReport.render(report)
        XCTAssertTrue(text.contains("heapgen: bin (pid 7) killed by signal 9 (SIGKILL)"), text)
        XCTAssertTrue(text.contains("waited 3 times for heapgen, 1.5 ms"), text)
        XCTAssertTrue(text.contains("2 events lost"), text)
        XCTAssertTrue(text.contains("Abandoned memory: 1 site grew in every judged cycle"), text)
        XCTAssertTrue(text.contains("blocks from Model.init()  +1 object / +48 B per cycle"), text)
        XCTAssertTrue(text.contains("per cycle: 1 | 1 1 1   grew in 3 of 3 judged cycles   surviving: 3 objects, 144 B"), text)
        XCTAssertTrue(text.contains("at Model.init() (src/main.swift:42)"), text)
        XCTAssertTrue(text.contains("SUMMARY: heapgen: 4,096 bytes live at exit in 34 allocations."), text)
        XCTAssertTrue(text.contains("  - a note"), text)
        let colored = TextReport.render(report, color: true)
        XCTAssertTrue(colored.contains("\u{1B}[1;31m"), "abandoned heading in red")
    }

    func testLongGenerationTableIsElided() {
        var report = ReportJSONTests.sampleReport()
        report.generations = (0...40).map {
            ModelReport.Generation(index: $0, label: "cycle \($0)", allocations: 1, frees: 1, allocatedBytes: 1, liveObjects: 1,
                              liveBytes: 1, persistentObjects: 0, persistentBytes: 0)
        }
        let text = TextReport.render(report)
        XCTAssertTrue(text.contains("cycle 7 "), text)
        XCTAssertFalse(text.contains("cycle 20 "), text)
        XCTAssertTrue(text.contains("cycle 40"), text)
        XCTAssertTrue(text.contains("26 more"), text)
    }

    /// The timer's labels past mark 99 were all `every 100.0 ms #1…` (probe of make -j2): a
    /// long label keeps its short last word.
    func testALongLabelKeepsItsLastWord() {
        let report = ReportJSONTests.sampleReport()
        func label(_ text: String) -> String {
            TextReport.generationLabel(ModelReport.Generation(index: 1, label: text, allocations: 0, frees: 0, allocatedBytes: 0,
                                                              liveObjects: 0, liveBytes: 0, persistentObjects: 0,
                                                              persistentBytes: 0), report)
        }
        XCTAssertEqual(label("every 100.0 ms #125"), "every 100.0… #125")
        XCTAssertEqual(label("every 100.0 ms #12"), "every 100.0 ms #12")
        XCTAssertEqual(label("a very long label without a short end word"), "a very long… word")
        XCTAssertEqual(label("request-handler-iteration-number-7"), "request-handler-i…")
    }

    func testSeriesElisionAndWarmUpBar() {
        XCTAssertEqual(TextReport.series(["1", "2", "3"], warmUp: 1), "1 | 2 3")
        XCTAssertEqual(TextReport.series(["1", "2", "3"], warmUp: 0), "1 2 3")
        let long = TextReport.series((1...30).map(String.init), warmUp: 1)
        XCTAssertTrue(long.hasPrefix("1 | 2 3"), long)
        XCTAssertTrue(long.contains(" … "), long)
        XCTAssertTrue(long.hasSuffix("29 30"), long)
    }

    func testDisplayNames() {
        XCTAssertEqual(TextReport.displayFunction("lookup.isra.0"), "lookup")
        XCTAssertEqual(TextReport.displayFunction("f.constprop.0.cold"), "f")
        XCTAssertEqual(TextReport.displayFunction("closure #2 in "), "closure #2 in top-level code")
        XCTAssertEqual(TextReport.displayFunction("ProfileViewModel.init(name:)"), "ProfileViewModel.init(name:)")
        XCTAssertEqual(TextReport.displayFunction("ImageCache.shared.unsafeMutableAddressor"), "ImageCache.shared.unsafeMutableAddressor")
    }

    func testColorDecision() {
        XCTAssertFalse(TextStyle.shouldColor(fileDescriptor: -1, environment: [:]), "not a terminal")
        XCTAssertFalse(TextStyle.shouldColor(fileDescriptor: 1, environment: ["NO_COLOR": "1"]))
    }
}

final class ProgramNameTests: XCTestCase {
    private func name(_ path: String, _ args: [String]) -> String {
        ModelReport.Program(path: path, args: args, pid: 1, exitStatus: 0, signal: nil).name
    }

    func testArgvZeroNamesTheProgramEvenThroughASymbolicLink() {
        XCTAssertEqual(name("/usr/bin/redis-check-rdb", ["redis-server", "--port", "0"]), "redis-server")
        XCTAssertEqual(name("/opt/My App/bin/app", ["/opt/My App/bin/app"]), "app", "a path with a space is still a path")
        XCTAssertEqual(name("/usr/bin/tool", []), "tool")
        XCTAssertEqual(name("", []), "program")
    }

    /// Servers write their title over argv, as one string: before, nginx's workers were
    /// named "nginx.conf -g daemon off;" (the last component of that whole string).
    func testARewrittenTitleIsNamedByItsFirstWord() {
        XCTAssertEqual(name("/usr/sbin/nginx", ["nginx: master process nginx -c /tmp/ng/nginx.conf -g daemon off;"]), "nginx")
        XCTAssertEqual(name("/usr/bin/redis-check-rdb", ["redis-server *:6379"]), "redis-server")
        XCTAssertEqual(name("/usr/lib/postgresql/15/bin/postgres", ["postgres: checkpointer "]), "postgres")
    }

    /// Chromium starts its utility processes as /proc/self/exe: they were named "exe".
    func testAProgramStartedAsProcSelfExeIsNamedByItsExecutable() {
        XCTAssertEqual(name("/usr/lib/chromium/chromium", ["/proc/self/exe", "--type=utility"]), "chromium")
    }
}

final class UnnamedFrameTests: XCTestCase {
    /// A stripped binary's frame: its module and offset, the same in every run and what
    /// addr2line takes, not the run's address (`0x5614dcaff90e (nginx)` before).
    func testAFrameWithoutAFunctionIsShownAsModulePlusOffset() {
        let frame = ModelReport.Frame(module: "/usr/sbin/nginx", address: 0x5614_dcaf_f90e, moduleOffset: 0x4b90e)
        XCTAssertEqual(TextReport.frameText(frame, TextStyle(enabled: false)), "nginx+0x4b90e")
        XCTAssertEqual(ModelReport.Frame(module: nil, address: 0x10).moduleAndOffset, nil)
        let named = ModelReport.Frame(function: "ngx_alloc", module: "/usr/sbin/nginx", address: 0x5614_dcaf_f90e, moduleOffset: 0x4b90e)
        XCTAssertEqual(TextReport.frameText(named, TextStyle(enabled: false)), "ngx_alloc (nginx)")
    }

    /// Reports written before `moduleOffset` existed still read; a bad one does not.
    func testModuleOffsetIsOptionalInJSONButMustBeAnAddress() throws {
        let old = #"{"function":null,"shortFunction":null,"file":null,"line":null,"column":null,"module":"/bin/x","address":"0x10","inlined":false}"#
        let frame = try JSONDecoder().decode(ModelReport.Frame.self, from: Data(old.utf8))
        XCTAssertNil(frame.moduleOffset)
        let bad = old.replacingOccurrences(of: #""inlined":false"#, with: #""inlined":false,"moduleOffset":"16""#)
        XCTAssertThrowsError(try JSONDecoder().decode(ModelReport.Frame.self, from: Data(bad.utf8)))
        let now = ModelReport.Frame(module: "/bin/x", address: 0x7f00_0000_0010, moduleOffset: 0x10)
        XCTAssertEqual(try JSONDecoder().decode(ModelReport.Frame.self, from: JSONEncoder().encode(now)), now)
    }
}
