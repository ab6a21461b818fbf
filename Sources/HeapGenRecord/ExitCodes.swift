/// The exit statuses of `heapgen`, in one place (the README documents them).
///
/// `heapgen record` exits with the program's own status when the program ran:
/// its exit code, or 128 + N when a signal N killed it (SIGKILL → 137,
/// SIGSEGV → 139, abort → 134), like a shell. The codes below are heapgen's own.
public enum ExitCodes {
    /// Everything went well (or the recorded program exited with 0).
    public static let success: Int32 = 0
    /// A CI leak gate failed (`--fail-on`, `--max-live-at-exit`): abandoned or leaked memory,
    /// heap growth or memory live at exit above the limits, or an invalid free. LeakSanitizer's default exit code,
    /// so that CI scripts that already treat 23 as "leaks found" keep working; distinct from 1,
    /// which programs use for their own failures.
    public static let gateFailed: Int32 = 23
    /// The command line is wrong (unknown flag, missing argument…). `EX_USAGE`.
    public static let usage: Int32 = 64
    /// The trace file is corrupt, cut inside its first chunk, of an unsupported version, or not a
    /// trace (a trace whose collector was killed is salvaged instead). `EX_DATAERR`.
    public static let badTrace: Int32 = 65
    /// The trace file cannot be opened, or is not a regular file (a FIFO, a device, a
    /// directory: refused without blocking). `EX_NOINPUT`.
    public static let cannotOpenTrace: Int32 = 66
    /// `heapgen mark PID`: that process is not being recorded by heapgen (or
    /// belongs to another user). `EX_UNAVAILABLE`.
    public static let notRecorded: Int32 = 69
    /// heapgen itself failed: the preload library is missing, the trace cannot
    /// be written, or an internal error.
    public static let heapgenFailed: Int32 = 125
    /// The program cannot be traced or run: statically linked, setuid/setgid,
    /// not executable, not an ELF file or script.
    public static let cannotTrace: Int32 = 126
    /// The program was not found (not a file, or not on `PATH`).
    public static let notFound: Int32 = 127

    /// The status a shell reports for a program killed by `signal`: 128 + signal.
    public static func killedBy(signal: Int32) -> Int32 { 128 + signal }
}
