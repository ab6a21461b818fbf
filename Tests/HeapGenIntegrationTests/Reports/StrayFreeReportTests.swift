// Frees of addresses that were not live (LeakSanitizer's double_free tests, valgrind's
// "Invalid free()"): the program's own fate is untouched, and the report says what each was.

import Foundation
import HeapGenTestSupport
import XCTest

final class StrayFreeReportTests: XCTestCase {
    /// One mode of strayfree.c, natively and under `heapgen record`: the same output and
    /// status (glibc's abort included), then the report's `strayFrees` entry.
    private func stray(_ mode: String, status: Int32, line: String = #function) throws -> (entry: [String: Any], report: Report, text: String) {
        let fixture = try ReportFixture.c("strayfree.c", flags: ["-O0"])
        let native = try runProcess(fixture, [mode])
        XCTAssertEqual(native.status, status, native.transcript)
        let dir = try TestPaths.freshDirectory("stray")
        let trace = dir + "/x.trace"
        let traced = try HeapGenCLI.run(["record", "--quiet", "--output", trace, "--", fixture, mode])
        XCTAssertEqual(traced.status, native.status, traced.transcript)
        XCTAssertEqual(traced.stdoutText, native.stdoutText, "the program's output is its own")
        // glibc's message, then heapgen's one line on the signal.
        XCTAssertTrue(traced.stderrText.hasPrefix(native.stderrText), "native:\n\(native.stderrText)\nheapgen:\n\(traced.stderrText)")
        let report = try HeapGenCLI.report(trace)
        let text = try HeapGenCLI.run(["report", trace]).stdoutText
        let entries = report.json["strayFrees"] as? [[String: Any]] ?? []
        XCTAssertEqual(entries.count, 1, "\(report)")
        XCTAssertEqual(report.total("untrackedFrees"), 1, "\(report.totals)")
        return (entries.first ?? [:], report, text)
    }

    private func allocationLine(_ entry: [String: Any]) -> Int? {
        let frames = (entry["frames"] as? [[String: Any]] ?? []).map(Frame.init)
        return frames.first { $0.function == "main" }?.line
    }

    func testADoubleFreeNamesTheBlockAndWhereItWasAllocated() throws {
        let (e, _, text) = try stray("double", status: 134)
        XCTAssertEqual(e["cause"] as? String, "doubleFree")
        XCTAssertEqual(e["function"] as? String, "free")
        XCTAssertEqual(jsonInt(e["blockSize"]), 16)
        XCTAssertEqual(e["address"] as? String, e["blockAddress"] as? String)
        // Events: printf's buffer, the block, its first free, the second.
        XCTAssertEqual(jsonInt(e["blockFreedAtEvent"]).map { $0 + 1 }, jsonInt(e["event"]), "\(e)")
        XCTAssertEqual(allocationLine(e), try ReportFixture.lines("strayfree.c", containing: "ALLOC double").first, "\(e)")
        XCTAssertTrue(text.contains("Frees of addresses that were not live (1)"), text)
        XCTAssertTrue(text.contains(": a double free of a 16 B block freed at event "), text)
        XCTAssertTrue(text.contains("allocated at main ("), text)
    }

    func testAnInteriorPointerIsNamedWithItsOffset() throws {
        let (e, _, text) = try stray("interior", status: 134)
        XCTAssertEqual(e["cause"] as? String, "interiorPointer")
        XCTAssertEqual(jsonInt(e["blockSize"]), 64)
        XCTAssertTrue(e["blockFreedAtEvent"] is NSNull, "the block is live: \(e)")
        let address = (e["address"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) }
        let block = (e["blockAddress"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) }
        XCTAssertEqual(address.flatMap { a in block.map { a - $0 } }, 16, "\(e)")
        XCTAssertEqual(allocationLine(e), try ReportFixture.lines("strayfree.c", containing: "ALLOC interior").first, "\(e)")
        XCTAssertTrue(text.contains("a pointer 16 bytes into a 64 B block (live), not its start"), text)
    }

