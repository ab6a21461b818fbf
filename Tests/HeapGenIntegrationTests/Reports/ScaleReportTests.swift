// Many sites × many marks (issue 7 item 10): report, check, diff and export of a valid
// trace with 100,000 stacks and 10,000 marks (and one of 16,645 sites × 20,000 marks)
// under a 2 GiB address-space limit, with exact numbers and a peak-memory bound.
//
// The traces are written here with the project's TraceWriter. Each site allocates
// around one mark (so its live curve changes at one or two marks out of thousands), a
// quarter of them free their block three cycles later, and a few sites allocate in
// every cycle (abandoned findings whose per-cycle rows are dense). Memory of the
// analysis must grow with sites + marks, never with sites × marks.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

/// `1234567` → `"1,234,567"` (as heapgen prints counts).
private func grouped(_ n: Int) -> String {
    let digits = String(n)
    var out = ""
    for (i, ch) in digits.enumerated() {
        if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(ch)
    }
    return out
}

final class ScaleReportTests: XCTestCase {
    /// The address-space limit every command runs under.
    static let limit: UInt64 = 2 << 30
    /// Peak resident memory any command may reach (well under the limit; the debug build
    /// measured at most 560 MiB, for the JSON diff that lists all 100,000 sites).
    static let maxRSSKilobytes = 768 * 1024

    /// The shape of a synthetic trace.
    struct Shape {
        var stacks: Int
        var marks: Int
        /// Sites allocating one 32-byte block in every cycle.
        var everyCycle = 4
        /// True: three quarters of the one-shot blocks stay (those of the first half of the
        /// cycles are caches: tens of thousands of findings). False: the blocks of the first
        /// half are freed three cycles later (no cache; findings are the every-cycle sites).
        var manyCaches: Bool

        /// Size of the block of one-shot stack `i` (1-based).
        func size(_ i: Int) -> UInt64 { UInt64(16 + i % 64) }
        /// Cycle (0 = setup, before mark 0) in which one-shot stack `i` allocates.
        func cycle(_ i: Int) -> Int { (i - 1) * marks / stacks }
        /// One-shot stacks whose block is freed three cycles later (if the trace goes on).
        func freed(_ i: Int) -> Bool {
            guard cycle(i) + 3 < marks else { return false }
            return manyCaches ? i % 4 == 0 : cycle(i) <= marks / 2 + 1
        }

        var oneShotStacks: ClosedRange<Int> { 1...stacks }
        var liveAtExitObjects: Int {
            oneShotStacks.filter { !freed($0) }.count + everyCycle * marks
        }
        var liveAtExitBytes: UInt64 {
            oneShotStacks.filter { !freed($0) }.reduce(0) { $0 + size($1) } + UInt64(everyCycle * marks * 32)
        }
        var allocations: Int { stacks + everyCycle * marks }
        var frees: Int { oneShotStacks.filter(freed).count }
    }

    /// Writes the trace of `shape` with TraceWriter.
    static func writeTrace(_ shape: Shape, to path: String) throws {
        let writer = try TraceWriter(path: path, process: ProcessRecord(
            pid: 4242, ppid: 1, origin: .root, executable: "/usr/bin/scale", arguments: ["scale"],
            startUnixNanoseconds: 1_700_000_000_000_000_000))
        var time: UInt64 = 1_000
        var address: UInt64 = 0x1000_0000
        var byCycle = [[Int]](repeating: [], count: shape.marks + 1)
        for i in shape.oneShotStacks { byCycle[shape.cycle(i)].append(i) }
        var freeAt = [[UInt64]](repeating: [], count: shape.marks + 1)
        // Stack ids: one-shot stacks 1…stacks, every-cycle stacks after them.
        let firstEvery = shape.stacks + 1
        for k in 0..<shape.everyCycle {
            let id = UInt32(firstEvery + k)
            writer.defineStack(id: id, frames: [0x50_0000 + UInt64(k) * 0x40, 0x40_2000, 0x40_3000])
        }
        for c in 0...shape.marks {
            for a in freeAt[c] { writer.appendFree(.free, address: a) }
            for i in byCycle[c] {
                writer.defineStack(id: UInt32(i), frames: [0x1000_0000 + UInt64(i) * 0x10, 0x40_2000, 0x40_3000])
                writer.appendAllocation(.malloc, address: address, size: shape.size(i), stack: UInt32(i), type: 0)
                if shape.freed(i) { freeAt[c + 3].append(address) }
                address += 0x80
            }
            if c < shape.marks {
                for k in 0..<shape.everyCycle {
                    writer.appendAllocation(.malloc, address: address, size: 32, stack: UInt32(firstEvery + k), type: 0)
                    address += 0x80
                }
                time += 1_000_000
                writer.mark(label: "cycle", timeNanoseconds: time, origin: .program)
            }
        }
        try writer.finish(EndRecord(reason: .exited, status: 0))
    }

