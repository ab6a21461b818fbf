// One finding of a report.

import HeapGenAnalysis
import HeapGenSymbolication
import HeapGenUnits

extension Report {
    /// A site (stack and Swift type) whose memory the cycles left behind, or a cache.
    public struct Finding: Codable, Sendable, Equatable, PerCycleSeries {
        /// Kinds, in report order.
        public enum Kind: String, Codable, Sendable, CaseIterable {
            /// Grew in every judged cycle (up to the tolerated misses) and was still there at the
            /// final snapshot: referenced, never used again.
            case abandoned
            /// Blocks live at exit were unreachable (``leakedBlocks`` of them).
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
        /// Change of live objects in every cycle, warm-up included (index 0 = cycle 1), sparse
        /// (``objectsPerCycle`` is the plain array).
        public var objectsSeries: CycleSeries
        /// Change of live bytes in every cycle, warm-up included, sparse (``bytesPerCycle``).
        public var bytesSeries: CycleSeries
        /// Mean bytes per judged cycle, rounded.
        public var averageBytesPerCycle: Int
        /// Blocks allocated in judged cycles and still live at the final snapshot.
        public var survivingObjects: UInt64
        /// Bytes of those blocks.
        public var survivingBytes: UInt64
        /// Set when the recording cut the stack at its frame limit: the number of frames
        /// recorded (the outermost callers are missing). `nil` for a complete stack.
        public var stackTruncatedAt: Int?
        /// The scope this finding was judged in (an `expectNoGrowth` or `HeapGen.cycles` call,
        /// e.g. `expectNoGrowth testLeaky() (LeakTests.swift:31)`); its cycles and series are
        /// the scope's own. `nil`: the marks outside every scope.
        public var scope: String? = nil
        /// For memory abandoned only from some cycle on (a leak that starts mid-run): that cycle
        /// (1-based, warm-up included); ``averageBytesPerCycle`` is then over the cycles since.
        public var onsetCycle: Int? = nil
        /// Cycles from ``onsetCycle`` on that grew.
        public var cyclesWithGrowthSinceOnset: Int? = nil

        /// Cycles from ``onsetCycle`` on (0 without an onset).
        public var cyclesSinceOnset: Int {
            onsetCycle.map { max(0, objectsSeries.count - $0 + 1) } ?? 0
        }
        /// A leak found at exit in a run without cycles: it has no growth to show, only what
        /// leaked.
        public var isLeakWithoutCycles: Bool { kind == .leaked && cycles == 0 }
        /// Leaked findings: the site's blocks unreachable at exit; `nil` (not written) for
        /// other kinds.
        public var leakedBlocks: UInt64?
        /// Leaked findings: requested bytes of those blocks; `nil` (not written) otherwise.
        public var leakedBytes: UInt64?
        /// Leaked findings: of ``leakedBlocks``, those no other unreachable block reaches
        /// (direct leaks, as LeakSanitizer and valgrind's "definitely lost" count them).
        public var directBlocks: UInt64?
        /// Leaked findings: requested bytes of the direct blocks.
        public var directBytes: UInt64?
        /// Leaked findings: blocks reached only from another unreachable block (indirect
        /// leaks, valgrind's "indirectly lost").
        public var indirectBlocks: UInt64?
        /// Leaked findings: requested bytes of the indirect blocks.
        public var indirectBytes: UInt64?
        /// Leaked findings with indirect blocks: indices in the report's ``Report/findings`` of
        /// the findings whose direct blocks own them (a suppressed owner suppresses a finding
        /// that has only blocks it owns); `nil` when there are none.
        public var ownerFindings: [Int]?
        /// With a reference graph: the path from a root to the finding's oldest surviving
        /// object, root first, the object last (nil: no graph, or the object is unreachable).
        public var retention: [RetentionStep]? = nil
        /// With a reference graph: the reference cycle through that object, from it back to
        /// it (each step's field/offset is the reference to the next step).
        public var cycle: [RetentionStep]? = nil
        /// With a reference graph: index in ``Report/findings`` of the finding whose objects
        /// hold this one's (same cycle, or every object dominated by the holder's).
        public var heldBy: Int? = nil
        /// Why ``heldBy``: `sameCycle` or `dominated`.
        public var heldReason: String? = nil
        /// With a reference graph, top-level findings only: bytes freed if the finding's
        /// objects went away (everything only they keep alive, held findings included).
        public var retainedBytes: UInt64? = nil

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
            self.objectsSeries = CycleSeries(objectsPerCycle)
            self.bytesSeries = CycleSeries(bytesPerCycle)
            self.averageBytesPerCycle = averageBytesPerCycle
            self.survivingObjects = survivingObjects
            self.survivingBytes = survivingBytes
            self.stackTruncatedAt = stackTruncatedAt
        }

