// The reference graph a scan takes (`--retention`, `--retention-at`, `--leaks`), with the
// real shim in real child processes (Fixtures/retention.c).

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class RetentionGraphTests: XCTestCase {
    private struct Run {
        var graphs: [ReferenceGraphRecord] = []
        var unreachable: [UInt64] = []
        /// The live set just after each mark, by label.
        var liveAtMark: [String: Set<UInt64>] = [:]
        var printed: [String] = []
    }

    private func record(_ flags: [String], _ arguments: [String] = []) throws -> Run {
        let exe = try Fixture.build("retention.c")
        let rec = try HeapGenCLI.recording(exe, arguments, flags: ["--quiet"] + flags)
        XCTAssertStatus(rec.result, 0)
        var run = Run()
        run.printed = rec.result.stdoutText.split(separator: "\n").map(String.init)
        var live = Set<UInt64>()
        var reader = try TraceReader(path: rec.trace)
        try reader.forEach { record in
            switch record {
            case let .allocation(_, address, _, _, _): live.insert(address)
            case let .free(_, address): live.remove(address)
            case let .reallocUndo(address): live.insert(address)
            case let .mark(label, _, _): run.liveAtMark[label] = live
            case let .referenceGraph(g): run.graphs.append(g)
            case let .unreachable(addresses): run.unreachable += addresses
            default: break
            }
        }
        return run
    }

    /// Addresses the fixture printed: `client C buf B next N` lines and the rest.
    private func hex(_ word: Substring) -> UInt64 {
        word == "(nil)" ? 0 : UInt64(word.dropFirst(2), radix: 16) ?? 0
    }

    private func checkClientList(_ g: ReferenceGraphRecord, _ printed: [String], lostToo: Bool,
                                 file: StaticString = #filePath, line: UInt = #line) {
        let index = Dictionary(uniqueKeysWithValues: g.blocks.enumerated().map { ($1, UInt32($0)) })
        XCTAssertEqual(g.blocks, g.blocks.sorted(), file: file, line: line)
        let edges = Set(g.edges)
        let offsets = printed.first { $0.hasPrefix("offsetof") }!.split(separator: " ")
        let nextOffset = UInt32(offsets[1].split(separator: "=")[1])!
        let bufOffset = UInt32(offsets[2].split(separator: "=")[1])!
        XCTAssertEqual(nextOffset, 24)
        XCTAssertEqual(bufOffset, 32)
        var clients: [UInt64] = []
        for l in printed where l.hasPrefix("client ") {
            let w = l.split(separator: " ")
            let (c, b, n) = (hex(w[1]), hex(w[3]), hex(w[5]))
            clients.append(c)
            guard let ci = index[c], let bi = index[b] else {
                XCTFail("client \(hex(w[1])) or its buffer is not a block of the graph", file: file, line: line)
                continue
            }
            XCTAssertTrue(edges.contains(.init(from: ci, to: bi, offset: bufOffset)), "client -> buf", file: file, line: line)
            if n != 0, let ni = index[n] {
                XCTAssertTrue(edges.contains(.init(from: ci, to: ni, offset: nextOffset)), "client -> next", file: file, line: line)
            }
            // Nothing else comes out of a client (its name and id hold no pointers).
            XCTAssertEqual(g.edges.filter { $0.from == ci }.count, n != 0 ? 2 : 1, file: file, line: line)
        }
        XCTAssertEqual(clients.count, 4, file: file, line: line)
        // The root: g_clients's slot, in the executable's global region.
        let slot = hex(printed.first { $0.hasPrefix("g_clients ") }!.split(separator: " ")[1])
        let roots = g.rootEdges.filter { $0.slot == slot }
        XCTAssertEqual(roots.count, 1, "root edges of g_clients's slot", file: file, line: line)
        if let root = roots.first {
            XCTAssertEqual(root.to, index[clients[0]], file: file, line: line)
            let region = g.roots[Int(root.region)]
            XCTAssertEqual(region.kind, .global, file: file, line: line)
            XCTAssertTrue(region.start <= slot && slot < region.end, file: file, line: line)
            XCTAssertEqual(region.modulePath.map { ($0 as NSString).lastPathComponent }, "retention", file: file, line: line)
            XCTAssertEqual(root.pc, 0)
            XCTAssertNil(root.register)
        }
        XCTAssertTrue(g.roots.contains { $0.kind == .stack && $0.tid != 0 }, "a stack region with its thread", file: file, line: line)
        XCTAssertTrue(g.roots.contains { $0.kind == .registers && $0.tid != 0 }, "the registers", file: file, line: line)
        for e in g.rootEdges where e.register != nil {
            XCTAssertEqual(g.roots[Int(e.region)].kind, .registers, file: file, line: line)
        }
        for e in g.rootEdges where g.roots[Int(e.region)].kind == .stack {
            XCTAssertTrue(g.roots[Int(e.region)].start <= e.slot && e.slot < g.roots[Int(e.region)].end, file: file, line: line)
            XCTAssertNotEqual(e.pc, 0, "a stack slot names its frame's code", file: file, line: line)
        }
        if lostToo {
            // The lost list: unreachable, its edges kept.
            let w = printed.first { $0.hasPrefix("lost ") }!.split(separator: " ")
            let (a, b) = (hex(w[1]), hex(w[2]))
            if let ai = index[a], let bi = index[b] {
                XCTAssertTrue(edges.contains(.init(from: ai, to: bi, offset: nextOffset)), "lost -> next", file: file, line: line)
                XCTAssertEqual(g.edges.filter { $0.from == ai }.count, 2, file: file, line: line)
                XCTAssertEqual(g.edges.filter { $0.from == bi }.count, 1, file: file, line: line)
            } else {
                XCTFail("the lost clients are not blocks of the graph", file: file, line: line)
            }
        }
        // One edge per (from, to).
        XCTAssertEqual(Set(g.edges.map { [$0.from, $0.to] }).count, g.edges.count, file: file, line: line)
    }

    func testRetentionTakesTheGraphAtExitAndJudgesNothing() throws {
        let run = try record(["--retention"])
        XCTAssertEqual(run.graphs.count, 1)
        XCTAssertEqual(run.unreachable, [], "--retention alone writes no leak verdict")
        guard let g = run.graphs.first else { return }
        XCTAssertEqual(g.trigger, .exit)
        XCTAssertGreaterThan(g.bytesRead, 0)
        checkClientList(g, run.printed, lostToo: true)
    }

    func testLeaksTakeTheGraphTooAndUnreachableBlocksKeepTheirEdges() throws {
        let run = try record(["--leaks"])
        XCTAssertEqual(run.graphs.count, 1)
        guard let g = run.graphs.first else { return }
        XCTAssertEqual(g.trigger, .exit)
        let w = run.printed.first { $0.hasPrefix("lost ") }!.split(separator: " ")
        XCTAssertTrue(Set(run.unreachable).isSuperset(of: [hex(w[1]), hex(w[2])]), "\(run.unreachable)")
        checkClientList(g, run.printed, lostToo: true)
    }

    func testRetentionAtTakesTheGraphAtTheMark() throws {
        let run = try record(["--retention-at", "cycle5", "--retention-at", "cycle2"])
        XCTAssertEqual(run.graphs.map(\.trigger), [.mark("cycle2"), .mark("cycle5")])
        XCTAssertEqual(run.unreachable, [])
        for g in run.graphs {
            guard case let .mark(label) = g.trigger else { continue }
            XCTAssertEqual(Set(g.blocks), run.liveAtMark[label], label)
            XCTAssertEqual(g.blocks.count, run.liveAtMark[label]?.count, label)
        }
        if let at5 = run.graphs.last { checkClientList(at5, run.printed, lostToo: true) }
    }

    func testTheProgramsOutputIsTheSameWithRetention() throws {
        let exe = try Fixture.build("retention.c")
        let plain = try runProcess(exe, ["big", "3000"], timeout: 300)
        let rec = try HeapGenCLI.recording(exe, ["big", "3000"], flags: ["--quiet", "--retention", "--retention-at", "x"])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, plain.stdout)
        XCTAssertEqual(rec.result.stderr, plain.stderr)
        XCTAssertEqual(rec.result.status, plain.status)
    }

    func testAGraphOverTheCapIsDroppedWholeAndSaysSo() throws {
        let exe = try Fixture.build("retention.c")
        var env = ProcessInfo.processInfo.environment
        env["HEAPGEN_GRAPH_MAX_EDGES"] = "1"
        let rec = try HeapGenCLI.recording(exe, [], flags: ["--quiet", "--leaks", "--retention-at", "cycle1"], environment: env)
        XCTAssertStatus(rec.result, 0)
        var graphs: [ReferenceGraphRecord] = []
        var unreachable = 0
        var reader = try TraceReader(path: rec.trace)
        try reader.forEach { record in
            if case let .referenceGraph(g) = record { graphs.append(g) }
            if case let .unreachable(a) = record { unreachable += a.count }
        }
        // Both scans (cycle1: 1 edge and a few root edges; exit: 10 edges) go over the cap:
        // no graph at all, rather than a partial one.
        XCTAssertEqual(graphs.map(\.trigger), [], rec.result.transcript)
        XCTAssertEqual(rec.result.stderrLines.filter { $0.contains("was dropped") }.count, 2, rec.result.transcript)
        XCTAssertGreaterThan(unreachable, 0, "the leak verdict does not depend on the graph")
        XCTAssertTrue(rec.result.stderrText.contains("reference graph of process"), rec.result.transcript)
        XCTAssertTrue(rec.result.stderrText.contains("dropped: more than 1 references"), rec.result.transcript)
    }

    func testSwiftClassFieldsAreNamedFromTheMetadata() throws {
        let exe = try Fixture.build("RetentionFixture.swift")
        let rec = try HeapGenCLI.recording(exe, [], flags: ["--quiet", "--retention"])
        XCTAssertStatus(rec.result, 0)
        var types: [String: UInt32] = [:]
        var graph: ReferenceGraphRecord?
        var typeOf: [UInt64: UInt32] = [:]
        var reader = try TraceReader(path: rec.trace)
        try reader.forEach { record in
            switch record {
            case let .type(id, _, name): types[name] = id
            case let .allocation(_, address, _, _, type): typeOf[address] = type
            case let .referenceGraph(g): graph = g
            default: break
            }
        }
        let g = try XCTUnwrap(graph)
        let bus = try XCTUnwrap(types["Fixture.EventBus"]), handler = try XCTUnwrap(types["Fixture.Handler"])
        // What the fixture found in its own objects' memory.
        var printed: [String: UInt32] = [:]
        for l in rec.result.stdoutText.split(separator: "\n") {
            let w = l.split(separator: " ")
            if w.count == 2, let v = UInt32(w[1]) { printed[String(w[0])] = v }
        }
        func named(_ type: UInt32, _ name: String) -> UInt32? { g.fieldNames[type]?.first { $0.name == name }?.offset }
        XCTAssertEqual(named(bus, "last"), printed["EventBus.last"], "\(g.fieldNames)")
        XCTAssertEqual(named(handler, "bus"), printed["Handler.bus"], "\(g.fieldNames)")
        XCTAssertEqual(named(handler, "owner"), printed["Base.owner"], "superclass fields: \(g.fieldNames)")
        XCTAssertEqual(g.fieldNames[bus]?.map(\.name), ["count", "name", "subscribers", "last"])
        XCTAssertEqual(g.fieldNames[handler]?.map(\.name), ["id", "owner", "tag", "bus"])
        XCTAssertEqual(g.fieldNames[bus]?.map(\.offset), g.fieldNames[bus]?.map(\.offset).sorted())
        // The edge EventBus -> its last Handler sits at `last`'s offset.
        let busBlocks = g.blocks.indices.filter { typeOf[g.blocks[$0]] == bus }.map(UInt32.init)
        let lastOffset = try XCTUnwrap(named(bus, "last"))
        XCTAssertTrue(g.edges.contains { busBlocks.contains($0.from) && typeOf[g.blocks[Int($0.to)]] == handler && $0.offset == lastOffset },
                      "an EventBus.last edge")
    }
}
