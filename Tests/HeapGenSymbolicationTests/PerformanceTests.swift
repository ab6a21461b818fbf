import Foundation
import XCTest
@testable import HeapGenSymbolication

/// 10,000 distinct addresses in real binaries: the test runner itself (Swift with DWARF) and
/// libswiftCore (symbol table only). Prints cold (new child), warm (child has the module
/// loaded, our cache cleared) and cached timings.
final class PerformanceTests: XCTestCase {
    func testTenThousandAddresses() throws {
        var targets: [String] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { targets.append(exe) }
        let core = "/opt/swift/usr/lib/swift/linux/libswiftCore.so"
        if FileManager.default.fileExists(atPath: core) { targets.append(core) }
        for path in targets {
            let elf = try ELFFile.read(path: path).get()
            let text = try XCTUnwrap(elf.loads.filter { $0.flags & 1 != 0 }.max { $0.memsz < $1.memsz })
            let m = Module(path: path, buildID: elf.buildID ?? [], loadBias: 0x7f00_0000_0000)
            let count: UInt64 = 10_000
            let step = max(1, text.memsz / count)
            let reqs = (0..<count).map { SymbolizationRequest(module: m, address: m.loadBias + text.vaddr + $0 * step + 1) }

            let s = Symbolizer()
            func time(_ body: () -> [SymbolizationResult]) -> (Double, [SymbolizationResult]) {
                let t = Date()
                let r = body()
                return (Date().timeIntervalSince(t) * 1000, r)
            }
            let (cold, r1) = time { s.symbolize(reqs) }
            s.clearCache()
            let (warm, r2) = time { s.symbolize(reqs) }
            let (cached, r3) = time { s.symbolize(reqs) }
            XCTAssertEqual(r1, r2)
            XCTAssertEqual(r2, r3)
            let named = r1.filter { $0.frames.last?.function != nil }.count
            let withLine = r1.filter { $0.frames.last?.line != nil }.count
            let inlined = r1.filter { $0.frames.count > 1 }.count
            print(String(format: "symbolize 10k %@: cold %.0f ms, warm %.0f ms, cached %.1f ms; named %d, with line %d, inlined %d",
                         (path as NSString).lastPathComponent, cold, warm, cached, named, withLine, inlined))
            XCTAssertGreaterThan(named, 7_000, "most of a text segment is inside named functions")
            XCTAssertLessThan(cold, 60_000)
        }
    }
}