        /// Creates a finding from sparse per-cycle series.
        public init(kind: Kind, typeName: String?, frames: [Frame], userFrame: Int?, cycles: Int,
                    cyclesWithGrowth: Int, objectsSeries: CycleSeries, bytesSeries: CycleSeries,
                    averageBytesPerCycle: Int, survivingObjects: UInt64, survivingBytes: UInt64,
                    stackTruncatedAt: Int? = nil) {
            self.init(kind: kind, typeName: typeName, frames: frames, userFrame: userFrame, cycles: cycles,
                      cyclesWithGrowth: cyclesWithGrowth, objectsPerCycle: [], bytesPerCycle: [],
                      averageBytesPerCycle: averageBytesPerCycle, survivingObjects: survivingObjects,
                      survivingBytes: survivingBytes, stackTruncatedAt: stackTruncatedAt)
            self.objectsSeries = objectsSeries
            self.bytesSeries = bytesSeries
        }

        /// What a cache filled, in words: "12 objects"; or, when it has more bytes and no more
        /// blocks (a table that doubles frees its old block for a larger one), "larger blocks,
        /// no more of them".
        public static func filledBlocksText(objects: Int, bytes: Int) -> String {
            objects == 0 && bytes > 0 ? "larger blocks, no more of them" : HumanUnits.plural(objects, "object")
        }

        /// LeakSanitizer's summary of leaked findings, `864 byte(s) leaked in 9 allocation(s).`
        /// (``leakedBytes`` and ``leakedBlocks`` summed); `nil` when none of them leaked.
        public static func leakSummary(_ findings: [Finding]) -> String? {
            let leaked = findings.filter { $0.kind == .leaked }
            guard !leaked.isEmpty else { return nil }
            let bytes = leaked.reduce(UInt64(0)) { $0 &+ ($1.leakedBytes ?? 0) }
            let blocks = leaked.reduce(UInt64(0)) { $0 &+ ($1.leakedBlocks ?? 0) }
            return "\(bytes) byte(s) leaked in \(blocks) allocation(s)."
        }

        /// Mean change of live objects over the judged (last ``cycles``) cycles, or over the
        /// cycles since ``onsetCycle``; 0 if none.
        public var averageObjectsPerCycle: Double {
            let judged = onsetCycle != nil ? min(cyclesSinceOnset, objectsSeries.count)
                                           : min(max(0, cycles), objectsSeries.count)
            return judged == 0 ? 0 : Double(objectsSeries.sum(from: objectsSeries.count - judged)) / Double(judged)
        }

        /// True if no frame of the stack is the program's own code (``OwnCode/isLibraryOnly(_:)``):
        /// growth in the toolchain's and the system's libraries, shown apart and not a gate
        /// failure unless asked for.
        public var inLibraries: Bool { OwnCode.isLibraryOnly(frames) }

        /// The frame at ``userFrame``, if any.
        public var userFrameValue: Frame? {
            userFrame.flatMap { frames.indices.contains($0) ? frames[$0] : nil }
        }

        private enum CodingKeys: String, CodingKey {
            case kind, typeName, frames, userFrame, cycles, cyclesWithGrowth
            case objectsSeries = "objectsPerCycle", bytesSeries = "bytesPerCycle"
            case averageBytesPerCycle, survivingObjects, survivingBytes, stackTruncatedAt
            case scope, onsetCycle, cyclesWithGrowthSinceOnset
            case leakedBlocks, leakedBytes, directBlocks, directBytes, indirectBlocks, indirectBytes, ownerFindings
            case retention, cycle, heldBy, heldReason, retainedBytes
        }

        /// Derived fields: written for readers, recomputed (not read) when decoding.
        private enum DerivedKeys: String, CodingKey {
            case inLibraries
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
            try c.encode(objectsSeries, forKey: .objectsSeries)
            try c.encode(bytesSeries, forKey: .bytesSeries)
            try c.encode(averageBytesPerCycle, forKey: .averageBytesPerCycle)
            try c.encode(survivingObjects, forKey: .survivingObjects)
            try c.encode(survivingBytes, forKey: .survivingBytes)
            try c.encode(stackTruncatedAt, forKey: .stackTruncatedAt)
            try c.encode(scope, forKey: .scope)
            try c.encode(onsetCycle, forKey: .onsetCycle)
            try c.encode(cyclesWithGrowthSinceOnset, forKey: .cyclesWithGrowthSinceOnset)
            try c.encodeIfPresent(leakedBlocks, forKey: .leakedBlocks)
            try c.encodeIfPresent(leakedBytes, forKey: .leakedBytes)
            try c.encodeIfPresent(directBlocks, forKey: .directBlocks)
            try c.encodeIfPresent(directBytes, forKey: .directBytes)
            try c.encodeIfPresent(indirectBlocks, forKey: .indirectBlocks)
            try c.encodeIfPresent(indirectBytes, forKey: .indirectBytes)
            try c.encodeIfPresent(ownerFindings, forKey: .ownerFindings)
            try c.encodeIfPresent(retention, forKey: .retention)
            try c.encodeIfPresent(cycle, forKey: .cycle)
            try c.encodeIfPresent(heldBy, forKey: .heldBy)
            try c.encodeIfPresent(heldReason, forKey: .heldReason)
            try c.encodeIfPresent(retainedBytes, forKey: .retainedBytes)
            var derived = encoder.container(keyedBy: DerivedKeys.self)
            try derived.encode(inLibraries, forKey: .inLibraries)
        }
    }
}
