// The "program" object of a report.

extension Report {
    /// The traced process and how it ended.
    public struct Program: Codable, Sendable, Equatable {
        /// Path of the executable.
        public var path: String
        /// `argv`, including `argv[0]`.
        public var args: [String]
        /// Process id.
        public var pid: Int32
        /// Exit code; `nil` when the process was killed, exec'd another program or was still
        /// running when the recording stopped.
        public var exitStatus: Int32?
        /// Number of the signal that killed the process; otherwise `nil`.
        public var signal: Int32?

        /// Creates the program description.
        public init(path: String, args: [String], pid: Int32, exitStatus: Int32?, signal: Int32?) {
            self.path = path
            self.args = args
            self.pid = pid
            self.exitStatus = exitStatus
            self.signal = signal
        }

        private enum CodingKeys: String, CodingKey {
            case path, args, pid, exitStatus, signal
        }

        /// Encodes every field; `nil` as `null`.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(path, forKey: .path)
            try c.encode(args, forKey: .args)
            try c.encode(pid, forKey: .pid)
            try c.encode(exitStatus, forKey: .exitStatus)
            try c.encode(signal, forKey: .signal)
        }
    }

    /// The analysis settings that shape the findings.
    public struct Options: Codable, Sendable, Equatable {
        /// Leading cycles not judged for growth.
        public var warmUp: Int
        /// Judged cycles a site may skip and still be called abandoned.
        public var toleratedMisses: Int

        /// Creates the options object.
        public init(warmUp: Int, toleratedMisses: Int) {
            self.warmUp = warmUp
            self.toleratedMisses = toleratedMisses
        }
    }
}