    func testReallocOfAFreedBlockIsADoubleFree() throws {
        let (e, report, _) = try stray("realloc-freed", status: 0)
        XCTAssertEqual(e["cause"] as? String, "doubleFree")
        XCTAssertEqual(e["function"] as? String, "realloc")
        XCTAssertEqual(allocationLine(e), try ReportFixture.lines("strayfree.c", containing: "ALLOC realloc-freed").first, "\(e)")
        XCTAssertEqual(report.program["exitStatus"].flatMap(jsonInt), 0)
    }

    func testAFreeOfMemoryHeapgenNeverSawAllocatedSaysSo() throws {
        let (e, _, text) = try stray("foreign", status: 0)
        XCTAssertEqual(e["cause"] as? String, "notAllocated")
        XCTAssertTrue(e["blockAddress"] is NSNull, "\(e)")
        XCTAssertEqual((e["frames"] as? [Any])?.count, 0, "\(e)")
        XCTAssertTrue(text.contains(": no block heapgen recorded holds it"), text)
    }

    /// The same binary under valgrind (whose allocator lets the program live on): its
    /// "Invalid free()" names the same offset into a block of the same size, freed or live,
    /// allocated at the same line.
    func testTheExplanationsAgreeWithValgrinds() throws {
        let valgrind = try tool("valgrind", hint: "apt-get install -y valgrind")
        let fixture = try ReportFixture.c("strayfree.c", flags: ["-O0"])
        let pattern = try NSRegularExpression(pattern: #"is (\d+) bytes inside a block of size (\d+) (free'd|alloc'd)"#)
        for (mode, status) in [("double", Int32(134)), ("interior", 134), ("realloc-freed", 0)] {
            let v = try runProcess(valgrind, ["--leak-check=no", fixture, mode], timeout: 300)
            let lines = v.stderrText.components(separatedBy: "\n")
            guard let at = lines.firstIndex(where: { pattern.firstMatch(in: $0, range: NSRange($0.startIndex..., in: $0)) != nil }),
                  let m = pattern.firstMatch(in: lines[at], range: NSRange(lines[at].startIndex..., in: lines[at])) else {
                XCTFail("\(mode): no invalid free in valgrind's output:\n\(v.transcript)")
                continue
            }
            func group(_ i: Int) -> String { String(lines[at][Range(m.range(at: i), in: lines[at])!]) }
            // The allocation's line: after "Block was alloc'd at" for a freed block, else
            // right under the "Address" line.
            let allocStart = group(3) == "free'd" ? (lines.firstIndex { $0.contains("Block was alloc'd at") } ?? at) : at
            let valgrindLine = lines[(allocStart + 1)...].lazy.compactMap { line -> Int? in
                guard let r = line.range(of: #"main \(strayfree\.c:(\d+)\)"#, options: .regularExpression) else { return nil }
                return Int(line[r].dropFirst("main (strayfree.c:".count).dropLast())
            }.first

            let (e, _, _) = try stray(mode, status: status)
            let address = (e["address"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) }
            let block = (e["blockAddress"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) }
            XCTAssertEqual(address.flatMap { a in block.map { Int(a - $0) } }, Int(group(1)), "\(mode): \(e)")
            XCTAssertEqual(jsonInt(e["blockSize"]), Int(group(2)), "\(mode): \(e)")
            XCTAssertEqual(!(e["blockFreedAtEvent"] is NSNull), group(3) == "free'd", "\(mode): \(e)")
            XCTAssertNotNil(valgrindLine, v.stderrText)
            XCTAssertEqual(allocationLine(e), valgrindLine, "\(mode): \(e)\n\(v.stderrText)")
        }
    }

    /// A healthy program's report has no such list (the key is absent).
    func testAHealthyProgramHasNone() throws {
        let fixture = try ReportFixture.c("strayfree.c", flags: ["-O0"])
        let run = try HeapGenCLI.runJSON(fixture, ["none"])
        XCTAssertNil(run.report.json["strayFrees"], "\(run.report)")
        XCTAssertEqual(run.report.total("untrackedFrees"), 0)
    }
}
