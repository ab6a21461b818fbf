import HeapGenTrace

/// How a process ended, as far as the collector knows.
struct ExitStatus: Equatable {
    var reason: EndReason
    /// Exit code (`.exited`) or signal number (`.signaled`); 0 otherwise.
    var status: Int32

    static let unknown = ExitStatus(reason: .unknown, status: 0)
    static let execed = ExitStatus(reason: .execed, status: 0)
    static let stopped = ExitStatus(reason: .collectorStopped, status: 0)

    static func exited(_ code: Int32) -> ExitStatus { ExitStatus(reason: .exited, status: code) }
    static func signaled(_ signal: Int32) -> ExitStatus { ExitStatus(reason: .signaled, status: signal) }

    /// From a raw `wait` status (HG_K_CHILD_EXIT): exited, killed, or unknown.
    static func fromWaitStatus(_ raw: Int32) -> ExitStatus {
        let signal = raw & 0x7f
        if signal == 0 { return .exited((raw >> 8) & 0xff) }
        return signal != 0x7f ? .signaled(signal) : .unknown
    }

    /// The status `heapgen record` exits with for a root program that ended so:
    /// its exit code, or 128 + the signal number.
    var shellExitCode: Int32 {
        switch reason {
        case .exited: status & 0xFF
        case .signaled: ExitCodes.killedBy(signal: status)
        default: ExitCodes.heapgenFailed
        }
    }
}