    struct Measured {
        var result: ProcessResult
        var status: Int32
        var maxRSSKilobytes: Int
        var seconds: Double
    }

    /// `heapgen ARGS` under the address-space limit, with its peak RSS.
    func heapgenCapped(_ arguments: [String], in dir: String) throws -> Measured {
        let memcap = try ReportFixture.c("memcap.c")
        let resultFile = dir + "/memcap-\(UUID().uuidString)"
        let result = try runProcess(memcap, ["\(Self.limit)", resultFile, try TestPaths.heapgen()] + arguments,
                                    timeout: 900)
        XCTAssertEqual(result.status, 0, result.transcript)
        let fields = try String(contentsOfFile: resultFile, encoding: .utf8).split(separator: " ")
        guard fields.count == 6, let status = Int32(fields[1]), let rss = Int(fields[3]),
              let seconds = Double(fields[5].trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TestSupportError("memcap wrote \(fields)")
        }
        print("scale: heapgen \(arguments.dropLast(arguments.count - 1).joined()) \(arguments.dropFirst(2).joined(separator: " ")): exit \(status), peak RSS \(rss / 1024) MiB, \(String(format: "%.2f", seconds)) s")
        return Measured(result: result, status: status, maxRSSKilobytes: rss, seconds: seconds)
    }

    func assertFits(_ m: Measured, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertLessThan(m.maxRSSKilobytes, Self.maxRSSKilobytes, "\(what): peak RSS \(m.maxRSSKilobytes) kB",
                          file: file, line: line)
        XCTAssertFalse(m.result.stderrText.contains("Fatal error"), "\(what):\n\(m.result.transcript)",
                       file: file, line: line)
    }

    func runShape(_ shape: Shape) throws {
        let dir = try TestPaths.freshDirectory("scale")
        let trace = dir + "/scale.trace"
        try Self.writeTrace(shape, to: trace)
        let size = (try FileManager.default.attributesOfItem(atPath: trace)[.size] as? NSNumber)?.intValue ?? 0
        print("scale: \(shape.stacks) stacks × \(shape.marks) marks: trace \(size) bytes at \(trace)")
        // HEAPGEN_SCALE_KEEP=DIR keeps a copy of the trace (to measure other builds on it).
        if let keep = ProcessInfo.processInfo.environment["HEAPGEN_SCALE_KEEP"] {
            let copy = keep + "/scale-\(shape.stacks)x\(shape.marks)\(shape.manyCaches ? "-caches" : "").trace"
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: trace, toPath: copy)
        }

        // report --format json: exact totals, findings and live sites; refused in one line
        // (exit 125) if its findings would list more per-cycle values than the schema's limit.
        let cycles = shape.marks - 1, judged = cycles - 1, lastHalf = (judged + 1) / 2
        let expectedCaches = shape.oneShotStacks.filter { i in
            let c = shape.cycle(i)
            // Allocated in cycle c (between marks c-1 and c), so live from mark c on: rose at
            // mark c ≥ 1 and c ≤ cycles; flat over the last half when c - 1 < cycles - lastHalf.
            return !shape.freed(i) && c >= 1 && c <= cycles && c - 1 < cycles - lastHalf
        }.count
        let findingCount = shape.everyCycle + expectedCaches
        let json = try heapgenCapped(["report", trace, "--format", "json", "--output", dir + "/report.json"], in: dir)
        assertFits(json, "report --format json")
        if 2 * cycles * findingCount > 8_000_000 {
            XCTAssertEqual(json.status, 125, json.result.transcript)
            XCTAssertEqual(json.result.stderrLines, [
                "heapgen: cannot encode the report: the JSON report would list \(grouped(2 * cycles * findingCount)) per-cycle values (\(grouped(findingCount)) findings), more than 8,000,000; use the text report, heapgen diff or heapgen export",
            ], json.result.transcript)
        } else {
            XCTAssertEqual(json.status, 0, json.result.transcript)
            let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/report.json"))
            let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let totals = try XCTUnwrap(report["totals"] as? [String: Any])
            XCTAssertEqual(jsonInt(totals["allocations"]), shape.allocations)
            XCTAssertEqual(jsonInt(totals["frees"]), shape.frees)
            XCTAssertEqual(jsonInt(totals["liveAtExitObjects"]), shape.liveAtExitObjects)
            XCTAssertEqual(jsonInt(totals["liveAtExitBytes"]), Int(shape.liveAtExitBytes))
            XCTAssertEqual(jsonInt(report["cycles"]), cycles)
            let findings = try XCTUnwrap(report["findings"] as? [[String: Any]])
            let abandoned = findings.filter { $0["kind"] as? String == "abandoned" }
            XCTAssertEqual(abandoned.count, shape.everyCycle, "the every-cycle sites")
            for f in abandoned {
                XCTAssertEqual(f["objectsPerCycle"] as? [Int], [Int](repeating: 1, count: cycles))
                XCTAssertEqual(f["bytesPerCycle"] as? [Int], [Int](repeating: 32, count: cycles))
                XCTAssertEqual(jsonInt(f["cyclesWithGrowth"]), cycles - 1)
            }
            XCTAssertEqual(findings.filter { $0["kind"] as? String == "cache" }.count, expectedCaches)
            XCTAssertEqual(findings.count, findingCount)
        }

