// Stacks of one code path in several module load epochs are one site (issue 7 item 11).
//
// The shim defines every stack again after a module load or unload. A library loaded,
// called and unloaded k times therefore allocates from k stack ids, at the same addresses
// when it is mapped at the same place again, at other ones when not. The analysis must
// count them as one site; a different library mapped at the same place is another site.

import Foundation
import HeapGenAnalysis
import HeapGenTrace
import XCTest

final class ModuleEpochSiteTests: XCTestCase {
    static let exe = ModuleRecord(loadBias: 0x5555_0000_0000, path: "/usr/bin/app", buildID: [1, 2, 3],
                                  segments: [.init(vaddr: 0, memsz: 0x10000, flags: 5)])

    static func library(_ path: String, at bias: UInt64, buildID: [UInt8] = [9, 9]) -> ModuleRecord {
        ModuleRecord(loadBias: bias, path: path, buildID: buildID, segments: [.init(vaddr: 0, memsz: 0x4000, flags: 5)])
    }

    func testReloadedLibraryIsOneSiteWhereverItIsMapped() throws {
        let path = NSTemporaryDirectory() + "heapgen-epochs-\(UUID().uuidString).trace"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let w = try TraceWriter(path: path, process: ProcessRecord(
            pid: 7, ppid: 1, origin: .root, executable: "/usr/bin/app", arguments: ["app"], startUnixNanoseconds: 1))
        w.moduleLoad(Self.exe)
        let caller = Self.exe.loadBias + 0x1234
        var address: UInt64 = 0x1000_0000
        var stack: UInt32 = 1
        /// One load of `module`: a new stack id for the frame at `offset`, `count` blocks of 48 B.
        func load(_ module: ModuleRecord, offset: UInt64, count: Int) {
            w.moduleLoad(module)
            w.defineStack(id: stack, frames: [module.loadBias + offset, caller])
            for _ in 0..<count {
                w.appendAllocation(.malloc, address: address, size: 48, stack: stack, type: 0)
                address += 0x40
            }
            w.moduleUnload(loadBias: module.loadBias)
            stack += 1
        }
        let a: UInt64 = 0x7f00_0000_0000, b: UInt64 = 0x7f10_0000_0000
        // libplugin.so: 4 loads at a, 1 at b, 1 at a again; 50 blocks each.
        for bias in [a, a, a, a, b, a] { load(Self.library("/opt/libplugin.so", at: bias), offset: 0x1100, count: 50) }
        // Another library mapped at a, same offset: another code path.
        load(Self.library("/opt/libother.so", at: a, buildID: [7]), offset: 0x1100, count: 7)
        // libplugin.so again, another function (offset): another site.
        load(Self.library("/opt/libplugin.so", at: a), offset: 0x1180, count: 3)
        try w.finish(EndRecord(reason: .exited, status: 0))

        let analysis = try GenerationAnalyzer.analyze(path: path)
        XCTAssertEqual(analysis.totals.liveAtExitObjects, 300 + 7 + 3)
        XCTAssertEqual(analysis.siteCount, 3)
        let sites = analysis.sites.map { ($0.stackID, $0.liveAtExitObjects, $0.allocations) }
        XCTAssertEqual(sites.map(\.0), [1, 7, 8], "\(sites)")
        XCTAssertEqual(sites.map(\.1), [300, 7, 3], "\(sites)")
        XCTAssertEqual(sites.map(\.2), [300, 7, 3], "\(sites)")
        XCTAssertEqual(analysis.sites.map(\.liveAtExitObjects).reduce(0, +), analysis.totals.liveAtExitObjects)
        XCTAssertEqual(analysis.sites.map(\.liveAtExitBytes).reduce(0, +), analysis.totals.liveAtExitBytes)
        // The site's stack is the first definition (its frames read against the first load).
        XCTAssertEqual(analysis.stacks[1], [a + 0x1100, caller])
    }
}
