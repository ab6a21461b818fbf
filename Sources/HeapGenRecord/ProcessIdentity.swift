import CHeapGenCollector
#if canImport(Glibc)
import Glibc
#endif

/// What /proc says about a process: its executable and arguments.
struct ProcessIdentity {
    var executable: String
    var arguments: [String]

    /// Trailing empty arguments taken for a rewritten title's padding.
    static let titlePadding = 4

    /// Reads `/proc/<pid>/exe` and `/proc/<pid>/cmdline`; nil values when unreadable.
    static func read(pid: Int32) -> ProcessIdentity {
        let exe = readLink("/proc/\(pid)/exe") ?? ""
        var args: [String] = []
        let cap = 1 << 20
        let buf = UnsafeMutablePointer<CChar>.allocate(capacity: cap)
        defer { buf.deallocate() }
        let n = hg_read_proc_file(pid, "cmdline", buf, cap)
        if n > 0 {
            let bytes = UnsafeRawBufferPointer(start: buf, count: n)
            for part in bytes.split(separator: 0, omittingEmptySubsequences: false) {
                args.append(String(decoding: part, as: UTF8.self))
            }
            // cmdline ends with a NUL: drop the empty last piece.
            if args.last == "" { args.removeLast() }
            // A process that rewrote its title (sshd's "sshd: [accepted]", setproctitle)
            // NUL-filled the rest of its old arguments: a run of empty ones, which ps does
            // not show either. A few trailing empty arguments may be the program's own.
            var empty = 0
            while empty < args.count - 1 && args[args.count - 1 - empty].isEmpty { empty += 1 }
            if empty >= Self.titlePadding { args.removeLast(empty) }
        }
        return ProcessIdentity(executable: exe, arguments: args)
    }
}

/// Nanoseconds since the Unix epoch.
func wallClockNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// CLOCK_MONOTONIC nanoseconds: the one clock of the collector's timings, also used by the
/// modules above it (the symbol store's `--stats` time, progress lines).
package func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}
