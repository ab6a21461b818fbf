// The "liveAtExit" object of a report.

extension Report {
    /// What was still allocated when the trace ended: the numbers LeakSanitizer and heaptrack
    /// users look for, with the largest sites.
    public struct LiveAtExit: Codable, Sendable, Equatable {
        /// Blocks live at the end of the trace.
        public var objects: UInt64
        /// Requested bytes live at the end of the trace.
        public var bytes: UInt64
        /// The largest sites by live bytes (at most ``ReportBuilder/maxLiveSites``).
        public var sites: [Site]

        /// Creates the section.
        public init(objects: UInt64, bytes: UInt64, sites: [Site]) {
            self.objects = objects
            self.bytes = bytes
            self.sites = sites
        }
    }

    /// One allocation site with what it had live at exit.
    public struct Site: Codable, Sendable, Equatable {
        /// Swift type, `nil` for plain malloc.
        public var typeName: String?
        /// Live blocks at exit.
        public var objects: UInt64
        /// Live bytes at exit.
        public var bytes: UInt64
        /// The allocation stack, innermost first, inlined frames included.
        public var frames: [Frame]

        /// Creates a site.
        public init(typeName: String?, objects: UInt64, bytes: UInt64, frames: [Frame]) {
            self.typeName = typeName
            self.objects = objects
            self.bytes = bytes
            self.frames = frames
        }

        private enum CodingKeys: String, CodingKey {
            case typeName, objects, bytes, frames
        }

        /// Encodes every field; a missing type as `null`.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(typeName, forKey: .typeName)
            try c.encode(objects, forKey: .objects)
            try c.encode(bytes, forKey: .bytes)
            try c.encode(frames, forKey: .frames)
        }
    }
}
