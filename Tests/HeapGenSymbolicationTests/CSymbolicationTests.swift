import Foundation
import XCTest
@testable import HeapGenSymbolication

final class CSymbolicationTests: XCTestCase {
    let fx = Fixtures.shared

    /// gcc -O2 -g, no frame pointers: some address of compute_total lies in the inlined
    /// `static inline scale_value`, reported as its own frame first, then compute_total at the call line.
    func testInlinedStaticFunctionAtO2() throws {
        let exe = try fx.cProgram()
        let m = module(exe)
        let fn = try fx.symbol(exe, "compute_total")
        let results = Symbolizer().symbolize(scan(m, fn)).map(\.frames)
        let inlineRange = fx.functionLines("inline.c", "static inline int scale_value")
        let callLine = fx.markerLine("inline.c", "compute_total call")

        let chains = results.filter { $0.count >= 2 && $0[0].function == "scale_value" }
        XCTAssertFalse(chains.isEmpty, "no address of compute_total resolved to the inlined scale_value")
        for chain in chains {
            XCTAssertTrue(chain[0].inlined)
            XCTAssertTrue(inlineRange.contains(chain[0].line ?? -1), "inlined line \(chain[0].line as Any) not in \(inlineRange)")
            XCTAssertEqual(chain.last?.function, "compute_total")
            XCTAssertEqual(chain.last?.inlined, false)
            XCTAssertEqual(chain.last?.line, callLine)
            XCTAssertEqual(chain[0].file.map { ($0 as NSString).lastPathComponent }, "inline.c")
            XCTAssertNotNil(chain[0].column, "llvm-symbolizer reports columns for gcc's DWARF")
            XCTAssertEqual(chain[0].address, chain.last?.address)
        }
        // Every address of the function resolves to it (directly or as the outer frame).
        for r in results { XCTAssertEqual(r.last?.function, "compute_total") }

        // Same chain as binutils addr2line gives for one of those addresses.
        if let addr2line = findTool(["addr2line"]), let a = chains.first?.first.map({ $0.address - m.loadBias }) {
            let out = try runProgram(addr2line, ["-f", "-i", "-e", exe, "0x" + String(a, radix: 16)]).out
            let names = out.split(separator: "\n").enumerated().filter { $0.offset % 2 == 0 }.map { String($0.element) }
            XCTAssertEqual(names, chains.first!.map { $0.function ?? "?" })
        }
    }

    /// An exact address resolves to its function; a return address is looked up one byte
    /// earlier but still reported as given: the one just past make_buffer's end is make_buffer.
    /// A return address whose byte before is in no function (padding) is named by its own
    /// byte: such a one was planted (makecontext's __start_context, signal delivery's
    /// __restore_rt), not pushed by a call.
    func testReturnAddressSemantics() throws {
        let exe = try fx.cProgram()
        let m = module(exe)
        let fn = try fx.symbol(exe, "make_buffer")
        let s = Symbolizer()
        let exact = s.symbolize(SymbolizationRequest(module: m, address: fn.address + 1, isReturnAddress: false))
        XCTAssertEqual(exact.frames.last?.function, "make_buffer")
        XCTAssertTrue(fx.functionLines("inline.c", "void *make_buffer").contains(exact.frames.last?.line ?? -1))
        XCTAssertEqual(exact.moduleOffset, fn.address + 1)

        let pastEnd = s.symbolize([(module: m, address: fn.address + fn.size)])[0]
        XCTAssertEqual(pastEnd.frames.last?.function, "make_buffer")
        XCTAssertEqual(pastEnd.frames.last?.address, fn.address + fn.size)
        XCTAssertEqual(pastEnd.moduleOffset, fn.address + fn.size)

        let before = s.symbolize(SymbolizationRequest(module: m, address: fn.address - 1, isReturnAddress: false))
        let atStart = s.symbolize([(module: m, address: fn.address)])[0]
        XCTAssertEqual(atStart.frames.last?.address, fn.address)
        if before.frames.last?.function == nil {
            XCTAssertEqual(atStart.frames.last?.function, "make_buffer", "padding before it: its own byte")
        } else {
            XCTAssertEqual(atStart.frames.last?.function, before.frames.last?.function, "the function before it")
        }
    }

