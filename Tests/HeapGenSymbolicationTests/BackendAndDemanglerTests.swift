import Foundation
import XCTest
@testable import HeapGenSymbolication

final class BackendAndDemanglerTests: XCTestCase {
    let fx = Fixtures.shared

    func testDefaultBackendIsToolchainLLVMSymbolizer() {
        let s = Symbolizer(options: .init(environment: ["PATH": "/opt/swift/usr/bin:/usr/bin:/bin"]))
        XCTAssertEqual(s.backend, .llvmSymbolizer("/opt/swift/usr/bin/llvm-symbolizer"))
        XCTAssertEqual(LLVMSymbolizerBackend.arguments(debugFileDirectories: ["/d"]),
                       ["--output-style=JSON", "--inlines", "--demangle", "--functions=linkage", "--debug-file-directory=/d"])
    }

    /// addr2line as the last resort: names (Swift demangled by us), files, lines, inlined frames.
    func testAddr2LineBackend() throws {
        guard let addr2line = findTool(["addr2line"]) else { throw XCTSkip("no addr2line") }
        let s = Symbolizer(options: .init(symbolizerPath: addr2line, allowFallbacks: false))
        XCTAssertEqual(s.backend, .addr2line(addr2line))

        let exe = try fx.cProgram()
        let results = s.symbolize(scan(module(exe), try fx.symbol(exe, "compute_total"))).map(\.frames)
        let chain = try XCTUnwrap(results.first { $0.count >= 2 && $0[0].function == "scale_value" })
        XCTAssertTrue(chain[0].inlined)
        XCTAssertEqual(chain.last?.function, "compute_total")
        XCTAssertEqual(chain.last?.line, fx.markerLine("inline.c", "compute_total call"))
        XCTAssertNil(chain[0].column)

        let sw = try fx.swiftProgram(optimized: false)
        let sym = try fx.symbol(sw, "$s7Fixture9InventoryC7addItem5namedSiSS_tF")
        let f = s.symbolize(SymbolizationRequest(module: module(sw, loadBias: 0x4000), address: 0x4000 + sym.address + 1, isReturnAddress: false))
        XCTAssertEqual(f.frames.last?.function, "Fixture.Inventory.addItem(named: Swift.String) -> Swift.Int")
        XCTAssertEqual(f.frames.last?.shortFunction, "Inventory.addItem(named:)")

        let cpp = try fx.cppProgram()
        let bar = try XCTUnwrap(fx.symbols(cpp).first { $0.name.hasPrefix("_ZN2ns3FooIiE3bar") })
        let g = s.symbolize(SymbolizationRequest(module: module(cpp), address: bar.address + 1, isReturnAddress: false))
        XCTAssertTrue(g.frames.last?.function?.contains("ns::Foo<int>::bar") == true, "\(g)")
    }

    /// Debian's LLVM 14 llvm-symbolizer reads Swift 6.3's DWARF 4 (+ .debug_names) too.
    func testSystemLLVM14Symbolizer() throws {
        let path = "/usr/bin/llvm-symbolizer"
        guard FileManager.default.isExecutableFile(atPath: path) else { throw XCTSkip("no \(path)") }
        let s = Symbolizer(options: .init(symbolizerPath: path, allowFallbacks: false))
        for optimized in [false, true] {
            let sw = try fx.swiftProgram(optimized: optimized)
            let sym = try fx.symbol(sw, "$s7Fixture9InventoryC7addItem5namedSiSS_tF")
            let frames = s.symbolize(scan(module(sw), sym, step: 2)).flatMap(\.frames)
            XCTAssertTrue(frames.contains { $0.function == "Fixture.Inventory.addItem(named: Swift.String) -> Swift.Int"
                && $0.line == fx.markerLine("fixture.swift", "Inventory.addItem body") })
        }
        let exe = try fx.cProgram()
        let results = s.symbolize(scan(module(exe), try fx.symbol(exe, "compute_total"))).map(\.frames)
        XCTAssertTrue(results.contains { $0.count >= 2 && $0[0].function == "scale_value" })
    }

    func testRuntimeDemangler() {
        let d = Demangler(mode: .automatic)
        XCTAssertTrue(d.isAvailable)
        XCTAssertEqual(d.demangle("$s4Demo16ProfileViewModelC4nameACSS_tcfc"),
                       DemangledName(full: "Demo.ProfileViewModel.init(name: Swift.String) -> Demo.ProfileViewModel",
                                     short: "ProfileViewModel.init(name:)"))
        XCTAssertEqual(d.demangle("$s7Fixture9InventoryC14installHandler6offsetySi_tFS2icfU_").short,
                       "closure #1 in Inventory.installHandler(offset:)")
        XCTAssertEqual(d.demangle("_$s7Fixture9InventoryCMa").full, "type metadata accessor for Fixture.Inventory")
        XCTAssertEqual(d.demangle("_T0SS").full, "Swift.String")
        // Not Swift, or not valid: unchanged.
        XCTAssertEqual(d.demangle("compute_total"), DemangledName(full: "compute_total", short: "compute_total"))
        XCTAssertEqual(d.demangle("$sZZZnotreally").full, "$sZZZnotreally")
        XCTAssertEqual(d.demangle("ns::Foo<int>::bar(int)").full, "ns::Foo<int>::bar(int)")
    }

