import Foundation
import XCTest
@testable import HeapGenSymbolication

/// Runs a program, returns (exit status, stdout, stderr).
@discardableResult
func runProgram(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, out: String, err: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    if let environment { p.environment = environment }
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    try p.run()
    // Read both before waiting so a chatty child can't fill a pipe and stall.
    let errData = LockedData()
    let t = Thread { errData.set(err.fileHandleForReading.readDataToEndOfFile()) }
    t.start()
    let o = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    while !errData.done { usleep(1000) }
    return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: errData.data, as: UTF8.self))
}

final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var _data = Data()
    private var _done = false
    func set(_ d: Data) { lock.lock(); _data = d; _done = true; lock.unlock() }
    var done: Bool { lock.lock(); defer { lock.unlock() }; return _done }
    var data: Data { lock.lock(); defer { lock.unlock() }; return _data }
}

/// First executable found among the candidates / on PATH.
func findTool(_ names: [String]) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for n in names {
        if n.hasPrefix("/") { if FileManager.default.isExecutableFile(atPath: n) { return n } else { continue } }
        for d in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(d)/\(n)") {
            return "\(d)/\(n)"
        }
    }
    return nil
}

struct Symbol {
    var address: UInt64
    var size: UInt64
    var name: String
}

/// Fixture sources in the package and binaries compiled from them into one temp dir per run.
final class Fixtures: @unchecked Sendable {
    static let shared = Fixtures()

    let sourceDir: String = {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        return here.appendingPathComponent("Fixtures").path
    }()
    let dir: String
    private let lock = NSLock()
    private var built: [String: Result<String, Error>] = [:]

    struct BuildFailure: Error, CustomStringConvertible { var description: String }

    init() {
        // Remove what earlier runs (now gone) left behind.
        let tmp = NSTemporaryDirectory()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? [] where name.hasPrefix("heapgen-symbolication-") {
            let parts = name.split(separator: "-")
            if parts.count >= 3, let pid = Int32(parts[2]), pid != getpid(), kill(pid, 0) != 0 && errno == ESRCH {
                try? FileManager.default.removeItem(atPath: tmp + "/" + name)
            }
        }
        let base = NSTemporaryDirectory() + "heapgen-symbolication-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        dir = base
    }

    func source(_ name: String) -> String { "\(sourceDir)/\(name)" }

    /// Builds once; `output` is the file name in the temp dir.
    func build(_ output: String, _ tool: String, _ args: [String]) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let r = built[output] { return try r.get() }
        let path = "\(dir)/\(output)"
        let result: Result<String, Error>
        do {
            guard let exe = findTool([tool]) else { throw BuildFailure(description: "\(tool) not found") }
            let r = try runProgram(exe, args + ["-o", path])
            result = r.status == 0 ? .success(path) : .failure(BuildFailure(description: "\(tool) \(args): \(r.err)"))
        } catch { result = .failure(error) }
        built[output] = result
        return try result.get()
    }

    func cProgram() throws -> String {
        try build("inline_c", "gcc", ["-O2", "-g", "-fomit-frame-pointer", source("inline.c")])
    }
    func sharedLibrary() throws -> String {
        try build("libshlib.so", "gcc", ["-shared", "-fPIC", "-O2", "-g", source("shlib.c")])
    }
    /// Linked by lld: its text segment's virtual address differs from its file offset.
    func sharedLibraryLLD() throws -> String {
        try build("libshlib_lld.so", "clang", ["-shared", "-fPIC", "-O2", "-g", "-fuse-ld=lld", source("shlib.c")])
    }
    func cppProgram() throws -> String {
        try build("templ_cpp", "g++", ["-O2", "-g", source("templ.cpp")])
    }
    func swiftProgram(optimized: Bool) throws -> String {
        try build(optimized ? "swift_release" : "swift_debug", "swiftc",
                  ["-g", optimized ? "-O" : "-Onone", "-module-name", "Fixture", source("fixture.swift")])
    }

    /// Defined symbols with sizes (`nm -S --defined-only`), addresses are file virtual addresses.
    func symbols(_ binary: String) throws -> [Symbol] {
        let nm = findTool(["nm", "llvm-nm", "/opt/swift/usr/bin/llvm-nm"])!
        let r = try runProgram(nm, ["-S", "--defined-only", binary])
        var out: [Symbol] = []
        for line in r.out.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: true)
            guard parts.count == 4, let a = UInt64(parts[0], radix: 16), let s = UInt64(parts[1], radix: 16) else { continue }
            out.append(Symbol(address: a, size: s, name: String(parts[3])))
        }
        return out
    }

    func symbol(_ binary: String, _ name: String) throws -> Symbol {
        guard let s = try symbols(binary).first(where: { $0.name == name }) else {
            throw BuildFailure(description: "no symbol \(name) in \(binary)")
        }
        return s
    }

    /// 1-based line of the first line containing `MARK: label`.
    func markerLine(_ file: String, _ label: String) -> Int {
        let text = (try? String(contentsOfFile: source(file), encoding: .utf8)) ?? ""
        for (i, l) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() where l.contains("MARK: \(label)") {
            return i + 1
        }
        XCTFail("no marker \(label) in \(file)")
        return -1
    }

    /// Lines of a C function: from the line containing `signature` to the first `}` in column 0.
    func functionLines(_ file: String, _ signature: String) -> ClosedRange<Int> {
        let lines = ((try? String(contentsOfFile: source(file), encoding: .utf8)) ?? "")
            .split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.contains(signature) }),
              let end = lines[start...].firstIndex(where: { $0.hasPrefix("}") }) else {
            XCTFail("no function \(signature) in \(file)")
            return 0...0
        }
        return (start + 1)...(end + 1)
    }
}

/// The build ID of a file as our own parser reads it.
func buildID(of path: String) -> [UInt8] {
    (try? ELFFile.read(path: path).get().buildID) ?? []
}

func module(_ path: String, loadBias: UInt64 = 0) -> Module {
    Module(path: path, buildID: buildID(of: path), loadBias: loadBias)
}

/// Requests for every `step`-th byte of a function (exact addresses, not return addresses).
func scan(_ m: Module, _ s: Symbol, step: UInt64 = 1) -> [SymbolizationRequest] {
    stride(from: s.address, to: s.address + max(s.size, 1), by: Int(step)).map {
        SymbolizationRequest(module: m, address: $0 + m.loadBias, isReturnAddress: false)
    }
}