        // report (text) and check (the gate reads the same report).
        let text = try heapgenCapped(["report", trace, "--output", dir + "/report.txt"], in: dir)
        XCTAssertEqual(text.status, 0, text.result.transcript)
        assertFits(text, "report")
        let reportText = try String(contentsOfFile: dir + "/report.txt", encoding: .utf8)
        XCTAssertTrue(reportText.contains("SUMMARY: heapgen: \(grouped(Int(shape.liveAtExitBytes))) bytes live at exit in \(grouped(shape.liveAtExitObjects)) allocations."), reportText.prefix(3000).description)
        let check = try heapgenCapped(["check", trace, "--output", dir + "/check.txt"], in: dir)
        XCTAssertEqual(check.status, 23, "abandoned sites fail the default gate:\n\(check.result.transcript)")
        assertFits(check, "check")
        XCTAssertTrue(check.result.stderrText.contains("\(shape.everyCycle) abandoned"), check.result.transcript)

        // diff between two marks, and of the trace against itself.
        let diff = try heapgenCapped(["diff", trace, "--from", "0", "--to", "end", "--format", "json",
                                      "--output", dir + "/diff.json"], in: dir)
        XCTAssertEqual(diff.status, 0, diff.result.transcript)
        assertFits(diff, "diff --from --to")
        let diff2 = try heapgenCapped(["diff", trace, trace, "--output", dir + "/diff2.txt"], in: dir)
        XCTAssertEqual(diff2.status, 0, diff2.result.transcript)
        assertFits(diff2, "diff of two traces")

        // export, both formats.
        let pprof = try heapgenCapped(["export", trace, "--format", "pprof", "--output", dir + "/p.pb.gz"], in: dir)
        XCTAssertEqual(pprof.status, 0, pprof.result.transcript)
        assertFits(pprof, "export pprof")
        let collapsed = try heapgenCapped(["export", trace, "--format", "collapsed", "--sample", "inuse_space",
                                           "--at", "end", "--output", dir + "/c.txt"], in: dir)
        XCTAssertEqual(collapsed.status, 0, collapsed.result.transcript)
        assertFits(collapsed, "export collapsed")
        let folded = try String(contentsOfFile: dir + "/c.txt", encoding: .utf8)
        let total = folded.split(separator: "\n").compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
            .reduce(0, +)
        XCTAssertEqual(total, Int(shape.liveAtExitBytes), "collapsed inuse_space at end sums the live bytes")
    }

    /// The issue's trace: 100 k stacks, 10 k marks, tens of thousands of cache findings.
    func testHundredThousandStacksTimesTenThousandMarksManyCaches() throws {
        try runShape(Shape(stacks: 100_000, marks: 10_000, manyCaches: true))
    }

    /// 100 k stacks, 10 k marks, four findings: the JSON report too.
    func testHundredThousandStacksTimesTenThousandMarks() throws {
        try runShape(Shape(stacks: 100_000, marks: 10_000, manyCaches: false))
    }

    /// 16,645 sites × 20,000 marks (2.2 GB before the sparse series).
    func testSixteenThousandSitesTimesTwentyThousandMarks() throws {
        try runShape(Shape(stacks: 16_645, marks: 20_000, manyCaches: false))
    }
}
