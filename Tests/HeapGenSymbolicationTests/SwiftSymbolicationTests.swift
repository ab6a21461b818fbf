import Foundation
import XCTest
@testable import HeapGenSymbolication

/// `swiftc -g -Onone` and `-O -g`, `-module-name Fixture`: methods, an initializer and a closure
/// resolve to demangled names with `Fixture.` and the right marker lines.
final class SwiftSymbolicationTests: XCTestCase {
    let fx = Fixtures.shared

    func testDebugBuild() throws { try check(optimized: false) }
    func testReleaseBuild() throws { try check(optimized: true) }

    private func check(optimized: Bool) throws {
        let exe = try fx.swiftProgram(optimized: optimized)
        let m = module(exe, loadBias: 0x5600_0000_0000)
        let symbols = try fx.symbols(exe)
        let s = Symbolizer()
        let label = optimized ? "-O" : "-Onone"

        // Method.
        let addItem = try XCTUnwrap(symbols.first { $0.name == "$s7Fixture9InventoryC7addItem5namedSiSS_tF" })
        let methodFrames = s.symbolize(scan(m, addItem)).flatMap(\.frames)
        let method = methodFrames.filter { $0.function == "Fixture.Inventory.addItem(named: Swift.String) -> Swift.Int" }
        XCTAssertFalse(method.isEmpty, "\(label): \(Set(methodFrames.compactMap(\.function)))")
        XCTAssertEqual(method.first?.shortFunction, "Inventory.addItem(named:)")
        XCTAssertTrue(method.contains { $0.line == fx.markerLine("fixture.swift", "Inventory.addItem body") },
                      "\(label): lines \(Set(method.compactMap(\.line)).sorted())")
        XCTAssertEqual(method.first?.file.map { ($0 as NSString).lastPathComponent }, "fixture.swift")

        // Initializer: start of the function + 1, exact address.
        let initSym = try XCTUnwrap(symbols.first { $0.name == "$s7Fixture16ProfileViewModelV4nameACSS_tcfC" })
        let initFrames = s.symbolize(SymbolizationRequest(module: m, address: m.loadBias + initSym.address + 1, isReturnAddress: false))
        XCTAssertEqual(initFrames.frames.last?.function, "Fixture.ProfileViewModel.init(name: Swift.String) -> Fixture.ProfileViewModel")
        XCTAssertEqual(initFrames.frames.last?.shortFunction, "ProfileViewModel.init(name:)")
        XCTAssertEqual(initFrames.moduleOffset, initSym.address + 1)

        // Closure: its own function at -Onone; at -O inlined into the partial-apply thunk, which
        // must then report the closure as an inlined frame.
        let closureSyms = symbols.filter { $0.name.hasPrefix("$s7Fixture9InventoryC14installHandler6offsetySi_tFS2icfU_") }
        XCTAssertFalse(closureSyms.isEmpty)
        let closureFrames = s.symbolize(closureSyms.flatMap { scan(m, $0) }).flatMap(\.frames)
        let closure = closureFrames.filter {
            $0.function?.hasPrefix("closure #1") == true && $0.function?.contains("in Fixture.Inventory.installHandler(offset: Swift.Int)") == true
        }
        XCTAssertFalse(closure.isEmpty, "\(label): \(Set(closureFrames.compactMap(\.function)))")
        XCTAssertTrue(closure.contains { $0.line == fx.markerLine("fixture.swift", "handler closure body") },
                      "\(label): closure lines \(Set(closure.compactMap(\.line)).sorted())")
        XCTAssertTrue(closure.contains { $0.shortFunction == "closure #1 in Inventory.installHandler(offset:)" })
        if optimized {
            XCTAssertTrue(closure.contains { $0.inlined }, "at -O the closure is inlined into its thunk")
        }
    }
}
