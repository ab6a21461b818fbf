// Every allocation function, a worker thread, and C++ operator new: each leak is
// attributed to the function that made it, with exact per-cycle counts.

import Foundation
import HeapGenTestSupport
import XCTest

final class AllocatorReportTests: XCTestCase {
    func testEveryAllocationFunctionAndAWorkerThreadAreAttributed() throws {
        let n = 6
        let fixture = try ReportFixture.c("variety.c")
        let r = try HeapGenCLI.runJSON(fixture, ["\(n)"]).report
        XCTAssertEqual(r.cycles, n, "\(r)")
        let expected: [(String, Int)] = [
            ("leak_calloc", 120), ("leak_posix_memalign", 200), ("leak_aligned_alloc", 256), ("leak_memalign", 96),
            ("leak_valloc", 64), ("leak_strdup", 31), ("leak_realloc_fresh", 72), ("worker_leak", 88),
        ]
        for (function, bytes) in expected {
            let found = r.findings(function: function)
            XCTAssertEqual(found.map(\.kind), ["abandoned"], "\(function):\n\(r.findingsSummary)")
            guard let f = found.first else { continue }
            XCTAssertEqual(f.objectsPerCycle, Array(repeating: 1, count: n), "\(function): \(f.summary)")
            XCTAssertEqual(f.bytesPerCycle, Array(repeating: bytes, count: n), "\(function): \(f.summary)")
            XCTAssertEqual(f.userFrame?.function, function, f.summary)
            XCTAssertEqual(f.userFrame?.file, ReportFixture.sourcePath("variety.c"), f.summary)
        }
        XCTAssertEqual(r.findings(kind: "abandoned").count, expected.count, r.findingsSummary)
        // Abandoned by bytes per cycle, largest first.
        XCTAssertEqual(r.findings(kind: "abandoned").compactMap { $0.userFrame?.function },
                       expected.sorted { $0.1 > $1.1 }.map(\.0), r.findingsSummary)
    }

    func testCxxOperatorNewIsAttributedToTheCallerNotTheLibrary() throws {
        let fixture = try ReportFixture.cxx("widgets.cpp")
        let n = 7
        let r = try HeapGenCLI.runJSON(fixture).report
        XCTAssertEqual(r.cycles, n, "\(r)")
        let widgets = r.findings(function: "ui::make_widget")
        XCTAssertEqual(widgets.map(\.kind), ["abandoned"], r.findingsSummary)
        XCTAssertEqual(widgets.first?.objectsPerCycle, Array(repeating: 1, count: n), r.findingsSummary)
        XCTAssertEqual(widgets.first?.bytesPerCycle, Array(repeating: 128, count: n), r.findingsSummary)
        XCTAssertTrue(widgets.first?.frames.first.map { ($0.function ?? "").contains("operator new") } ?? false,
                      "innermost frame is operator new: \(widgets.first?.summary ?? "")")
        // std::string: the object (32 B) and its heap buffer (101 B), both made in make_name.
        let names = r.findings(function: "ui::make_name")
        XCTAssertEqual(names.map(\.kind), ["abandoned", "abandoned"], r.findingsSummary)
        XCTAssertEqual(Set(names.flatMap(\.bytesPerCycle)), [32, 101], r.findingsSummary)
        for f in names {
            XCTAssertEqual(f.userFrame?.file, ReportFixture.sourcePath("widgets.cpp"), "user frame skips libstdc++ and its headers: \(f.summary)")
        }
        // The std::map filled in the first cycle: caches only.
        let cache = r.findings(function: "ui::fill_cache")
        XCTAssertFalse(cache.isEmpty, r.findingsSummary)
        XCTAssertTrue(cache.allSatisfy { $0.kind == "cache" && $0.objectsPerCycle == [4] + Array(repeating: 0, count: n - 1) },
                      r.findingsSummary)
        XCTAssertEqual(r.findings.count, 3 + cache.count, r.findingsSummary)
    }
}
