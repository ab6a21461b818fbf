// How far the reader has got through a trace file, for a progress line on a terminal.

/// Told, as a trace file is read, how many of its bytes have been read so far.
///
/// Readers report through ``current``, a task-local value: a command binds an observer
/// around its work (`TraceReadProgress.$current.withValue(observer) { ... }`) and every
/// ``TraceReader`` opened from a path inside that scope reports to it, whichever module
/// opened it. Reports come once per read-ahead refill (about every MiB), never per record.
public final class TraceReadProgress: @unchecked Sendable {
    /// The observer of the current task (or thread, outside a task); nil: nobody listens.
    @TaskLocal public static var current: TraceReadProgress?

    private let observe: (_ path: String, _ offset: UInt64, _ size: UInt64) -> Void

    /// `observe` is called with the trace's path, the offset read up to, and the file's
    /// size when the reader started it. Called on the reading thread.
    public init(_ observe: @escaping (_ path: String, _ offset: UInt64, _ size: UInt64) -> Void) {
        self.observe = observe
    }

    func read(path: String, offset: UInt64, size: UInt64) {
        observe(path, offset, size)
    }
}
