/// A failure of `heapgen record` before or while the program runs: one line for
/// the user (without the `heapgen: ` prefix) and the exit status to use.
public struct RecordError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var exitCode: Int32

    public init(_ message: String, exitCode: Int32) {
        self.message = message
        self.exitCode = exitCode
    }

    public var description: String { message }
}
