// The addr2line backend, for when no llvm-symbolizer is found: a process per module and batch.

/// The last-resort backend: binutils `addr2line -a -f -i -C -e MODULE`, one short-lived
/// process per module and batch, addresses on stdin. No columns; C++ demangled by `-C`,
/// Swift names are demangled afterwards like llvm-symbolizer's.
final class Addr2LineBackend: SymbolizerBackend {
    let executable: String
    let idleTimeout: Double

    init(executable: String, idleTimeout: Double) {
        self.executable = executable
        self.idleTimeout = idleTimeout
    }

    func lookup(_ queries: [BackendQuery]) -> [LookupOutcome] {
        var results = [LookupOutcome](repeating: .failed, count: queries.count)
        var byPath: [String: [Int]] = [:]
        var paths: [String] = []
        for (i, q) in queries.enumerated() {
            if byPath[q.path] == nil { paths.append(q.path) }
            byPath[q.path, default: []].append(i)
        }
        for path in paths {
            let indices = byPath[path]!
            let addresses = indices.map { queries[$0].address }
            guard let answers = run(path: path, addresses: addresses) else { continue }
            for (k, i) in indices.enumerated() { results[i] = answers[k] }
        }
        return results
    }

    private func run(path: String, addresses: [UInt64]) -> [LookupOutcome]? {
        guard let child = ChildProcess(executable: executable, arguments: ["-a", "-f", "-i", "-C", "-e", path],
                                       removingEnvironment: ["DEBUGINFOD_URLS"]) else { return nil }
        defer { child.terminate() }
        var input = Array(addresses.map { "0x\(String($0, radix: 16))\n" }.joined().utf8)
        var written = 0
        var output: [UInt8] = []
        let timeoutNanos = UInt64(max(0.001, idleTimeout) * 1e9)
        var lastProgress = MonotonicClock.now()
        if input.isEmpty { child.closeInput() }
        while true {
            let now = MonotonicClock.now()
            if now - lastProgress >= timeoutNanos { return nil }
            let ms = Int32(clamping: (timeoutNanos - (now - lastProgress)) / 1_000_000 + 1)
            let wantWrite = written < input.count
            let ready = child.wait(wantWrite: wantWrite, timeoutMilliseconds: ms)
            if ready.writable && wantWrite {
                switch input.withUnsafeBytes({ child.send(UnsafeRawBufferPointer(rebasing: $0[written...])) }) {
                case .progress(let n):
                    written += n
                    lastProgress = MonotonicClock.now()
                    if written == input.count { child.closeInput(); input = [] ; written = 0 }
                case .wouldBlock: break
                case .closed: return nil
                }
            }
            if ready.readable {
                switch child.receive(into: &output) {
                case .progress: lastProgress = MonotonicClock.now()
                case .wouldBlock: break
                case .closed: return Self.parse(String(decoding: output, as: UTF8.self), count: addresses.count)
                }
            }
        }
    }

    /// Parses `-a -f -i` output: per address a `0x…` line, then (function, file:line) pairs,
    /// innermost first.
    static func parse(_ text: String, count: Int) -> [LookupOutcome]? {
        var blocks: [[String]] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("0x"), line.count > 2, line.dropFirst(2).allSatisfy(\.isHexDigit) {
                blocks.append([])
            } else if !blocks.isEmpty, !line.isEmpty {
                blocks[blocks.count - 1].append(String(line))
            }
        }
        guard blocks.count == count else { return nil }
        return blocks.map { lines in
            var frames: [SymbolicatedFrame] = []
            var i = 0
            while i + 1 < lines.count {
                let (file, lineNumber) = splitLocation(lines[i + 1])
                let f = SymbolicatedFrame(backendFunction: lines[i], file: file, line: lineNumber, column: nil)
                if f.function != nil || f.file != nil { frames.append(f) }
                i += 2
            }
            return .frames(frames)
        }
    }

    /// `/a/b.c:12 (discriminator 3)` → ("/a/b.c", 12); `??:?` / `??:0` → ("??", nil).
    static func splitLocation(_ s: String) -> (String?, Int?) {
        var text = Substring(s)
        if let paren = text.range(of: " (discriminator") { text = text[..<paren.lowerBound] }
        guard let colon = text.lastIndex(of: ":") else { return (String(text), nil) }
        return (String(text[..<colon]), Int(text[text.index(after: colon)...]))
    }
}
