// llvm-symbolizer's answers to DATA requests, LLVM 14 (no declaration) and 16+ (FILE:LINE).

@testable import HeapGenSymbolication
import XCTest

final class DataSymbolTests: XCTestCase {
    func testLLVM21AnswersWithTheDeclaration() {
        let reply = "g_clients\n16448 8\n/src/registry.c:16\n\n??\n0 0\n??:?\n\n"
        let parsed = Symbolizer.parseDataReplies(reply)
        XCTAssertEqual(parsed.count, 2)
        XCTAssertEqual(parsed[0], DataSymbol(name: "g_clients", start: 16448, size: 8, file: "/src/registry.c", line: 16))
        XCTAssertNil(parsed[1], "no symbol there")
    }

    func testLLVM14AnswersWithoutIt() {
        let parsed = Symbolizer.parseDataReplies("g_clients\n16448 8\n\n$s7Fixture8EventBusC6sharedACvpZ\n8264 8\n\n")
        XCTAssertEqual(parsed, [DataSymbol(name: "g_clients", start: 16448, size: 8),
                                DataSymbol(name: "$s7Fixture8EventBusC6sharedACvpZ", start: 8264, size: 8)])
    }

    /// A real lookup through the toolchain's llvm-symbolizer: a C global by name.
    func testRealGlobalIsNamed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("datasym-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "int g_answer = 42; int main(void) { return g_answer; }\n".write(toFile: dir + "/g.c", atomically: true, encoding: .utf8)
        let cc = Process()
        cc.executableURL = URL(fileURLWithPath: "/usr/bin/cc")
        cc.arguments = ["-g", "-o", dir + "/g", dir + "/g.c"]
        try cc.run()
        cc.waitUntilExit()
        try XCTSkipUnless(cc.terminationStatus == 0, "no C compiler")
        let nm = Process(), pipe = Pipe()
        nm.executableURL = URL(fileURLWithPath: "/usr/bin/nm")
        nm.arguments = [dir + "/g"]
        nm.standardOutput = pipe
        try nm.run()
        let out = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        nm.waitUntilExit()
        guard let line = out.split(separator: "\n").first(where: { $0.hasSuffix(" g_answer") }),
              let address = UInt64(line.split(separator: " ")[0], radix: 16) else { return XCTFail(out) }
        let symbolizer = Symbolizer()
        guard case .llvmSymbolizer = symbolizer.backend else { throw XCTSkip("no llvm-symbolizer") }
        let answers = symbolizer.dataSymbols([(dir + "/g", address + 2)])
        XCTAssertEqual(answers.first??.name, "g_answer")
        XCTAssertEqual(answers.first??.start, address)
    }
}
