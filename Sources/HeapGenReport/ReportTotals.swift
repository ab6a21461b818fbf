// The "totals" object of a report.

extension Report {
    /// Counts over the whole trace.
    public struct Totals: Codable, Sendable, Equatable {
        /// The program's allocation calls that returned a block (reallocs included).
        public var allocations: UInt64
        /// `free` of non-NULL pointers plus the old blocks of reallocs.
        public var frees: UInt64
        /// Bytes requested by all allocations.
        public var allocatedBytes: UInt64
        /// Highest live heap (requested bytes).
        public var peakBytes: UInt64
        /// Generation index where ``peakBytes`` was first reached.
        public var peakGeneration: Int
        /// Blocks live at the end of the trace.
        public var liveAtExitObjects: UInt64
        /// Requested bytes live at the end of the trace.
        public var liveAtExitBytes: UInt64
        /// Times the program waited for the collector (its ring was full).
        public var producerWaits: UInt64
        /// Total time of those waits.
        public var producerWaitNanoseconds: UInt64
        /// Events the shim could not record (normally 0).
        public var lostEvents: UInt64
        /// Frees of addresses that were not live (``Report/strayFrees`` explains the first ones).
        public var untrackedFrees: UInt64
        /// Allocations recorded without their stack (the shim's stack store was full): their
        /// sites are unknown. 0 when every stack was stored; reports made before the field
        /// existed decode as 0.
        public var stacksLost: UInt64
        /// The trace holds a leak scan's verdict (recorded with `--leaks`, and the process ran its
        /// exit scan): without one no finding is `leaked`, whatever leaked. Reports made before
        /// the field existed decode as true (unknown: not doubted).
        public var leakScanned: Bool

        /// Creates the totals.
        public init(allocations: UInt64 = 0, frees: UInt64 = 0, allocatedBytes: UInt64 = 0, peakBytes: UInt64 = 0,
                    peakGeneration: Int = 0, liveAtExitObjects: UInt64 = 0, liveAtExitBytes: UInt64 = 0,
                    producerWaits: UInt64 = 0, producerWaitNanoseconds: UInt64 = 0, lostEvents: UInt64 = 0,
                    untrackedFrees: UInt64 = 0, stacksLost: UInt64 = 0, leakScanned: Bool = false) {
            self.allocations = allocations
            self.frees = frees
            self.allocatedBytes = allocatedBytes
            self.peakBytes = peakBytes
            self.peakGeneration = peakGeneration
            self.liveAtExitObjects = liveAtExitObjects
            self.liveAtExitBytes = liveAtExitBytes
            self.producerWaits = producerWaits
            self.producerWaitNanoseconds = producerWaitNanoseconds
            self.lostEvents = lostEvents
            self.untrackedFrees = untrackedFrees
            self.stacksLost = stacksLost
            self.leakScanned = leakScanned
        }

        private enum CodingKeys: String, CodingKey {
            case allocations, frees, allocatedBytes, peakBytes, peakGeneration, liveAtExitObjects, liveAtExitBytes
            case producerWaits, producerWaitNanoseconds, lostEvents, untrackedFrees, stacksLost, leakScanned
        }

        /// Decodes the totals; a missing `stacksLost` (an older report) is 0.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            allocations = try c.decode(UInt64.self, forKey: .allocations)
            frees = try c.decode(UInt64.self, forKey: .frees)
            allocatedBytes = try c.decode(UInt64.self, forKey: .allocatedBytes)
            peakBytes = try c.decode(UInt64.self, forKey: .peakBytes)
            peakGeneration = try c.decode(Int.self, forKey: .peakGeneration)
            liveAtExitObjects = try c.decode(UInt64.self, forKey: .liveAtExitObjects)
            liveAtExitBytes = try c.decode(UInt64.self, forKey: .liveAtExitBytes)
            producerWaits = try c.decode(UInt64.self, forKey: .producerWaits)
            producerWaitNanoseconds = try c.decode(UInt64.self, forKey: .producerWaitNanoseconds)
            lostEvents = try c.decode(UInt64.self, forKey: .lostEvents)
            untrackedFrees = try c.decode(UInt64.self, forKey: .untrackedFrees)
            stacksLost = try c.decodeIfPresent(UInt64.self, forKey: .stacksLost) ?? 0
            leakScanned = try c.decodeIfPresent(Bool.self, forKey: .leakScanned) ?? true
        }
    }
}
