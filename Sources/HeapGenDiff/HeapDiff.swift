// heapgen-diff/1: how the live heap changed between two points.

import HeapGenAnalysis
import HeapGenSymbolication

/// A diff of the live heap between two points, per allocation site (see docs/diff-schema.md).
///
/// *Before* is the base point, *after* the new one: two points of one trace
/// (``Mode/marks``), or one point of each of two traces (``Mode/traces``). Sites are
/// matched by their symbolicated frames and Swift type, never by addresses.
public struct HeapDiff: Codable, Sendable, Equatable {
    /// `"heapgen-diff/1"`.
    public static let schemaVersion = "heapgen-diff/1"

    /// Two points of one trace, or two traces.
    public enum Mode: String, Codable, Sendable {
        case marks
        case traces
    }

    /// Whether an entry's site was live at both points or only at one.
    public enum Status: String, Codable, Sendable {
        /// Live at both points.
        case matched
        /// Live at the new point only.
        case added
        /// Live at the base point only.
        case removed
    }

    /// A trace and the point in it.
    public struct Side: Codable, Sendable, Equatable {
        public var trace: String
        public var point: ResolvedPoint

        public init(trace: String, point: ResolvedPoint) {
            self.trace = trace
            self.point = point
        }
    }

    /// Objects and bytes.
    public struct Amount: Codable, Sendable, Equatable {
        public var objects: UInt64
        public var bytes: UInt64

        public init(objects: UInt64, bytes: UInt64) {
            self.objects = objects
            self.bytes = bytes
        }

        public static let zero = Amount(objects: 0, bytes: 0)
    }

    /// Before, after, the change and, between two points of one trace, what was added and removed.
    public struct Change: Codable, Sendable, Equatable {
        public var objectsBefore: UInt64
        public var objectsAfter: UInt64
        public var objectsDelta: Int
        public var bytesBefore: UInt64
        public var bytesAfter: UInt64
        public var bytesDelta: Int
        /// Allocated after the base point and live at the new one (``Mode/marks`` only).
        public var added: Amount?
        /// Live at the base point and freed by the new one (``Mode/marks`` only).
        public var removed: Amount?

        public init(objectsBefore: UInt64, objectsAfter: UInt64, bytesBefore: UInt64, bytesAfter: UInt64,
                    added: Amount? = nil, removed: Amount? = nil) {
            self.objectsBefore = objectsBefore
            self.objectsAfter = objectsAfter
            objectsDelta = Int(truncatingIfNeeded: objectsAfter &- objectsBefore)
            self.bytesBefore = bytesBefore
            self.bytesAfter = bytesAfter
            bytesDelta = Int(truncatingIfNeeded: bytesAfter &- bytesBefore)
            self.added = added
            self.removed = removed
        }

        /// True when nothing changed (no delta, nothing added or removed).
        public var isUnchanged: Bool {
            objectsDelta == 0 && bytesDelta == 0 && (added?.objects ?? 0) == 0 && (removed?.objects ?? 0) == 0
        }
    }

    /// Options the diff was made with.
    public struct Options: Codable, Sendable, Equatable {
        /// Frames from the user frame on that identify a site.
        public var depth: Int

        public init(depth: Int) {
            self.depth = depth
        }
    }

    /// The whole live heap.
    public struct Totals: Codable, Sendable, Equatable {
        public var change: Change
        /// Number of entries, and of entries matched, added, removed, changed.
        public var entries: Int
        public var matchedEntries: Int
        public var addedEntries: Int
        public var removedEntries: Int
        public var changedEntries: Int

        public init(change: Change, entries: Int, matchedEntries: Int, addedEntries: Int, removedEntries: Int,
                    changedEntries: Int) {
            self.change = change
            self.entries = entries
            self.matchedEntries = matchedEntries
            self.addedEntries = addedEntries
            self.removedEntries = removedEntries
            self.changedEntries = changedEntries
        }
    }

    /// One allocation site (a source path and a Swift type).
    public struct Entry: Codable, Sendable, Equatable {
        public var status: Status
        /// The Swift type of the objects, `nil` for plain allocations.
        public var typeName: String?
        /// Frames innermost first (of the new point's trace when the site is live there).
        public var frames: [SymbolicatedFrame]
        /// Index in ``frames`` of the first frame in the program's own code, `nil` if none.
        public var userFrame: Int?
        /// Recorded sites (stack, type) merged into this entry, in the two traces together.
        public var sites: Int
        public var change: Change

