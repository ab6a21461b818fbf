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
}

extension Symbolizer {
    /// Names the data symbols at `requests` (a module file and one of its virtual addresses,
    /// runtime address − load bias): one answer per request, nil when there is none or the
    /// backend is not llvm-symbolizer (addr2line has no data lookup).
    ///
    /// One `llvm-symbolizer --output-style=JSON` child answers the whole batch of
    /// `DATA "path" 0xADDR` lines (LLVM 14 answers `{"Data":{"Name","Start","Size"}}`; newer
    /// LLVMs add the declaring file and line, not used here). Swift names are demangled like
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
        process.arguments = ["--output-style=JSON"]
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
        let lines = reply.split(separator: UInt8(ascii: "\n"))
        var raw: [(Int, String, UInt64, UInt64)] = []
        for (k, line) in zip(sent, lines) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                  let d = object["Data"] as? [String: Any], let name = d["Name"] as? String, !name.isEmpty
            else { continue }
            func hex(_ v: Any?) -> UInt64 {
                guard let s = v as? String else { return 0 }
                return UInt64(s.hasPrefix("0x") ? String(s.dropFirst(2)) : s, radix: 16) ?? 0
            }
            raw.append((k, name, hex(d["Start"]), hex(d["Size"])))
        }
        let names = demangledNames(raw.map { $0.1 })
        for (k, name, start, size) in raw {
            out[k] = DataSymbol(name: names[name] ?? name, start: start, size: size)
        }
        return out
    }
}
