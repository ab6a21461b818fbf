// The llvm-symbolizer backend: one long-lived child, and the reading of its JSON replies.

import Foundation
import HeapGenJSON

/// One long-lived `llvm-symbolizer` child, fed `"PATH" 0xVADDR` lines on stdin, answering one
/// JSON object per line on stdout.
///
/// Invocation: `llvm-symbolizer --output-style=JSON --inlines --demangle --functions=linkage
/// [--debug-file-directory=DIR…]`. Addresses are the module's own virtual addresses
/// (runtime − loadBias, what `nm` prints), never file offsets, and `--relative-address` is
/// not used (it only adds a COFF image base). Requests are pipelined; every reply is checked
/// against the address it answers. A child that dies, garbles its output or stays silent for
/// `idleTimeout` is killed and restarted (a few times per batch); the address being worked on
/// then is reported as failed. DEBUGINFOD_URLS is removed from the child's environment so a
/// lookup never goes to the network.
final class LLVMSymbolizerBackend: SymbolizerBackend {
    let executable: String
    let arguments: [String]
    let idleTimeout: Double
    let maxRestartsPerBatch = 3
    private var child: ChildProcess?
    /// How many children were started (for tests and diagnostics).
    private(set) var spawnCount = 0
    /// The running child's pid, if any.
    var childPID: pid_t? { child?.pid }

    init(executable: String, debugFileDirectories: [String], idleTimeout: Double) {
        self.executable = executable
        self.arguments = Self.arguments(debugFileDirectories: debugFileDirectories)
        self.idleTimeout = idleTimeout
    }

    static func arguments(debugFileDirectories: [String]) -> [String] {
        ["--output-style=JSON", "--inlines", "--demangle", "--functions=linkage"]
            + debugFileDirectories.map { "--debug-file-directory=\($0)" }
    }

    deinit { child?.terminate() }

    /// The request line for a query, nil for a path the line syntax can't carry.
    static func requestLine(_ q: BackendQuery) -> String? {
        let p = q.path
        var doubleQuote = false, singleQuote = false
        for b in p.utf8 {
            switch b {
            case 0x0A, 0x0D: return nil
            case 0x22: doubleQuote = true
            case 0x27: singleQuote = true
            default: break
            }
        }
        if p.isEmpty || (doubleQuote && singleQuote) { return nil }
        let quote = doubleQuote ? "'" : "\""
        return "\(quote)\(p)\(quote) 0x\(String(q.address, radix: 16))\n"
    }

    private func ensureChild() -> ChildProcess? {
        if let child {
            if !child.hasExited() { return child }
            // Died since the last batch (killed, OOM): replace it without blaming a request.
            releaseChild()
        }
        guard let c = ChildProcess(executable: executable, arguments: arguments,
                                   removingEnvironment: ["DEBUGINFOD_URLS"]) else { return nil }
        spawnCount += 1
        child = c
        return c
    }

    func releaseChild() {
        child?.terminate()
        child = nil
    }

