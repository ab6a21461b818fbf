// Reader and trace-point errors as heapgen prints them, and their exit statuses.

import ArgumentParser
import HeapGenAnalysis
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

/// `traceFailure(_:)` for the commands that take a point in a trace (`diff --from/--to/--at`,
/// `export --at`): a point the trace does not have is a usage error (one line, 64).
func pointOrTraceFailure(_ error: Error) -> ExitCode {
    if let error = error as? TracePointError {
        standardError("heapgen: \(error)\n")
        return ExitCode(ExitCodes.usage)
    }
    return traceFailure(error)
}

/// Says once per trace, on standard error, that a trace was read without its end (its
/// collector was killed): `heapgen: warning: app.trace: truncated: 1,234 bytes at the end
/// ignored; no end record: the collector was killed or is still recording (read the records before the cut)`.
/// Returns the salvaged traces.
@discardableResult
func reportSalvagedTraces() -> [TraceSalvage] {
    let salvaged = TraceSalvageLog.take()
    for s in salvaged {
        standardError("heapgen: warning: \(s.file): \(s.notice) (read the records before the cut)\n")
    }
    return salvaged
}