    /// C++ names llvm-symbolizer (LLVM 21) returns mangled, from inlined frames of
    /// `std::make_shared<Node>()` in a gcc 12 -O1 program: libstdc++'s demangler reads them.
    func testCxxNamesLeftMangledAreDemangled() {
        let d = Demangler(mode: .automatic)
        XCTAssertEqual(d.demangle("_ZSt11make_sharedI4NodeJEESt10shared_ptrINSt9enable_ifIXntsrSt8is_arrayIT_E5valueES4_E4typeEEDpOT0_").full,
                       "std::shared_ptr<std::enable_if<!std::is_array<Node>::value, Node>::type> std::make_shared<Node>()")
        XCTAssertEqual(d.demangle("_ZN2ns3FooIiE3barEi").full, "ns::Foo<int>::bar(int)")
        XCTAssertEqual(d.demangle("_Znotreally").full, "_Znotreally")
    }

    /// Rust's legacy mangling is Itanium's with a hash component and `$…$` escapes: after
    /// demangling, names read as Rust writes them (the symbols of a `rustc -O -g` program).
    func testRustLegacyNamesReadAsRust() {
        let d = Demangler(mode: .automatic)
        XCTAssertEqual(d.demangle("_ZN4main8leak_box17h8d56c0c19e8d2495E").full, "main::leak_box")
        XCTAssertEqual(d.demangle("_ZN79_$LT$hashbrown..raw..RawTable$LT$T$C$A$GT$$u20$as$u20$core..ops..drop..Drop$GT$4drop17h8b3f581103486bfaE").full,
                       "<hashbrown::raw::RawTable<T,A> as core::ops::drop::Drop>::drop")
        // llvm-symbolizer's own demangling, passed through.
        XCTAssertEqual(d.demangle("alloc::vec::Vec$LT$T$C$A$GT$::with_capacity_in::h09af10dba97e4961").full,
                       "alloc::vec::Vec<T,A>::with_capacity_in")
        XCTAssertEqual(d.demangle("std::rt::lang_start::_$u7b$$u7b$closure$u7d$$u7d$::hdbee5a3fa7ab6636").short,
                       "std::rt::lang_start::{{closure}}")
        XCTAssertEqual(Demangler.rustLegacy("_$LT$$RF$T$u20$as$u20$core..fmt..Debug$GT$::fmt::h0123456789abcdef"),
                       "<&T as core::fmt::Debug>::fmt")
        // A function LLVM moved between codegen units: the Itanium demangler keeps the
        // `.llvm.` suffix as a clone's, and Rust's escapes were left undecoded behind it.
        XCTAssertEqual(d.demangle("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17hb6e30565f2a810ddE.llvm.4993115637244720344").full,
                       "std::rt::lang_start::{{closure}}")
        XCTAssertEqual(d.demangle("_ZN5alloc7raw_vec20RawVecInner$LT$A$GT$11finish_grow17h1da5c3929bbd3b48E.llvm.2972660030464805043").short,
                       "alloc::raw_vec::RawVecInner<A>::finish_grow")
        XCTAssertEqual(Demangler.rustLegacy("main::make::h0123456789abcdef (.constprop.0)"), "main::make (.constprop.0)")
        XCTAssertNil(Demangler.rustLegacy("ns::f(int) (.constprop.0)"), "C++ with a clone suffix")
        // Not legacy Rust: left alone.
        for name in ["ns::Foo<int>::bar(int)", "main::h0123", "a::hxyzxyzxyzxyzxyzx", "f::h0123456789abcdef$LQ$"] {
            XCTAssertEqual(d.demangle(name).full, name)
        }
        XCTAssertNil(Demangler.rustLegacy("a::b$ZZ$c::h0123456789abcdef"), "an unknown escape")
    }

    func testCommandLineDemanglerMatchesRuntime() throws {
        guard let tool = ToolLocator.swiftDemangle() else { throw XCTSkip("no swift-demangle") }
        let names = ["$s7Fixture9InventoryC7addItem5namedSiSS_tF", "$s7Fixture16ProfileViewModelV4nameACSS_tcfC",
                     "$s7Fixture9InventoryC14installHandler6offsetySi_tFS2icfU_TA", "plain_c", "$sZZZnotreally"]
        let cli = Demangler(mode: .commandLine(tool)).demangle(names)
        let rt = Demangler(mode: .automatic).demangle(names)
        XCTAssertEqual(cli, rt)
        XCTAssertEqual(cli["plain_c"]?.full, "plain_c")
    }

    func testDisabledDemangling() throws {
        let sw = try fx.swiftProgram(optimized: false)
        let sym = try fx.symbol(sw, "$s7Fixture9InventoryC7addItem5namedSiSS_tF")
        let s = Symbolizer(options: .init(swiftDemangling: .disabled))
        let f = s.symbolize(SymbolizationRequest(module: module(sw), address: sym.address + 1, isReturnAddress: false))
        XCTAssertEqual(f.frames.last?.function, sym.name)
    }

    /// The symbolizer's frames are the report's: they round-trip through its JSON (address as `"0x…"`).
    func testFrameCodableRoundTrip() throws {
        let f = SymbolicatedFrame(function: "f", shortFunction: "f", file: "/a.c", line: 3, column: 4, module: "/m",
                                  address: 0x1234, inlined: true)
        let data = try JSONEncoder().encode([f])
        XCTAssertTrue(String(decoding: data, as: UTF8.self).contains(#""address":"0x1234""#))
        XCTAssertEqual(try JSONDecoder().decode([SymbolicatedFrame].self, from: data), [f])
    }
}
