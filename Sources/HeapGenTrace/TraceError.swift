/// Why a trace could not be written or read.
///
/// ``description`` is one line naming the file, the byte offset and what is wrong, e.g.
/// `app.trace: truncated at byte 81920: no end record (the collector was stopped before it finished)`.
public struct TraceError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// A system call failed (open, read, write...).
        case io
        /// The file does not start with the heapgen trace magic.
        case notATrace
        /// The major version is not 1.
        case unsupportedVersion
        /// Bad CRC, bad chunk length, malformed or misplaced record.
        case corrupt
        /// The file ends early: inside a chunk, or without an `end` record.
        case truncated
    }

    public var kind: Kind
    /// What is wrong, without the file name or offset.
    public var message: String
    /// Byte offset in the file where the problem is, when known.
    public var offset: UInt64?
    /// The file (path as given, or a name for in-memory traces).
    public var file: String

    public init(_ kind: Kind, _ message: String, offset: UInt64? = nil, file: String = "") {
        self.kind = kind
        self.message = message
        self.offset = offset
        self.file = file
    }

    public var description: String {
        var line = file.isEmpty ? "" : "\(file): "
        switch kind {
        case .io: line += "I/O error"
        case .notATrace: line += "not a heapgen trace"
        case .unsupportedVersion: line += "unsupported trace version"
        case .corrupt: line += "corrupt"
        case .truncated: line += "truncated"
        }
        if let offset { line += " at byte \(offset)" }
        if !message.isEmpty { line += ": \(message)" }
        return line
    }
}
