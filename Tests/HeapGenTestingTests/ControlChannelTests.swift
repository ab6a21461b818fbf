// The control channel from C: heapgen_control in a real traced process.

import Foundation
import HeapGenTestSupport
import XCTest

final class ControlChannelTests: XCTestCase {
    /// "TAG rc json" lines of the control fixture, by tag.
    private func answers(_ result: TextProcessResult) -> [String: (rc: Int, json: String)] {
        var out: [String: (Int, String)] = [:]
        for line in result.stdout.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count >= 2, let rc = Int(parts[1]) else { continue }
            out[String(parts[0])] = (rc, parts.count > 2 ? String(parts[2]) : "")
        }
        return out
    }

    private func json(_ text: String) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try XCTUnwrap(value as? [String: Any], "not a JSON object: \(text)")
    }

    func testObjectQueriesSeeAllocationsAndFreesInOrder() throws {
        let heapgen = try TestPaths.heapgen()
        let fixture = try Run.compileC("control.c")
        let trace = TestPaths.scratch + "/objects.trace"
        let result = try Run.run(heapgen, ["record", "--output", trace, "--", fixture, "objects"])
        XCTAssertEqual(result.status, 0, result.transcript)
        let a = answers(result)

        let track = try json(try XCTUnwrap(a["TRACK"], result.transcript).json)
        XCTAssertEqual(track["ok"] as? Bool, true, result.transcript)
        XCTAssertEqual(track["tracking"] as? Bool, true)

        // A block malloc'ed just before the query is live, with its size and stack.
        let live = try json(try XCTUnwrap(a["LIVE"]).json)
        XCTAssertEqual(live["live"] as? Bool, true, result.transcript)
        XCTAssertEqual(live["size"] as? Int, 1234)
        XCTAssertEqual(live["generation"] as? Int, 0)
        let frames = try XCTUnwrap(live["frames"] as? [[String: Any]])
        XCTAssertEqual(frames.first?["function"] as? String, "make_block", result.transcript)
        XCTAssertTrue((frames.first?["file"] as? String ?? "").hasSuffix("control.c"))
        XCTAssertEqual(live["userFrame"] as? Int, 0)

        // free() then query: the free comes first in the ring, so the block is gone.
        let freed = try json(try XCTUnwrap(a["FREED"]).json)
        XCTAssertEqual(freed["ok"] as? Bool, true)
        XCTAssertEqual(freed["live"] as? Bool, false, result.transcript)

        // A block made after a mark is in generation 1, opened by that mark.
        let gen = try json(try XCTUnwrap(a["GEN"]).json)
        XCTAssertEqual(gen["live"] as? Bool, true)
        XCTAssertEqual(gen["generation"] as? Int, 1)
        XCTAssertEqual(gen["previousMark"] as? String, "first")
        XCTAssertNil(gen["generationLabel"], "the generation is still open")
        XCTAssertNotEqual(gen["allocation"] as? Int, live["allocation"] as? Int)

        let status = try json(try XCTUnwrap(a["STATUS"]).json)
        XCTAssertEqual(status["tracking"] as? Bool, true)
        XCTAssertEqual(status["rejected"] as? Int, 0)
    }

    /// `retention` from C: the path from a global through a block (by offset: C has no stored
    /// property names) to the block containing the address, a pair held only by each other
    /// (and the asking thread's stale locals) with its cycle, a freed block, and the refusal
    /// before tracking.
    func testRetentionNamesThePathAndTheCycle() throws {
        let heapgen = try TestPaths.heapgen()
        let fixture = try Run.compileC("control.c")
        let trace = TestPaths.scratch + "/retention.trace"
        let result = try Run.run(heapgen, ["record", "--output", trace, "--", fixture, "retention"], timeout: 120)
        XCTAssertEqual(result.status, 0, result.transcript)
        let a = answers(result)

        let untracked = try json(try XCTUnwrap(a["RUNTRACKED"], result.transcript).json)
        XCTAssertEqual(untracked["ok"] as? Bool, false)
        XCTAssertTrue((untracked["error"] as? String ?? "").contains("not tracking"), result.transcript)

        let held = try json(try XCTUnwrap(a["HELD"], result.transcript).json)
        XCTAssertEqual(held["ok"] as? Bool, true, result.transcript)
        XCTAssertEqual(held["op"] as? String, "retention")
        XCTAssertEqual(held["live"] as? Bool, true)
        XCTAssertEqual(held["reachable"] as? Bool, true, result.transcript)
        XCTAssertNil(held["cycle"])
        XCTAssertNil(held["askingThreadOnly"])
        let path = try XCTUnwrap(held["path"] as? [[String: Any]], result.transcript)
        XCTAssertEqual(path.count, 3, result.transcript)
        XCTAssertEqual(path.first?["kind"] as? String, "root")
        let root = path.first?["name"] as? String ?? ""
        XCTAssertTrue(root == "g_holder" || root.hasPrefix("global control"), result.transcript)
        XCTAssertEqual(path[1]["name"] as? String, "block from make_block", result.transcript)
        XCTAssertEqual(path[1]["field"] as? String, "+0x8", result.transcript)
        XCTAssertEqual(path[2]["name"] as? String, "block from make_block")
        XCTAssertNil(path[2]["field"])

        let pair = try json(try XCTUnwrap(a["PAIR"], result.transcript).json)
        XCTAssertEqual(pair["live"] as? Bool, true, result.transcript)
        let cycle = try XCTUnwrap(pair["cycle"] as? [[String: Any]], result.transcript)
        XCTAssertEqual(cycle.count, 2, result.transcript)
        XCTAssertEqual(cycle.map { $0["field"] as? String }, ["+0x0", "+0x0"], result.transcript)
        // Only main's stale locals could reach it, and they are named as the asking thread's.
        if pair["reachable"] as? Bool == true {
            XCTAssertEqual(pair["askingThreadOnly"] as? Bool, true, result.transcript)
        }

        // 21 steps (the global, 20 blocks): 6 blocks at each end, the middle one elided step.
        let long = try json(try XCTUnwrap(a["LONG"], result.transcript).json)
        let longPath = try XCTUnwrap(long["path"] as? [[String: Any]], result.transcript)
        XCTAssertEqual(longPath.count, 1 + 6 + 1 + 6, result.transcript)
        XCTAssertEqual(longPath[7]["kind"] as? String, "elided", result.transcript)
        XCTAssertEqual(longPath[7]["name"] as? String, "… 8 more blocks …", result.transcript)
        XCTAssertEqual(longPath.last?["kind"] as? String, "block")

        let gone = try json(try XCTUnwrap(a["GONE"], result.transcript).json)
        XCTAssertEqual(gone["ok"] as? Bool, true, result.transcript)
        XCTAssertEqual(gone["live"] as? Bool, false)
        XCTAssertEqual(gone["reachable"] as? Bool, false)
        XCTAssertNil(gone["path"])
    }

    func testMalformedRequestsGetErrorsAndTheCollectorCarriesOn() throws {
        let heapgen = try TestPaths.heapgen()
        let fixture = try Run.compileC("control.c")
        let trace = TestPaths.scratch + "/malformed.trace"
        let result = try Run.run(heapgen, ["record", "--output", trace, "--", fixture, "malformed"], timeout: 60)
        XCTAssertEqual(result.status, 0, result.transcript)
        let a = answers(result)
        let expected: [String: String] = [
            "GARBAGE": "malformed request",
            "EMPTY": "malformed request",
            "NESTED": "nested objects and arrays are not supported",
            "NOOP": "no \"op\"",
            "UNKNOWN": "unknown op",
            "BADADDR": "\"address\" must be",
            "UNTRACKED": "not tracking",
            "NOSESSION": "no growth session",
            "BADOPT": "non-negative integer",
            "TRAILING": "trailing characters",
            "UNTERMINATED": "unterminated string",
            "BADESCAPE": "bad escape",
            "HUGE": "request longer than",
            "DEEP": "malformed request",
        ]
        for (tag, reason) in expected {
            let answer = try XCTUnwrap(a[tag], "no answer for \(tag)\n\(result.transcript)")
            XCTAssertGreaterThan(answer.rc, 0, tag)
            let object = try json(answer.json)
            XCTAssertEqual(object["ok"] as? Bool, false, tag)
            XCTAssertTrue((object["error"] as? String ?? "").contains(reason), "\(tag): \(answer.json)")
        }
        // More than the request region: refused in the shim, nothing sent.
        XCTAssertTrue(result.stdout.contains("TOOBIG \(-E2BIG) E2BIG"), result.transcript)
        // A too-small buffer: snprintf-like truncation, the full length returned.
        let short = try XCTUnwrap(a["SHORT"])
        XCTAssertEqual(short.json, "{\"ok\":t")
        XCTAssertEqual(short.rc, try XCTUnwrap(a["PING"]).json.utf8.count)
        // And the collector is fine afterwards.
        let ping = try json(try XCTUnwrap(a["PING"]).json)
        XCTAssertEqual(ping["ok"] as? Bool, true, result.transcript)
        let status = try json(try XCTUnwrap(a["STATUS"]).json)
        XCTAssertEqual(status["rejected"] as? Int, expected.count, result.transcript)
        XCTAssertTrue(result.stderr.contains("heapgen: wrote"), result.transcript)
    }

    func testWithoutHeapgenTheSymbolIsAbsent() throws {
        let fixture = try Run.compileC("control.c")
        let result = try Run.run(fixture, ["untraced"])
        XCTAssertEqual(result.status, 0, result.transcript)
        XCTAssertTrue(result.stdout.contains("UNTRACED nosymbol"), result.transcript)
    }

    func testRoundTripLatency() throws {
        let heapgen = try TestPaths.heapgen()
        let fixture = try Run.compileC("control.c")
        let trace = TestPaths.scratch + "/latency.trace"
        let result = try Run.run(heapgen, ["record", "--output", trace, "--", fixture, "latency", "100"], timeout: 120)
        XCTAssertEqual(result.status, 0, result.transcript)
        let line = try XCTUnwrap(result.stdout.split(separator: "\n").first { $0.hasPrefix("LATENCY") }, result.transcript)
        print(line)
        let numbers = line.split(separator: " ").compactMap { Double($0) }
        XCTAssertEqual(numbers.count, 2, String(line))
        // Generous bounds (a debug collector on a busy 2-core machine): milliseconds, not seconds.
        XCTAssertLessThan(numbers[0], 20_000, String(line))
        XCTAssertLessThan(numbers[1], 50_000, String(line))
    }
}
