// Names of global variables (data symbols), for the roots of retention paths.

import Foundation

/// A global variable an address lies in.
public struct DataSymbol: Sendable, Hashable {
    /// The variable's name, demangled (`g_clients`, `static Demo.EventBus.shared`).
    public var name: String
    /// Its first byte, in the module's virtual addresses.
    public var start: UInt64
    /// Its size in bytes (0 when unknown).
    public var size: UInt64
    /// Where it is declared, when the debug info says (LLVM 16 and later answer it).
    public var file: String? = nil
    public var line: Int? = nil
}

extension Symbolizer {
    /// Names the data symbols at `requests` (a module file and one of its virtual addresses,
    /// runtime address − load bias): one answer per request, nil when there is none or the
    /// backend is not llvm-symbolizer (addr2line has no data lookup).
    ///
    /// One `llvm-symbolizer` child answers the whole batch of `DATA "path" 0xADDR` lines, in
    /// its LLVM output style: per request the name (`??`: none), `START SIZE` in decimal, and
    /// from LLVM 16 on the declaring `FILE:LINE` (`??:?`: unknown), then an empty line. (Its
    /// JSON style leaves the declaration out, even in LLVM 21.) Swift names are demangled like
    /// function names. Rare (a few roots a report), so not cached.
    public func dataSymbols(_ requests: [(path: String, address: UInt64)]) -> [DataSymbol?] {
        guard !requests.isEmpty, case .llvmSymbolizer(let tool) = backend else {
            return requests.map { _ in nil }
        }
        var input = ""
        var sent: [Int] = []
        for (i, r) in requests.enumerated() where !r.path.contains("\"") && !r.path.contains("\n") {
            input += "DATA \"\(r.path)\" 0x\(String(r.address, radix: 16))\n"
            sent.append(i)
        }
        var out = [DataSymbol?](repeating: nil, count: requests.count)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = ["--output-style=LLVM"]
        var environment = ProcessInfo.processInfo.environment
        environment["DEBUGINFOD_URLS"] = nil     // never the network
        process.environment = environment
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return out }
        // The replies are a few hundred bytes a request: read after writing would deadlock
        // only for thousands of requests, so write from another thread.
        let data = Data(input.utf8)
        let writer = Thread { stdin.fileHandleForWriting.write(data); try? stdin.fileHandleForWriting.close() }
        writer.start()
        let reply = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: reply, as: UTF8.self)
        let blocks = text.components(separatedBy: "\n\n").map { $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
        var raw: [(Int, String, UInt64, UInt64, String?, Int?)] = []
        for (k, lines) in zip(sent, blocks) {
            guard lines.count >= 2, lines[0] != "??", !lines[0].isEmpty else { continue }
            let numbers = lines[1].split(separator: " ").compactMap { UInt64($0) }
            guard numbers.count == 2 else { continue }
            var file: String? = nil, line: Int? = nil
            if lines.count >= 3, let colon = lines[2].lastIndex(of: ":") {
                let f = String(lines[2][..<colon])
                if f != "??" && !f.isEmpty {
                    file = f
                    line = Int(lines[2][lines[2].index(after: colon)...]).flatMap { $0 > 0 ? $0 : nil }
                }
            }
            raw.append((k, lines[0], numbers[0], numbers[1], file, line))
        }
        let names = demangledNames(raw.map { $0.1 })
        for (k, name, start, size, file, line) in raw {
            out[k] = DataSymbol(name: names[name] ?? name, start: start, size: size, file: file, line: line)
        }
        return out
    }
}
