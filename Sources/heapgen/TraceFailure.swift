import ArgumentParser
import HeapGenRecord
import HeapGenTrace

/// Prints a reader error as one line and turns it into the exit status:
/// 66 when the file cannot be opened, 65 when it is not a valid trace.
func traceFailure(_ error: Error) -> ExitCode {
    standardError("heapgen: \(error)\n")
    if let error = error as? TraceError, error.kind == .io {
        return ExitCode(ExitCodes.cannotOpenTrace)
    }
    return ExitCode(ExitCodes.badTrace)
}
