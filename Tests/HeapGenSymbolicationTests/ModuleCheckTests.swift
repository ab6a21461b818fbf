import Foundation
import XCTest
@testable import HeapGenSymbolication

final class ModuleCheckTests: XCTestCase {
    let fx = Fixtures.shared

    /// Our ELF note parser agrees with readelf on fixtures and on libswiftCore.
    func testBuildIDMatchesReadelf() throws {
        var files = [try fx.cProgram(), try fx.sharedLibrary(), try fx.swiftProgram(optimized: false)]
        let core = "/opt/swift/usr/lib/swift/linux/libswiftCore.so"
        if FileManager.default.fileExists(atPath: core) { files.append(core) }
        for f in files {
            let out = try runProgram("/usr/bin/readelf", ["-n", f]).out
            let line = try XCTUnwrap(out.split(separator: "\n").first { $0.contains("Build ID:") })
            let hex = String(line.split(separator: ":").last!.trimmingCharacters(in: .whitespaces))
            XCTAssertEqual(BuildID.hex(buildID(of: f)), hex, f)
            let elf = try ELFFile.read(path: f).get()
            XCTAssertFalse(elf.loads.isEmpty)
        }
        XCTAssertEqual(ELFFile.read(path: "/etc/hostname"), .failure(.notELF))
        if case .failure(.cannotOpen) = ELFFile.read(path: "/nonexistent/x") {} else { XCTFail("expected cannotOpen") }
    }

    func testWrongBuildIDIsStale() throws {
        let exe = try fx.cProgram()
        var m = module(exe)
        m.buildID = [UInt8](repeating: 0xAB, count: 20)
        let sym = try fx.symbol(exe, "compute_total")
        let answer = Symbolizer(options: .init(debugFileDirectories: [])).symbolize([(module: m, address: sym.address + 1)])[0]
        XCTAssertEqual(answer, SymbolizationResult(frames: [SymbolicatedFrame(module: exe, address: sym.address + 1,
                                                                              moduleOffset: sym.address + 1)],
                                                   moduleOffset: sym.address + 1, stale: true))
    }

    func testMissingFileIsStale() throws {
        let m = Module(path: "\(fx.dir)/does-not-exist.so", buildID: [1, 2, 3, 4], loadBias: 0x1000)
        let answer = Symbolizer().symbolize([(module: m, address: 0x1234)])[0]
        XCTAssertEqual(answer.frames.count, 1)
        XCTAssertNil(answer.frames[0].function)
        XCTAssertTrue(answer.stale)
        XCTAssertEqual(answer.moduleOffset, 0x234)
        XCTAssertEqual(StackSymbolication.unknownName(module: answer.frames[0].module, offset: answer.moduleOffset,
                                                      address: answer.frames[0].address), "does-not-exist.so+0x234")
    }

    /// A module rebuilt since the trace: stale, but a debug file with the recorded build ID in
    /// a debug directory (`.build-id/ab/cdef….debug`) still gives names.
    func testRebuiltModuleUsesDebugFileByBuildID() throws {
        let dir = "\(fx.dir)/rebuilt"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let lib = "\(dir)/libshlib.so"
        let gcc = try XCTUnwrap(findTool(["gcc"]))
        XCTAssertEqual(try runProgram(gcc, ["-shared", "-fPIC", "-O2", "-g", fx.source("shlib.c"), "-o", lib]).status, 0)
        let recorded = module(lib, loadBias: 0x7f00_0000_0000)
        let sym = try fx.symbol(lib, "shlib_checksum")

        // Keep the debug info by build ID, then rebuild the library differently.
        let debugRoot = "\(dir)/debug"
        let debugPath = try XCTUnwrap(BuildID.debugFilePath(recorded.buildID, in: debugRoot))
        try FileManager.default.createDirectory(atPath: (debugPath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let objcopy = try XCTUnwrap(findTool(["objcopy", "/opt/swift/usr/bin/llvm-objcopy"]))
        XCTAssertEqual(try runProgram(objcopy, ["--only-keep-debug", lib, debugPath]).status, 0)
        XCTAssertEqual(try runProgram(gcc, ["-shared", "-fPIC", "-O2", "-g", "-DREBUILT", fx.source("shlib.c"), "-o", lib]).status, 0)
        XCTAssertNotEqual(buildID(of: lib), recorded.buildID)

        let request = SymbolizationRequest(module: recorded, address: recorded.loadBias + sym.address + 2, isReturnAddress: false)
        let without = Symbolizer(options: .init(debugFileDirectories: [])).symbolize(request)
        XCTAssertEqual(without.frames.count, 1)
        XCTAssertNil(without.frames[0].function)
        XCTAssertTrue(without.stale)

        let with = Symbolizer(options: .init(debugFileDirectories: [debugRoot])).symbolize(request)
        XCTAssertEqual(with.frames.last?.function, "shlib_checksum")
        XCTAssertEqual(with.frames.last?.module, lib)
        XCTAssertTrue(with.stale)
    }

    func testDebugFilePathLayout() {
        XCTAssertEqual(BuildID.debugFilePath([0x21, 0xe5, 0xd9, 0x67], in: "/usr/lib/debug/"), "/usr/lib/debug/.build-id/21/e5d967.debug")
        XCTAssertNil(BuildID.debugFilePath([0x21], in: "/x"))
        XCTAssertEqual(BuildID.bytes(hex: "21e5D9"), [0x21, 0xe5, 0xd9])
        XCTAssertNil(BuildID.bytes(hex: "2"))
    }
}
