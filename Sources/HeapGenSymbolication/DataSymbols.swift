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
        let parsed = Self.parseDataReplies(String(decoding: reply, as: UTF8.self))
        var raw: [(Int, DataSymbol)] = []
        for (k, symbol) in zip(sent, parsed) { if let symbol { raw.append((k, symbol)) } }
        let names = demangledNames(raw.map { $0.1.name })
        for (k, symbol) in raw {
            var named = symbol
            named.name = names[symbol.name] ?? symbol.name
            out[k] = named
        }
        return out
    }

    /// Parses llvm-symbolizer's LLVM-style answers to `DATA` requests, one per request in
    /// order: `NAME`, `START SIZE` (decimal), from LLVM 16 on `FILE:LINE`, then an empty line.
    /// `??` as the name: no symbol (nil); `??:?` or `??:0`: no declaration.
    static func parseDataReplies(_ text: String) -> [DataSymbol?] {
        var blocks = text.components(separatedBy: "\n\n")
        if blocks.last?.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty == true { blocks.removeLast() }
        return blocks.map { block -> DataSymbol? in
            let lines = block.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
            guard lines.count >= 2, lines[0] != "??", !lines[0].isEmpty else { return nil }
            let numbers = lines[1].split(separator: " ").compactMap { UInt64($0) }
            guard numbers.count == 2 else { return nil }
            var symbol = DataSymbol(name: lines[0], start: numbers[0], size: numbers[1])
            if lines.count >= 3, let colon = lines[2].lastIndex(of: ":") {
                let file = String(lines[2][..<colon])
                if file != "??" && !file.isEmpty {
                    symbol.file = file
                    symbol.line = Int(lines[2][lines[2].index(after: colon)...]).flatMap { $0 > 0 ? $0 : nil }
                }
            }
            return symbol
        }
    }
}