    func lookup(_ queries: [BackendQuery]) -> [LookupOutcome] {
        var results = [LookupOutcome](repeating: .failed, count: queries.count)
        var order: [Int] = []          // indices of queries actually sent, in order
        var lines: [[UInt8]] = []
        for (i, q) in queries.enumerated() {
            guard let line = Self.requestLine(q) else { continue }
            order.append(i)
            lines.append(Array(line.utf8))
        }
        var answered = 0               // replies received (index into `order`)
        var restarts = 0
        let timeoutNanos = UInt64(max(0.001, idleTimeout) * 1e9)

        batch: while answered < order.count {
            guard let child = ensureChild() else { break }
            // Everything not yet answered goes to this child.
            var pending: [UInt8] = []
            for k in answered..<order.count { pending.append(contentsOf: lines[k]) }
            var written = 0
            var buffer: [UInt8] = []
            var lastProgress = MonotonicClock.now()
            var failure = false
            var charged = false
            var sentAny = false
            var inputBroken = false

            while answered < order.count {
                let now = MonotonicClock.now()
                if now - lastProgress >= timeoutNanos { failure = true; break }
                let remainingMs = Int32(clamping: (timeoutNanos - (now - lastProgress)) / 1_000_000 + 1)
                let wantWrite = written < pending.count && !inputBroken
                let ready = child.wait(wantWrite: wantWrite, timeoutMilliseconds: remainingMs)
                if ready.writable && wantWrite {
                    let r = pending.withUnsafeBytes { child.send(UnsafeRawBufferPointer(rebasing: $0[written...])) }
                    switch r {
                    case .progress(let n):
                        written += n
                        sentAny = true
                    case .wouldBlock: break
                    case .closed:
                        // Stop writing; replies already made are still read, then EOF ends it.
                        inputBroken = true
                    }
                    if written == pending.count {
                        pending = []; written = 0
                    }
                }
                if ready.readable {
                    let r = child.receive(into: &buffer)
                    var closed = false
                    switch r {
                    case .progress: lastProgress = MonotonicClock.now()
                    case .wouldBlock: break
                    case .closed: closed = true
                    }
                    // Consume complete lines.
                    var start = 0
                    while answered < order.count, let nl = buffer[start...].firstIndex(of: 0x0A) {
                        let line = buffer[start..<nl]
                        start = nl + 1
                        let q = queries[order[answered]]
                        switch Self.parseReply(Array(line), expecting: q.address) {
                        case .answer(let outcome):
                            results[order[answered]] = outcome
                            answered += 1
                        case .garbled:
                            results[order[answered]] = .failed
                            answered += 1
                        case .desynchronized:
                            // Replies no longer line up with requests: start over with a new child.
                            results[order[answered]] = .failed
                            answered += 1
                            failure = true
                            charged = true
                        }
                        if failure { break }
                    }
                    buffer.removeFirst(start)
                    if closed { failure = true }
                    // llvm-symbolizer flushes every line: reading each one as it comes costs a
                    // wakeup, a poll and a read per address. With many replies still due (and
                    // the child's input well stocked), let a few accumulate first.
                    if !failure, order.count - answered > 64, case .progress(let n) = r, n < 16_384 {
                        usleep(200)
                    }
                }
                if failure { break }
            }
            if !failure { break }
            // The child died, hung, or lost track of the requests: replace it. The request it
            // was working on (the likely culprit) is given up unless a desync already charged one.
            releaseChild()
            if !charged && sentAny && answered < order.count { answered += 1 }
            restarts += 1
            if restarts > maxRestartsPerBatch { break batch }
        }
        return results
    }

    enum Reply: Equatable {
        case answer(LookupOutcome)
        case garbled
        case desynchronized
    }

    /// Parses one JSON reply line, e.g.
    /// `{"Address":"0x1190","ModuleName":"m","Symbol":[{"FunctionName":"f","FileName":"a.c","Line":7,"Column":3,…}]}`.
    static func parseReply(_ line: [UInt8], expecting address: UInt64) -> Reply {
        guard let reply = JSONReader.value(line), case .object = reply else { return .garbled }
        guard let addressText = reply["Address"]?.string else { return .garbled }
        let hex = addressText.hasPrefix("0x") || addressText.hasPrefix("0X") ? addressText.dropFirst(2) : Substring(addressText)
        guard let replyAddress = UInt64(hex, radix: 16) else { return .garbled }
        if replyAddress != address { return .desynchronized }
        if reply["Error"] != nil { return .answer(.failed) }
        guard let symbols = reply["Symbol"]?.array else { return .garbled }
        var frames: [SymbolicatedFrame] = []
        for s in symbols {
            let f = SymbolicatedFrame(backendFunction: s["FunctionName"]?.string, file: s["FileName"]?.string,
                                      line: s["Line"]?.int, column: s["Column"]?.int)
            if f.function == nil && f.file == nil && f.line == nil { continue }
            frames.append(f)
        }
        return .answer(.frames(frames))
    }
}
