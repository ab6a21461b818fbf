// A progress line for long work, on a terminal only.

import HeapGenRecord
import HeapGenTrace
import HeapGenUnits
#if canImport(Glibc)
import Glibc
#endif

/// One status line on a terminal (standard error, or another descriptor open on it), redrawn in place (`\r`, erase to end of line) at most
/// ten times a second, and erased when the work ends.
///
/// Shown only where a person watches: standard error is a terminal, `TERM` is not `dumb`,
/// `CI` is unset and `HEAPGEN_PROGRESS` is not `0`. Logs, pipes and files never get it, so
/// what heapgen writes there is the same with or without it. Nothing is drawn for work that
/// ends within `HEAPGEN_PROGRESS_DELAY_MS` (default 500 ms).
final class TerminalProgress {
    private let startNanoseconds = monotonicNanoseconds()
    private let delayNanoseconds: UInt64
    private var lastDraw: UInt64 = 0
    private var drawn = false
    /// Where the line goes: standard error, or the controlling terminal.
    private let fd: Int32

    /// Nil when no progress should be shown (see the type's description).
    static func onTerminal(environment env: [String: String] = currentEnvironment()) -> TerminalProgress? {
        guard allowed(env), isatty(2) == 1 else { return nil }
        return TerminalProgress(delayNanoseconds: delay(env), fd: 2)
    }

    /// Nil unless progress may be shown (as for ``onTerminal(environment:)``) and this
    /// process has a controlling terminal it can write to, opened as `fd`.
    static func onControllingTerminal(environment env: [String: String] = currentEnvironment()) -> TerminalProgress? {
        guard allowed(env) else { return nil }
        let fd = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        return TerminalProgress(delayNanoseconds: delay(env), fd: fd)
    }

    /// Progress is wanted: not in CI, not with `TERM=dumb` or `HEAPGEN_PROGRESS=0`.
    private static func allowed(_ env: [String: String]) -> Bool {
        env["HEAPGEN_PROGRESS"] != "0" && env["CI"] == nil && env["TERM"] != "dumb"
    }

    private static func delay(_ env: [String: String]) -> UInt64 {
        (env["HEAPGEN_PROGRESS_DELAY_MS"].flatMap { UInt64($0) } ?? 500) * 1_000_000
    }

    private init(delayNanoseconds: UInt64, fd: Int32) {
        self.delayNanoseconds = delayNanoseconds
        self.fd = fd
    }

    deinit {
        if fd != 2 { close(fd) }
    }

    /// Redraws the line with `text` (cut to the terminal's width), unless the last draw was
    /// under 100 ms ago or the work began less than the delay ago. `force` skips the 100 ms rule.
    func show(_ text: @autoclosure () -> String, force: Bool = false) {
        let now = monotonicNanoseconds()
        guard now - startNanoseconds >= delayNanoseconds else { return }
        guard force || !drawn || now - lastDraw >= 100_000_000 else { return }
        lastDraw = now
        drawn = true
        var line = text()
        let width = terminalWidth()
        if line.count >= width { line = String(line.prefix(max(width - 1, 1))) }
        write("\r\u{1B}[K" + line)
    }

    /// Prints `text` as a line of its own (no redraw: used where the program shares the terminal).
    func printLine(_ text: String) {
        write(text + "\n")
    }

    /// Erases the line, if one was drawn.
    func clear() {
        guard drawn else { return }
        drawn = false
        write("\r\u{1B}[K")
    }

    private func write(_ text: String) {
        var text = text
        text.withUTF8 { _ = OutputFile.writeAll(UnsafeRawBufferPointer($0), to: fd) }
    }

    private func terminalWidth() -> Int {
        var size = winsize()
        if ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }

    static func currentEnvironment() -> [String: String] {
        var env: [String: String] = [:]
        for name in ["HEAPGEN_PROGRESS", "HEAPGEN_PROGRESS_DELAY_MS", "CI", "TERM"] {
            if let v = getenv(name) { env[name] = String(cString: v) }
        }
        return env
    }

    /// Runs `work` with a line that follows every trace file it reads: the file, how far
    /// into it, and which pass (a report reads a trace more than once). Without a terminal,
    /// just runs `work`.
    static func whileReadingTraces<T>(_ work: () throws -> T) rethrows -> T {
        guard let line = onTerminal() else { return try work() }
        var pass = 0
        var lastPath = ""
        var lastOffset: UInt64 = 0
        let observer = TraceReadProgress { path, offset, size in
            if path != lastPath || offset < lastOffset { pass += 1 }
            lastPath = path
            lastOffset = offset
            let name = path.split(separator: "/").last.map(String.init) ?? path
            let done = size > 0 ? min(offset, size) : offset
            let percent = size > 0 ? Int(done * 100 / size) : 0
            if done == size {
                line.show("heapgen: read \(name) (pass \(pass)), working…", force: true)
            } else {
                line.show("heapgen: reading \(name) (pass \(pass)): \(percent) % of \(HumanUnits.bytes(size))")
            }
        }
        defer { line.clear() }
        return try TraceReadProgress.$current.withValue(observer) { try work() }
    }
}


/// What a recording shows while it runs.
///
/// The program writes to the descriptors heapgen gave it, so where the line may go depends
/// on them. When neither its standard output nor its standard error is a terminal (both go
/// to files or pipes), a line on the controlling terminal is redrawn in place: nothing else
/// writes there. When the program shares the terminal, redrawing could erase a line of its
/// output, so a whole line is printed every 30 seconds instead, never in the middle of a
/// redraw. In CI, with `HEAPGEN_PROGRESS=0`, `TERM=dumb` or `--quiet`: nothing.
final class RecordingProgressLine: @unchecked Sendable {
    private let line: TerminalProgress
    private let redraw: Bool
    private var lastLine: UInt64 = 0

    static func make() -> (@Sendable (RecordingStatus) -> Void)? {
        let shared = isatty(1) == 1 || isatty(2) == 1
        guard let line = shared ? TerminalProgress.onTerminal() : TerminalProgress.onControllingTerminal() else {
            return nil
        }
        let progress = RecordingProgressLine(line: line, redraw: !shared)
        return { progress.update($0) }
    }

    private init(line: TerminalProgress, redraw: Bool) {
        self.line = line
        self.redraw = redraw
    }

    static func describe(_ s: RecordingStatus) -> String {
        let seconds = s.elapsedNanoseconds / 1_000_000_000
        let clock = "\(seconds / 60):" + (seconds % 60 < 10 ? "0" : "") + "\(seconds % 60)"
        let processes = s.liveProcesses == 1 ? "1 process" : "\(s.liveProcesses) processes"
        return "heapgen: recording \(clock), \(processes), \(HumanUnits.count(s.events)) events, "
            + "\(HumanUnits.bytes(s.bytesWritten)) written"
    }

    private func update(_ status: RecordingStatus) {
        if redraw {
            if status.done { line.clear() } else { line.show(Self.describe(status)) }
            return
        }
        guard !status.done else { return }
        let period: UInt64 = 30_000_000_000
        if status.elapsedNanoseconds / period > lastLine {
            lastLine = status.elapsedNanoseconds / period
            line.printLine(Self.describe(status))
        }
    }
}