        public init(status: Status, typeName: String?, frames: [SymbolicatedFrame], userFrame: Int?, sites: Int,
                    change: Change) {
            self.status = status
            self.typeName = typeName
            self.frames = frames
            self.userFrame = userFrame
            self.sites = sites
            self.change = change
        }
    }

    /// The entries of one Swift type summed.
    public struct TypeEntry: Codable, Sendable, Equatable {
        public var typeName: String
        public var change: Change

        public init(typeName: String, change: Change) {
            self.typeName = typeName
            self.change = change
        }
    }

    public var schema: String
    public var mode: Mode
    public var base: Side
    public var new: Side
    public var options: Options
    public var totals: Totals
    /// Sorted by |bytesDelta|, then |objectsDelta|, then bytes after, largest first.
    public var entries: [Entry]
    /// Swift types, sorted like the entries.
    public var types: [TypeEntry]
    public var notes: [String]

    public init(mode: Mode, base: Side, new: Side, options: Options, totals: Totals, entries: [Entry],
                types: [TypeEntry], notes: [String]) {
        schema = Self.schemaVersion
        self.mode = mode
        self.base = base
        self.new = new
        self.options = options
        self.totals = totals
        self.entries = entries
        self.types = types
        self.notes = notes
    }

    /// Order of entries: largest |bytesDelta| first, then |objectsDelta|, then bytes after, bytes before.
    static func largerChange(_ a: Change, _ b: Change) -> Bool? {
        if a.bytesDelta.magnitude != b.bytesDelta.magnitude { return a.bytesDelta.magnitude > b.bytesDelta.magnitude }
        if a.objectsDelta.magnitude != b.objectsDelta.magnitude { return a.objectsDelta.magnitude > b.objectsDelta.magnitude }
        if a.bytesAfter != b.bytesAfter { return a.bytesAfter > b.bytesAfter }
        if a.bytesBefore != b.bytesBefore { return a.bytesBefore > b.bytesBefore }
        return nil
    }
}

// MARK: - JSON shape: the change's fields are flat in their object

extension HeapDiff.Totals {
    private enum CodingKeys: String, CodingKey {
        case entries, matchedEntries, addedEntries, removedEntries, changedEntries
    }

    public init(from decoder: any Decoder) throws {
        change = try HeapDiff.Change(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        entries = try c.decode(Int.self, forKey: .entries)
        matchedEntries = try c.decode(Int.self, forKey: .matchedEntries)
        addedEntries = try c.decode(Int.self, forKey: .addedEntries)
        removedEntries = try c.decode(Int.self, forKey: .removedEntries)
        changedEntries = try c.decode(Int.self, forKey: .changedEntries)
    }

    public func encode(to encoder: any Encoder) throws {
        try change.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(entries, forKey: .entries)
        try c.encode(matchedEntries, forKey: .matchedEntries)
        try c.encode(addedEntries, forKey: .addedEntries)
        try c.encode(removedEntries, forKey: .removedEntries)
        try c.encode(changedEntries, forKey: .changedEntries)
    }
}

extension HeapDiff.Entry {
    private enum CodingKeys: String, CodingKey {
        case status, typeName, frames, userFrame, sites
    }

    public init(from decoder: any Decoder) throws {
        change = try HeapDiff.Change(from: decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        status = try c.decode(HeapDiff.Status.self, forKey: .status)
        typeName = try c.decodeIfPresent(String.self, forKey: .typeName)
        frames = try c.decode([SymbolicatedFrame].self, forKey: .frames)
        userFrame = try c.decodeIfPresent(Int.self, forKey: .userFrame)
        sites = try c.decode(Int.self, forKey: .sites)
    }

    /// `typeName` and `userFrame` are written as `null` when unknown.
    public func encode(to encoder: any Encoder) throws {
        try change.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status, forKey: .status)
        try c.encode(typeName, forKey: .typeName)
        try c.encode(frames, forKey: .frames)
        try c.encode(userFrame, forKey: .userFrame)
        try c.encode(sites, forKey: .sites)
    }
}

extension HeapDiff.TypeEntry {
    private enum CodingKeys: String, CodingKey {
        case typeName
    }

    public init(from decoder: any Decoder) throws {
        change = try HeapDiff.Change(from: decoder)
        typeName = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .typeName)
    }

    public func encode(to encoder: any Encoder) throws {
        try change.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(typeName, forKey: .typeName)
    }
}
