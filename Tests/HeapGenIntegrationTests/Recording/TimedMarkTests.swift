// `--mark-every` marks follow the program: into the image a launcher exec'd and into
// forked children, not only into the image heapgen started.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class TimedMarkTests: XCTestCase {
    /// `heapgen record --mark-every 100ms -- env HG_PORT=8086 timedforker 600`: env execs the
    /// fixture, which runs 600 ms, forks a child that runs 600 ms, and waits for it. Both the
    /// exec'd image (about 12 ticks in its 1.2 s) and the forked child (about 6) get timer
    /// marks (timing-tolerant bounds), with increasing tick numbers, and the program's output
    /// is unchanged.
    func testTimerMarksFollowExecAndFork() throws {
        let exe = try Fixture.build("timedforker.c")
        let plain = try runProcess("/usr/bin/env", ["HG_PORT=8086", exe, "600"], timeout: 60)
        XCTAssertStatus(plain, 0)
        let rec = try HeapGenCLI.recording("/usr/bin/env", ["HG_PORT=8086", exe, "600"], flags: ["--mark-every", "100ms"])
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, plain.stdout, "the program's output is the same under heapgen")
        XCTAssertEqual(String(decoding: rec.result.stdout, as: UTF8.self), "child done\nparent done, child status 0\n")

        var byOrigin: [ProcessOrigin: [(label: String, origin: MarkOrigin)]] = [:]
        for path in rec.allTraces {
            var origin: ProcessOrigin?
            var marks: [(label: String, origin: MarkOrigin)] = []
            for record in try HeapGenCLI.records(path) {
                switch record {
                case let .process(p): origin = p.origin
                case let .mark(label, _, o): marks.append((label, o))
                default: break
                }
            }
            guard let origin else { return XCTFail("\(path): no process record") }
            // Every image's trace stores its own symbols, the exec'd and the forked one too.
            if origin != .root {
                let stored = try TraceReader(path: path).storedSymbols()
                let names = Set(stored.flatMap { $0.entries.flatMap { $0.frames.compactMap(\.function) } })
                XCTAssertTrue(names.contains("busy"), "\(origin): stored symbols name busy: \(names.sorted().prefix(20))")
            }
            XCTAssertNil(byOrigin[origin], "one trace per origin: \(rec.allTraces)")
            byOrigin[origin] = marks
        }
        XCTAssertEqual(Set(byOrigin.keys), [.root, .exec, .fork], "env, the program it exec'd, its child: \(rec.allTraces)")
        for origin in [ProcessOrigin.exec, .fork] {
            let marks = byOrigin[origin] ?? []
            XCTAssertGreaterThanOrEqual(marks.count, origin == .exec ? 8 : 4, "\(origin): \(marks)")
            XCTAssertLessThanOrEqual(marks.count, origin == .exec ? 30 : 20, "\(origin): \(marks)")   // a loaded machine runs slower
            XCTAssertTrue(marks.allSatisfy { $0.origin == .timer }, "\(origin): \(marks)")
            let ticks = marks.compactMap { m -> Int? in
                guard m.label.hasPrefix("every 100.0 ms #") else { return nil }
                return Int(m.label.dropFirst("every 100.0 ms #".count))
            }
            XCTAssertEqual(ticks.count, marks.count, "\(origin): labels 'every 100.0 ms #N': \(marks)")
            XCTAssertEqual(ticks, ticks.sorted(), "\(origin): ticks in order")
            XCTAssertEqual(Set(ticks).count, ticks.count, "\(origin): no tick twice")
        }
        // The child starts after the parent's first 600 ms: its first tick is a later one.
        let firstExec = byOrigin[.exec]?.first.map(\.label) ?? ""
        let firstFork = byOrigin[.fork]?.first.map(\.label) ?? ""
        XCTAssertNotEqual(firstExec, firstFork, "the child's ticks start when it does")
    }
}
