/// How a recording is going, for a progress line (``RecordOptions/progress``).
public struct RecordingStatus: Sendable, Equatable {
    /// Since the recording began.
    public var elapsedNanoseconds: UInt64
    /// Traced process images whose rings are being drained now.
    public var liveProcesses: Int
    /// Traces written so far, finished ones included.
    public var traces: Int
    /// Heap events (allocations, frees) written to all traces so far.
    public var events: UInt64
    /// Bytes written to all trace files so far.
    public var bytesWritten: UInt64
    /// The recording has ended: this is the last status.
    public var done: Bool

    public init(elapsedNanoseconds: UInt64, liveProcesses: Int, traces: Int, events: UInt64, bytesWritten: UInt64,
                done: Bool = false) {
        self.done = done
        self.elapsedNanoseconds = elapsedNanoseconds
        self.liveProcesses = liveProcesses
        self.traces = traces
        self.events = events
        self.bytesWritten = bytesWritten
    }
}
