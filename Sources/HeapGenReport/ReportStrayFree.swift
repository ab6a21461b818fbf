// The "strayFrees" list of a report.

import HeapGenAnalysis
import HeapGenSymbolication
import HeapGenUnits

extension Report {
    /// A `free` or `realloc` of an address that was not live (see ``StrayFree``): a double
    /// free, a pointer into a block, or memory heapgen never saw allocated. The first few of
    /// a trace are explained; ``Totals/untrackedFrees`` counts them all.
    public struct StrayFree: Codable, Sendable, Equatable {
        /// `doubleFree`, `interiorPointer` or `notAllocated`.
        public var cause: HeapGenAnalysis.StrayFree.Cause
        /// `free` or `realloc`.
        public var function: String
        /// The address passed to it.
        public var address: UInt64
        /// Its position among the trace's heap events, from 0 (`heapgen info`'s `event N`).
        public var event: UInt64
        /// The block the address was at or in: where it started, its size, the event that
        /// freed it (nil if still live) and its allocation stack; nil for `notAllocated`.
        public var blockAddress: UInt64?
        public var blockSize: UInt64?
        public var blockFreedAtEvent: UInt64?
        public var typeName: String?
        public var frames: [Frame]

        /// Creates an entry.
        public init(cause: HeapGenAnalysis.StrayFree.Cause, function: String, address: UInt64, event: UInt64,
                    blockAddress: UInt64? = nil, blockSize: UInt64? = nil, blockFreedAtEvent: UInt64? = nil,
                    typeName: String? = nil, frames: [Frame] = []) {
            self.cause = cause
            self.function = function
            self.address = address
            self.event = event
            self.blockAddress = blockAddress
            self.blockSize = blockSize
            self.blockFreedAtEvent = blockFreedAtEvent
            self.typeName = typeName
            self.frames = frames
        }

        private enum CodingKeys: String, CodingKey {
            case cause, function, address, event, blockAddress, blockSize, blockFreedAtEvent, typeName, frames
        }

        /// Encodes every field: addresses as `"0x…"` strings, unknowns as `null`.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(cause, forKey: .cause)
            try c.encode(function, forKey: .function)
            try c.encode(Frame.formatAddress(address), forKey: .address)
            try c.encode(event, forKey: .event)
            try c.encode(blockAddress.map(Frame.formatAddress), forKey: .blockAddress)
            try c.encode(blockSize, forKey: .blockSize)
            try c.encode(blockFreedAtEvent, forKey: .blockFreedAtEvent)
            try c.encode(typeName, forKey: .typeName)
            try c.encode(frames, forKey: .frames)
        }

        /// Decodes what ``encode(to:)`` writes.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            func address(_ key: CodingKeys) throws -> UInt64? {
                guard let text = try c.decodeIfPresent(String.self, forKey: key) else { return nil }
                guard let value = Frame.parseAddress(text) else {
                    throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "not an address: \(text)")
                }
                return value
            }
            cause = try c.decode(HeapGenAnalysis.StrayFree.Cause.self, forKey: .cause)
            function = try c.decode(String.self, forKey: .function)
            guard let a = try address(.address) else {
                throw DecodingError.valueNotFound(String.self, .init(codingPath: c.codingPath + [CodingKeys.address],
                                                                     debugDescription: "address is null"))
            }
            self.address = a
            event = try c.decode(UInt64.self, forKey: .event)
            blockAddress = try address(.blockAddress)
            blockSize = try c.decodeIfPresent(UInt64.self, forKey: .blockSize)
            blockFreedAtEvent = try c.decodeIfPresent(UInt64.self, forKey: .blockFreedAtEvent)
            typeName = try c.decodeIfPresent(String.self, forKey: .typeName)
            frames = try c.decodeIfPresent([Frame].self, forKey: .frames) ?? []
        }

        /// Index in ``frames`` of the first frame of the program's own code in the block's
        /// allocation stack (``OwnCode/firstUserFrame(_:)``), else nil.
        public var userFrame: Int? { OwnCode.firstUserFrame(frames) }

        /// The frame where the block was allocated, as reports name it: ``userFrame``, else the
        /// innermost frame; nil without a stack.
        public var allocationFrame: Frame? { userFrame.map { frames[$0] } ?? frames.first }

        /// Why a trace with frees of addresses that were not live explains none of them.
        public static let unexplainedReason = "none explained: a trace recorded with --aggregate keeps no addresses"

        /// One line: `free(0x5581…) at event 4: a double free of a 16 B block freed at event 3`.
        public var summary: String {
            let call = "\(function)(\(Frame.formatAddress(address))) at event \(event)"
            let size = blockSize.map { HumanUnits.bytes($0) + " " } ?? ""
            let block = (typeName.map { "\(size)\($0)" } ?? "\(size)block")
            switch cause {
            case .doubleFree:
                return "\(call): a double free of a \(block)\(blockFreedAtEvent.map { " freed at event \($0)" } ?? "")"
            case .interiorPointer:
                let offset = address &- (blockAddress ?? address)
                let state = blockFreedAtEvent.map { "freed at event \($0)" } ?? "live"
                return "\(call): a pointer \(HumanUnits.plural(offset, "byte")) into a \(block) (\(state)), not its start"
            case .notAllocated:
                return "\(call): no block heapgen recorded holds it (another allocator's memory, memory allocated while heapgen was not recording, or no heap memory)"
            }
        }
    }
}
