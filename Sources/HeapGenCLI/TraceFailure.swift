import ArgumentParser
import HeapGenRecord
import HeapGenTrace

/// Prints a reader error as one line and turns it into the exit status:
/// 66 when the file cannot be opened (missing, unreadable, or not a regular file: a FIFO,
/// a device, a directory), 65 when it is not a valid trace.
func traceFailure(_ error: Error) -> ExitCode {
    standardError("heapgen: \(error)\n")
    if let error = error as? TraceError, error.kind == .io {
        return ExitCode(ExitCodes.cannotOpenTrace)
    }
    return ExitCode(ExitCodes.badTrace)
}

/// Says once per trace, on standard error, that a trace was read without its end (its
/// collector was killed): `heapgen: warning: app.trace: truncated: 1,234 bytes at the end
/// ignored; no end record: the collector was killed (read the records before the cut)`.
/// Returns the salvaged traces.
@discardableResult
func reportSalvagedTraces() -> [TraceSalvage] {
    let salvaged = TraceSalvageLog.take()
    for s in salvaged {
        standardError("heapgen: warning: \(s.file): \(s.notice) (read the records before the cut)\n")
    }
    return salvaged
}
