// The "liveAtExit" object of a report.

extension Report {
    /// What was still allocated when the trace ended: the numbers LeakSanitizer and heaptrack
    /// users look for, with the largest sites.
    public struct LiveAtExit: Codable, Sendable, Equatable {
        /// Blocks live at the end of the trace.
        public var objects: UInt64
        /// Requested bytes live at the end of the trace.
        public var bytes: UInt64
        /// The largest sites by live bytes (at most ``ReportBuilder/maxLiveSites``), start-up
        /// runtime blocks left out (they are in ``startup``).
        public var sites: [Site]
        /// Blocks the platform's libraries allocated at start-up, before `main`, with no frame
        /// in the program's code (libstdc++'s emergency exception-handling pool): counted in
        /// ``objects`` and ``bytes``, never in ``sites``.
        public var startup: Startup

        /// Creates the section.
        public init(objects: UInt64, bytes: UInt64, sites: [Site], startup: Startup = Startup()) {
            self.objects = objects
            self.bytes = bytes
            self.sites = sites
            self.startup = startup
        }

        private enum CodingKeys: String, CodingKey {
            case objects, bytes, sites, startup
        }

        /// Decodes the section; reports written before `startup` existed have none.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            objects = try c.decode(UInt64.self, forKey: .objects)
            bytes = try c.decode(UInt64.self, forKey: .bytes)
            sites = try c.decode([Site].self, forKey: .sites)
            startup = try c.decodeIfPresent(Startup.self, forKey: .startup) ?? Startup()
        }
    }

    /// Start-up runtime blocks live at exit: allocated by platform libraries' static
    /// initialisers, run by the dynamic loader before `main` (see ``LiveAtExit/startup``).
    public struct Startup: Codable, Sendable, Equatable {
        /// Blocks, all parts together.
        public var objects: UInt64
        /// Requested bytes, all parts together.
        public var bytes: UInt64
        /// One entry per allocating library (libstdc++'s pool an entry of its own), largest first.
        public var parts: [StartupPart]

        /// Creates the summary.
        public init(objects: UInt64 = 0, bytes: UInt64 = 0, parts: [StartupPart] = []) {
            self.objects = objects
            self.bytes = bytes
            self.parts = parts
        }
    }

    /// The start-up blocks of one library.
    public struct StartupPart: Codable, Sendable, Equatable {
        /// What they are: `libstdc++ emergency exception-handling pool`, else
        /// `start-up blocks of libfoo.so.1`.
        public var name: String
        /// The library that allocated them (its path).
        public var module: String
        /// Blocks.
        public var objects: UInt64
        /// Requested bytes.
        public var bytes: UInt64

        /// Creates a part.
        public init(name: String, module: String, objects: UInt64, bytes: UInt64) {
            self.name = name
            self.module = module
            self.objects = objects
            self.bytes = bytes
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
