// One finding of a report.

extension Report {
    /// A site (stack and Swift type) whose memory the cycles left behind, or a cache.
    public struct Finding: Codable, Sendable, Equatable {
        /// Kinds, in report order.
        public enum Kind: String, Codable, Sendable, CaseIterable {
            /// Grew in every judged cycle (up to the tolerated misses) and was still there at the
            /// final snapshot: referenced, never used again.
            case abandoned
            /// Every block live at exit was unreachable.
            case leaked
            /// Filled early, then flat: not a failure.
            case cache
        }

        /// Abandoned, leaked or cache.
        public var kind: Kind
        /// Swift type of the objects, `nil` for plain malloc.
        public var typeName: String?
        /// The allocation stack, innermost first, inlined frames included.
        public var frames: [Frame]
        /// Index in ``frames`` of the first frame in the program's own code (see ``OwnCode``);
        /// `nil` if there is none.
        public var userFrame: Int?
        /// Cycles judged.
        public var cycles: Int
        /// Judged cycles that grew.
        public var cyclesWithGrowth: Int
        /// Change of live objects in every cycle, warm-up included (index 0 = cycle 1).
        public var objectsPerCycle: [Int]
        /// Change of live bytes in every cycle, warm-up included.
        public var bytesPerCycle: [Int]
        /// Mean bytes per judged cycle, rounded.
        public var averageBytesPerCycle: Int
        /// Blocks allocated in judged cycles and still live at the final snapshot.
        public var survivingObjects: UInt64
        /// Bytes of those blocks.
        public var survivingBytes: UInt64
        /// Set when the recording cut the stack at its frame limit: the number of frames
        /// recorded (the outermost callers are missing). `nil` for a complete stack.
        public var stackTruncatedAt: Int?

        /// Creates a finding.
        public init(kind: Kind, typeName: String?, frames: [Frame], userFrame: Int?, cycles: Int,
                    cyclesWithGrowth: Int, objectsPerCycle: [Int], bytesPerCycle: [Int], averageBytesPerCycle: Int,
                    survivingObjects: UInt64, survivingBytes: UInt64, stackTruncatedAt: Int? = nil) {
            self.kind = kind
            self.typeName = typeName
            self.frames = frames
            self.userFrame = userFrame
            self.cycles = cycles
            self.cyclesWithGrowth = cyclesWithGrowth
            self.objectsPerCycle = objectsPerCycle
            self.bytesPerCycle = bytesPerCycle
            self.averageBytesPerCycle = averageBytesPerCycle
            self.survivingObjects = survivingObjects
            self.survivingBytes = survivingBytes
            self.stackTruncatedAt = stackTruncatedAt
        }

        /// Mean change of live objects over the judged (last ``cycles``) cycles; 0 if none.
        public var averageObjectsPerCycle: Double {
            let judged = objectsPerCycle.suffix(max(0, cycles))
            return judged.isEmpty ? 0 : Double(judged.reduce(0, +)) / Double(judged.count)
        }

        /// The frame at ``userFrame``, if any.
        public var userFrameValue: Frame? {
            userFrame.flatMap { frames.indices.contains($0) ? frames[$0] : nil }
        }

        private enum CodingKeys: String, CodingKey {
            case kind, typeName, frames, userFrame, cycles, cyclesWithGrowth, objectsPerCycle, bytesPerCycle
            case averageBytesPerCycle, survivingObjects, survivingBytes, stackTruncatedAt
        }

        /// Encodes every field; `nil` as `null`.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(kind, forKey: .kind)
            try c.encode(typeName, forKey: .typeName)
            try c.encode(frames, forKey: .frames)
            try c.encode(userFrame, forKey: .userFrame)
            try c.encode(cycles, forKey: .cycles)
            try c.encode(cyclesWithGrowth, forKey: .cyclesWithGrowth)
            try c.encode(objectsPerCycle, forKey: .objectsPerCycle)
            try c.encode(bytesPerCycle, forKey: .bytesPerCycle)
            try c.encode(averageBytesPerCycle, forKey: .averageBytesPerCycle)
            try c.encode(survivingObjects, forKey: .survivingObjects)
            try c.encode(survivingBytes, forKey: .survivingBytes)
            try c.encode(stackTruncatedAt, forKey: .stackTruncatedAt)
        }
    }
}