    /// A shared library as if loaded at 0x7f12_3456_0000: runtime address = nm value + bias.
    func testSharedLibraryAtNonZeroBias() throws {
        let bias: UInt64 = 0x7f12_3456_0000
        var libs = [try fx.sharedLibrary()]
        if let lld = try? fx.sharedLibraryLLD() { libs.append(lld) }
        let s = Symbolizer()
        for lib in libs {
            let m = module(lib, loadBias: bias)
            for (name, signature) in [("shlib_make_record", "shlib_make_record(int id"), ("shlib_checksum", "int shlib_checksum(")] {
                let sym = try fx.symbol(lib, name)
                let answer = s.symbolize(SymbolizationRequest(module: m, address: bias + sym.address + 4, isReturnAddress: false))
                let frames = answer.frames
                XCTAssertEqual(frames.last?.function, name, lib)
                XCTAssertEqual(frames.last?.module, lib)
                XCTAssertEqual(frames.last?.address, bias + sym.address + 4)
                XCTAssertEqual(answer.moduleOffset, sym.address + 4)
                XCTAssertEqual(answer.stale, false)
                XCTAssertEqual(frames.last?.file.map { ($0 as NSString).lastPathComponent }, "shlib.c")
                XCTAssertTrue(fx.functionLines("shlib.c", signature).contains(frames.last?.line ?? -1), "\(lib) \(name) line \(frames.last?.line as Any)")
            }
        }
    }

    /// lld puts text at a virtual address ≠ its file offset: the symbolizer must be given
    /// virtual addresses (checked against a file-offset lookup, which lands elsewhere).
    func testVirtualAddressNotFileOffset() throws {
        guard let lib = try? fx.sharedLibraryLLD() else { throw XCTSkip("clang/lld not available") }
        let r = try runProgram("/usr/bin/readelf", ["-lW", lib]).out
        let text = r.split(separator: "\n").first { $0.contains("LOAD") && $0.contains("R E") }
        let fields = text?.split(separator: " ") ?? []
        let offset = UInt64(fields[1].dropFirst(2), radix: 16)!, vaddr = UInt64(fields[2].dropFirst(2), radix: 16)!
        XCTAssertNotEqual(offset, vaddr, "lld layout changed; this test needs text vaddr ≠ offset")
        let sym = try fx.symbol(lib, "shlib_checksum")
        let frames = Symbolizer().symbolize(SymbolizationRequest(module: module(lib), address: sym.address + 1, isReturnAddress: false)).frames
        XCTAssertEqual(frames.last?.function, "shlib_checksum")
    }

    func testCppTemplateMethodDemangled() throws {
        let exe = try fx.cppProgram()
        let sym = try fx.symbols(exe).first { $0.name.hasPrefix("_ZN2ns3FooIiE3bar") }
        let bar = try XCTUnwrap(sym)
        let frames = Symbolizer().symbolize(scan(module(exe), bar)).map(\.frames)
        XCTAssertTrue(frames.allSatisfy { $0.last?.function?.contains("ns::Foo<int>::bar") == true }, "\(frames.map { $0.last?.function })")
        let mark = fx.markerLine("templ.cpp", "Foo::bar start")
        let lines = Set(frames.flatMap { $0.compactMap(\.line) })
        XCTAssertTrue(lines.contains(mark) || lines.contains(mark + 1), "lines \(lines.sorted()) vs marker \(mark)")
        XCTAssertEqual(frames[0].last?.shortFunction, frames[0].last?.function)
    }

    func testAddressOutsideModuleSegments() throws {
        let exe = try fx.cProgram()
        let m = module(exe, loadBias: 0x5555_0000_0000)
        let answer = Symbolizer().symbolize([(module: m, address: 0x5555_0000_0000 + 0x4000_0000)])[0]
        XCTAssertEqual(answer.frames.count, 1)
        XCTAssertNil(answer.frames[0].function)
        XCTAssertEqual(answer.moduleOffset, 0x4000_0000)
        XCTAssertFalse(answer.stale)
    }
}
