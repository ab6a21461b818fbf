import Foundation
import XCTest
@testable import HeapGenSymbolication

/// Missing, hanging, crashing and garbling symbolizers: frames degrade to module+offset, never
/// a crash or a hang.
final class RobustnessTests: XCTestCase {
    let fx = Fixtures.shared

    private func script(_ name: String, _ body: String) throws -> String {
        let path = "\(fx.dir)/\(name)"
        try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    private func requests() throws -> [SymbolizationRequest] {
        let exe = try fx.cProgram()
        let m = module(exe, loadBias: 0x1000_0000)
        return try ["compute_total", "make_buffer", "main"].map {
            SymbolizationRequest(module: m, address: m.loadBias + (try fx.symbol(exe, $0)).address + 1, isReturnAddress: false)
        }
    }

    private func assertUnsymbolized(_ results: [SymbolizationResult], _ reqs: [SymbolizationRequest], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(results.count, reqs.count, file: file, line: line)
        for (r, q) in zip(results, reqs) {
            XCTAssertEqual(r, SymbolizationResult(frames: [SymbolicatedFrame(module: q.module.path, address: q.address,
                                                                             moduleOffset: q.moduleOffset)],
                                                  moduleOffset: q.moduleOffset), file: file, line: line)
        }
    }

    func testNoSymbolizerGivesModuleAndOffset() throws {
        let s = Symbolizer(options: .init(allowFallbacks: false, environment: ["HEAPGEN_SYMBOLIZER": "/nonexistent", "PATH": "/usr/bin:/bin"]))
        XCTAssertEqual(s.backend, .none)
        let reqs = try requests()
        assertUnsymbolized(s.symbolize(reqs), reqs)
    }

    func testBadOverrideFallsBackWhenAllowed() throws {
        let s = Symbolizer(options: .init(environment: ["HEAPGEN_SYMBOLIZER": "/nonexistent", "PATH": "/usr/bin:/bin"]))
        XCTAssertNotEqual(s.backend, .none)
        XCTAssertEqual(s.symbolize(try requests()[0]).frames.last?.function, "compute_total")
    }

    func testHungSymbolizerTimesOut() throws {
        let hang = try script("hang-symbolizer", "exec sleep 60")
        let s = Symbolizer(options: .init(symbolizerPath: hang, allowFallbacks: false, timeout: 0.3))
        XCTAssertEqual(s.backend, .llvmSymbolizer(hang))
        let reqs = try requests()
        let start = Date()
        assertUnsymbolized(s.symbolize(reqs), reqs)
        // 3 requests, each charged one timeout at most (restarts are bounded too).
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
    }

    func testCrashingSymbolizer() throws {
        let crash = try script("crash-symbolizer", "read line; kill -SEGV $$")
        let s = Symbolizer(options: .init(symbolizerPath: crash, allowFallbacks: false, timeout: 5))
        let reqs = try requests()
        assertUnsymbolized(s.symbolize(reqs), reqs)
        // A later batch still works the same way (no stuck state).
        assertUnsymbolized(s.symbolize(reqs), reqs)
    }

    func testGarbledOutput() throws {
        let garble = try script("garble-symbolizer", "while read line; do echo 'not json {'; done")
        let s = Symbolizer(options: .init(symbolizerPath: garble, allowFallbacks: false, timeout: 5))
        let reqs = try requests()
        assertUnsymbolized(s.symbolize(reqs), reqs)
    }

    /// Replies that answer other addresses (out of step) are detected, not misattributed.
    func testDesynchronizedOutput() throws {
        let liar = try script("liar-symbolizer",
            #"while read line; do echo '{"Address":"0x1","ModuleName":"x","Symbol":[{"FunctionName":"wrong","FileName":"w.c","Line":1,"Column":1}]}'; done"#)
        let s = Symbolizer(options: .init(symbolizerPath: liar, allowFallbacks: false, timeout: 5))
        let reqs = try requests()
        assertUnsymbolized(s.symbolize(reqs), reqs)
    }

    /// The real llvm-symbolizer killed between batches is restarted.
    func testRestartsAfterChildIsKilled() throws {
        let s = Symbolizer()
        guard case .llvmSymbolizer = s.backend, let backend = s.lookupBackend as? LLVMSymbolizerBackend else {
            throw XCTSkip("no llvm-symbolizer")
        }
        let reqs = try requests()
        XCTAssertEqual(s.symbolize(reqs).map { $0.frames.last?.function }, ["compute_total", "make_buffer", "main"])
        let pid = try XCTUnwrap(backend.childPID)
        kill(pid, SIGKILL)
        usleep(50_000)
        s.clearCache()
        XCTAssertEqual(s.symbolize(reqs).map { $0.frames.last?.function }, ["compute_total", "make_buffer", "main"],
                       "a child found dead before a batch is replaced without losing a request")
        XCTAssertEqual(backend.spawnCount, 2)
    }

    /// Cached lookups don't talk to the child again; duplicates in a batch are looked up once.
    func testCacheAndDeduplication() throws {
        let s = Symbolizer()
        let reqs = try requests()
        let batch = reqs + reqs + reqs
        let first = s.symbolize(batch)
        XCTAssertEqual(first.map { $0.frames.last?.function }, Array(repeating: ["compute_total", "make_buffer", "main"], count: 3).flatMap { $0 })
        // Same module at another load bias: same names, addresses of the request.
        let moved = reqs.map { r -> SymbolizationRequest in
            var m = r.module; m.loadBias = 0x7000_0000
            return SymbolizationRequest(module: m, address: r.moduleOffset + 0x7000_0000, isReturnAddress: false)
        }
        let second = s.symbolize(moved)
        XCTAssertEqual(second.map { $0.frames.last?.function }, ["compute_total", "make_buffer", "main"])
        XCTAssertEqual(second.map { $0.frames.last!.address }, moved.map(\.address))
        XCTAssertEqual(second.map(\.moduleOffset), reqs.map(\.moduleOffset))
        if let backend = s.lookupBackend as? LLVMSymbolizerBackend { XCTAssertEqual(backend.spawnCount, 1) }
    }

    func testOddPathsAreNotSentToTheSymbolizer() {
        XCTAssertEqual(LLVMSymbolizerBackend.requestLine(BackendQuery(path: "/a b/c", address: 0x10)), "\"/a b/c\" 0x10\n")
        XCTAssertEqual(LLVMSymbolizerBackend.requestLine(BackendQuery(path: "/a\"b", address: 0x10)), "'/a\"b' 0x10\n")
        XCTAssertNil(LLVMSymbolizerBackend.requestLine(BackendQuery(path: "/a\"'b", address: 1)))
        XCTAssertNil(LLVMSymbolizerBackend.requestLine(BackendQuery(path: "/a\nb", address: 1)))
    }

    func testSymbolizerPathWithSpaces() throws {
        let dir = "\(fx.dir)/with space"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let copy = "\(dir)/inline c"
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: try fx.cProgram(), toPath: copy)
        let sym = try fx.symbol(copy, "make_buffer")
        let f = Symbolizer().symbolize(SymbolizationRequest(module: module(copy), address: sym.address + 1, isReturnAddress: false))
        XCTAssertEqual(f.frames.last?.function, "make_buffer")
    }

    func testReplyParsing() {
        let ok = #"{"Address":"0x11fe","ModuleName":"m","Symbol":[{"Column":22,"Discriminator":0,"FileName":"/a/inline.c","FunctionName":"scale_value","Line":6,"StartAddress":"","StartFileName":"","StartLine":4},{"Column":0,"FileName":"","FunctionName":"compute_total","Line":0}]}"#
        XCTAssertEqual(LLVMSymbolizerBackend.parseReply(Array(ok.utf8), expecting: 0x11fe),
                       .answer(.frames([SymbolicatedFrame(function: "scale_value", file: "/a/inline.c", line: 6, column: 22, module: nil, address: 0),
                                        SymbolicatedFrame(function: "compute_total", module: nil, address: 0)])))
        XCTAssertEqual(LLVMSymbolizerBackend.parseReply(Array(ok.utf8), expecting: 0x11ff), .desynchronized)
        let none = #"{"Address":"0x5","ModuleName":"m","Symbol":[{"Column":0,"FileName":"","FunctionName":"","Line":0}]}"#
        XCTAssertEqual(LLVMSymbolizerBackend.parseReply(Array(none.utf8), expecting: 5), .answer(.frames([])))
        let err = #"{"Address":"0x10","Error":{"Message":"No such file or directory"},"ModuleName":"/x"}"#
        XCTAssertEqual(LLVMSymbolizerBackend.parseReply(Array(err.utf8), expecting: 0x10), .answer(.failed))
        XCTAssertEqual(LLVMSymbolizerBackend.parseReply(Array("{\"Address\":".utf8), expecting: 0), .garbled)
        XCTAssertEqual(LLVMSymbolizerBackend.parseReply([], expecting: 0), .garbled)
    }

    /// Concurrent callers are serialized, each gets its own answers.
    func testConcurrentCallers() throws {
        let s = Symbolizer()
        let reqs = try requests()
        let results = LockedResults()
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let r = s.symbolize(Array(repeating: reqs[i % 3], count: 50))
            results.add(i, r.map { $0.frames.last?.function ?? "nil" })
        }
        for (i, names) in results.all {
            XCTAssertEqual(Set(names), [["compute_total", "make_buffer", "main"][i % 3]])
        }
    }
}

final class LockedResults: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int: [String]] = [:]
    func add(_ i: Int, _ v: [String]) { lock.lock(); values[i] = v; lock.unlock() }
    var all: [Int: [String]] { lock.lock(); defer { lock.unlock() }; return values }
}
