// One row of the generation table.

extension Report {
    /// One generation: 0 is the setup (before the first mark), then one per cycle, then the
    /// tail after the last mark.
    public struct Generation: Codable, Sendable, Equatable {
        /// 0 = setup.
        public var index: Int
        /// Label of the mark that ends the generation; `nil` for the tail.
        public var label: String?
        /// Allocation calls in the generation.
        public var allocations: UInt64
        /// Frees in the generation.
        public var frees: UInt64
        /// Bytes requested in the generation.
        public var allocatedBytes: UInt64
        /// Live blocks of the whole heap at the closing mark.
        public var liveObjects: UInt64
        /// Live bytes of the whole heap at the closing mark.
        public var liveBytes: UInt64
        /// Blocks allocated here and still live at the final snapshot.
        public var persistentObjects: UInt64
        /// Bytes of those blocks.
        public var persistentBytes: UInt64

        /// Creates a row.
        public init(index: Int, label: String?, allocations: UInt64, frees: UInt64, allocatedBytes: UInt64,
                    liveObjects: UInt64, liveBytes: UInt64, persistentObjects: UInt64, persistentBytes: UInt64) {
            self.index = index
            self.label = label
            self.allocations = allocations
            self.frees = frees
            self.allocatedBytes = allocatedBytes
            self.liveObjects = liveObjects
            self.liveBytes = liveBytes
            self.persistentObjects = persistentObjects
            self.persistentBytes = persistentBytes
        }

        private enum CodingKeys: String, CodingKey {
            case index, label, allocations, frees, allocatedBytes, liveObjects, liveBytes
            case persistentObjects, persistentBytes
        }

        /// Encodes every field; a missing label as `null`.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(index, forKey: .index)
            try c.encode(label, forKey: .label)
            try c.encode(allocations, forKey: .allocations)
            try c.encode(frees, forKey: .frees)
            try c.encode(allocatedBytes, forKey: .allocatedBytes)
            try c.encode(liveObjects, forKey: .liveObjects)
            try c.encode(liveBytes, forKey: .liveBytes)
            try c.encode(persistentObjects, forKey: .persistentObjects)
            try c.encode(persistentBytes, forKey: .persistentBytes)
        }
    }
}
