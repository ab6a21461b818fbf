// The `referenceGraph` record (0x1C, minor version 4): who references whom in the live
// heap at a scan (docs/trace-format.md, "referenceGraph"). Written as a run of parts
// (header, blocks, edges, regions, root edges, field names, end), each a record of its
// own so that no record comes near the chunk limit; the reader delivers one
// ``TraceRecord/referenceGraph(_:)`` at the end part.

/// The reference graph of a process's live heap, taken by the collector's scan with the
/// program's threads stopped (`--leaks`, `--retention`, `--retention-at LABEL`).
///
/// Blocks are named by their index in ``blocks``; every block live at the scan is there,
/// reachable or not. An edge is one 8-aligned word of `from` pointing into `to` (interior
/// pointers count), at the lowest such offset.
public struct ReferenceGraphRecord: Sendable, Equatable {
    /// What took the graph.
    public enum Trigger: Sendable, Equatable {
        /// The program's exit (the leak scan, or `--retention`).
        case exit
        /// `--retention-at LABEL`: right after the program's mark with this label.
        case mark(String)
        /// A `scan` control request from the program (HeapGenTesting).
        case request
    }

    /// Kind of a root region.
    public enum RootKind: UInt8, Sendable, Equatable {
        /// A module's writable data: a file-backed rw mapping or the anonymous one right
        /// after one (.data, .bss); ``RootRegion/modulePath`` names the module.
        case global = 0
        /// A thread's stack, from its stack pointer up (``RootRegion/tid``).
        case stack = 1
        /// A stopped thread's registers (``RootRegion/tid``; start and end 0).
        case registers = 2
        /// Any other writable anonymous mapping (TLS blocks, mmap'd memory).
        case other = 3
    }

    /// One root region the scan read.
    public struct RootRegion: Sendable, Equatable {
        public var kind: RootKind
        /// The scanned range (a stack from its stack pointer up).
        public var start: UInt64
        public var end: UInt64
        /// Stacks and registers: the thread (0: unknown).
        public var tid: UInt32
        /// Globals: the module's path.
        public var modulePath: String?

        public init(kind: RootKind, start: UInt64, end: UInt64, tid: UInt32 = 0, modulePath: String? = nil) {
            self.kind = kind
            self.start = start
            self.end = end
            self.tid = tid
            self.modulePath = modulePath
        }
    }

    /// A reference between blocks: block `from`'s word at byte `offset` points into block `to`.
    public struct Edge: Sendable, Equatable, Hashable {
        public var from: UInt32
        public var to: UInt32
        public var offset: UInt32

        public init(from: UInt32, to: UInt32, offset: UInt32) {
            self.from = from
            self.to = to
            self.offset = offset
        }
    }

    /// A reference from a root: the word at `slot` of region `region` points into block `to`.
    public struct RootEdge: Sendable, Equatable, Hashable {
        /// Index in ``roots``.
        public var region: UInt32
        /// The word's address (registers: 0; see ``register``).
        public var slot: UInt64
        public var to: UInt32
        /// Stack slots: a code address in the function whose frame holds the slot — the
        /// nearest return address between the stack pointer and the slot, or the thread's
        /// instruction pointer below the first (a heuristic: frames without a return address
        /// found, e.g. leaf functions or code addresses stored as data, shift it). 0: none.
        public var pc: UInt64
        /// Registers: the register (0 rax, 1 rbx, 2 rcx, 3 rdx, 4 rsi, 5 rdi, 6 rbp, 7 rsp,
        /// 8…15 r8…r15).
        public var register: UInt8?

        public init(region: UInt32, slot: UInt64, to: UInt32, pc: UInt64 = 0, register: UInt8? = nil) {
            self.region = region
            self.slot = slot
            self.to = to
            self.pc = pc
            self.register = register
        }
    }

    /// A stored property of a Swift class: its byte offset in the instance and its name.
    public struct Field: Sendable, Equatable, Hashable {
        public var offset: UInt32
        public var name: String

        public init(offset: UInt32, name: String) {
            self.offset = offset
            self.name = name
        }
    }

    public var trigger: Trigger
    /// Addresses of the live blocks at the scan, ascending.
    public var blocks: [UInt64]
    /// Grouped by source block (in the scan's order, not sorted); one per (from, to).
    public var edges: [Edge]
    public var roots: [RootRegion]
    public var rootEdges: [RootEdge]
    /// Per type id (the trace's `type` records): stored properties, superclasses' included.
    public var fieldNames: [UInt32: [Field]]
    /// Bytes the scan read from the program (roots and every live block).
    public var bytesRead: UInt64
    /// The scan's duration (threads stopped), nanoseconds.
    public var nanoseconds: UInt64

    public init(trigger: Trigger, blocks: [UInt64] = [], edges: [Edge] = [], roots: [RootRegion] = [],
                rootEdges: [RootEdge] = [], fieldNames: [UInt32: [Field]] = [:], bytesRead: UInt64 = 0,
                nanoseconds: UInt64 = 0) {
        self.trigger = trigger
        self.blocks = blocks
        self.edges = edges
        self.roots = roots
        self.rootEdges = rootEdges
        self.fieldNames = fieldNames
        self.bytesRead = bytesRead
        self.nanoseconds = nanoseconds
    }

    // MARK: - Encoding

    /// Entries in one part record (blocks, edges, regions, root edges or field types).
    static let maxPartEntries = 65_536
    /// Limits a reader enforces on the header's counts.
    static let maxBlocks = 1 << 32 - 1
    static let maxEdges = 1 << 28
    static let maxRegions = 1 << 20
    static let maxFields = 4096

    enum Part: UInt8 {
        case header = 0, blocks = 1, edges = 2, regions = 3, rootEdges = 4, fields = 5, end = 6
    }

    /// The record's parts, each a whole record (tag, part, fields).
    func encodedParts() -> [[UInt8]] {
        var all: [[UInt8]] = []
        encodeParts { all.append($0) }
        return all
    }

    /// Hands each part to `emit` as soon as it is encoded: a graph of millions of edges is
    /// never held twice over in encoded form.
    func encodeParts(_ emit: ([UInt8]) -> Void) {
        func begin(_ part: Part) -> [UInt8] { [RecordTag.referenceGraph, part.rawValue] }
        var h = begin(.header)
        switch trigger {
        case .exit: h.append(0); Self.putString("", &h)
        case .mark(let label): h.append(1); Self.putString(label, &h)
        case .request: h.append(2); Self.putString("", &h)
        }
        for v in [bytesRead, nanoseconds, UInt64(blocks.count), UInt64(edges.count), UInt64(roots.count),
                  UInt64(rootEdges.count), UInt64(fieldNames.count)] {
            Self.put(v, &h)
        }
        emit(h)
        var previous: UInt64 = 0
        for range in Self.parts(blocks.count) {
            var p = begin(.blocks)
            Self.put(UInt64(range.count), &p)
            for k in range {
                Self.put(Varint.zigzag(blocks[k] &- previous), &p)
                previous = blocks[k]
            }
            emit(p)
        }
        var previousFrom: UInt32 = 0
        for range in Self.parts(edges.count) {
            var p = begin(.edges)
            Self.put(UInt64(range.count), &p)
            for k in range {
                let e = edges[k]
                Self.put(Varint.zigzag(UInt64(e.from) &- UInt64(previousFrom)), &p)
                Self.put(Varint.zigzag(UInt64(e.to) &- UInt64(e.from)), &p)
                Self.put(UInt64(e.offset), &p)
                previousFrom = e.from
            }
            emit(p)
        }
        for range in Self.parts(roots.count) {
            var p = begin(.regions)
            Self.put(UInt64(range.count), &p)
            for k in range {
                let r = roots[k]
                p.append(r.kind.rawValue)
                Self.put(r.start, &p)
                Self.put(r.end &- r.start, &p)
                Self.put(UInt64(r.tid), &p)
                Self.putString(r.modulePath ?? "", &p)
            }
            emit(p)
        }
        var previousSlot: UInt64 = 0
        for range in Self.parts(rootEdges.count) {
            var p = begin(.rootEdges)
            Self.put(UInt64(range.count), &p)
            for k in range {
                let e = rootEdges[k]
                Self.put(UInt64(e.region), &p)
                Self.put(Varint.zigzag(e.slot &- previousSlot), &p)
                Self.put(UInt64(e.to), &p)
                Self.put(e.pc, &p)
                p.append(e.register ?? 0xFF)
                previousSlot = e.slot
            }
            emit(p)
        }
        let types = fieldNames.keys.sorted()
        for range in Self.parts(types.count, per: 256) {
            var p = begin(.fields)
            Self.put(UInt64(range.count), &p)
            for k in range {
                let fields = fieldNames[types[k]]!.prefix(Self.maxFields)
                Self.put(UInt64(types[k]), &p)
                Self.put(UInt64(fields.count), &p)
                for f in fields {
                    Self.put(UInt64(f.offset), &p)
                    Self.putString(f.name, &p)
                }
            }
            emit(p)
        }
        emit(begin(.end))
    }

    private static func parts(_ count: Int, per: Int = maxPartEntries) -> [Range<Int>] {
        stride(from: 0, to: count, by: per).map { $0..<min(count, $0 + per) }
    }

    private static func put(_ value: UInt64, _ out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    /// Names are short; a longer one is cut to 4 KiB on a character boundary.
    private static func putString(_ s: String, _ out: inout [UInt8]) {
        var bytes = Array(s.utf8)
        if bytes.count > 4096 {
            var n = 4096
            while n > 0 && (bytes[n] & 0xC0) == 0x80 { n -= 1 }
            bytes.removeSubrange(n...)
        }
        put(UInt64(bytes.count), &out)
        out += bytes
    }
}

/// Reassembles a `referenceGraph` from its parts, checking each against the header.
struct ReferenceGraphAssembly {
    var record: ReferenceGraphRecord
    var blockCount: Int
    var edgeCount: Int
    var regionCount: Int
    var rootEdgeCount: Int
    var fieldTypeCount: Int
    var fieldTypesSeen = 0
    var part: ReferenceGraphRecord.Part = .header
    var previousFrom: UInt64 = 0
    var previousSlot: UInt64 = 0

    typealias G = ReferenceGraphRecord

    /// Decodes the header part (after tag and part byte).
    static func header(_ c: inout ByteCursor) throws(TraceError) -> ReferenceGraphAssembly {
        let triggerAt = c.position
        let code = try c.byte()
        let label = try c.string("reference graph label")
        let trigger: G.Trigger
        switch code {
        case 0: trigger = .exit
        case 1: trigger = .mark(label)
        case 2: trigger = .request
        default: throw c.corrupt("unknown reference graph trigger \(code)", at: triggerAt)
        }
        let bytesRead = try c.varint()
        let nanoseconds = try c.varint()
        func count(_ c: inout ByteCursor, _ what: StaticString, _ limit: Int) throws(TraceError) -> Int {
            let at = c.position
            let v = try c.varint()
            guard v <= UInt64(limit) else { throw c.corrupt("\(what) \(v) is over the limit of \(limit)", at: at) }
            return Int(v)
        }
        let blocks = try count(&c, "reference graph block count", G.maxBlocks)
        let edges = try count(&c, "reference graph edge count", G.maxEdges)
        let regions = try count(&c, "reference graph region count", G.maxRegions)
        let rootEdges = try count(&c, "reference graph root edge count", G.maxEdges)
        let fieldTypes = try count(&c, "reference graph field type count", Int(UInt32.max))
        return ReferenceGraphAssembly(
            record: G(trigger: trigger, bytesRead: bytesRead, nanoseconds: nanoseconds),
            blockCount: blocks, edgeCount: edges, regionCount: regions, rootEdgeCount: rootEdges,
            fieldTypeCount: fieldTypes)
    }

    /// Decodes one part after the header (tag and part byte read; `partAt` is the part byte).
    /// Returns true at the end part: the record is complete.
    mutating func decode(_ part: G.Part, _ c: inout ByteCursor, partAt: Int) throws(TraceError) -> Bool {
        guard part.rawValue >= self.part.rawValue, part != .header else {
            throw c.corrupt("reference graph part \(part.rawValue) after part \(self.part.rawValue)", at: partAt)
        }
        // A part may only start once the parts before it are complete.
        let complete: [(G.Part, Int, Int)] = [
            (.blocks, record.blocks.count, blockCount), (.edges, record.edges.count, edgeCount),
            (.regions, record.roots.count, regionCount), (.rootEdges, record.rootEdges.count, rootEdgeCount),
            (.fields, fieldTypesSeen, fieldTypeCount),
        ]
        for (earlier, have, want) in complete where earlier.rawValue < part.rawValue && have != want {
            throw c.corrupt("reference graph part \(part.rawValue) before its \(want) entries of part \(earlier.rawValue) (\(have) seen)", at: partAt)
        }
        self.part = part
        if part == .end { return true }
        let n = try c.length("reference graph part entry count", limit: G.maxPartEntries)
        guard n > 0 else { throw c.corrupt("empty reference graph part", at: partAt) }
        switch part {
        case .blocks:
            guard record.blocks.count + n <= blockCount else { throw c.corrupt("more reference graph blocks than its header says", at: partAt) }
            var previous = record.blocks.last ?? 0
            for _ in 0..<n {
                let at = c.position
                let address = try c.delta(from: previous)
                if !record.blocks.isEmpty && address <= previous {
                    throw c.corrupt("reference graph blocks do not ascend", at: at)
                }
                record.blocks.append(address)
                previous = address
            }
        case .edges:
            guard record.edges.count + n <= edgeCount else { throw c.corrupt("more reference graph edges than its header says", at: partAt) }
            let limit = UInt64(blockCount)
            for _ in 0..<n {
                let at = c.position
                let from = try c.delta(from: previousFrom)
                let to = try c.delta(from: from)
                let offset = try c.varint32("reference graph edge offset")
                guard from < limit, to < limit else { throw c.corrupt("reference graph edge names a block past the \(blockCount) blocks", at: at) }
                record.edges.append(G.Edge(from: UInt32(from), to: UInt32(to), offset: offset))
                previousFrom = from
            }
        case .regions:
            guard record.roots.count + n <= regionCount else { throw c.corrupt("more reference graph regions than its header says", at: partAt) }
            for _ in 0..<n {
                let at = c.position
                guard let kind = G.RootKind(rawValue: try c.byte()) else { throw c.corrupt("unknown root region kind", at: at) }
                let start = try c.varint()
                let size = try c.varint()
                guard start <= UInt64.max - size else { throw c.corrupt("root region ends past 2^64", at: at) }
                let tid = try c.varint32("root region tid")
                let path = try c.string("root region path")
                record.roots.append(G.RootRegion(kind: kind, start: start, end: start + size, tid: tid,
                                                 modulePath: path.isEmpty ? nil : path))
            }
        case .rootEdges:
            guard record.rootEdges.count + n <= rootEdgeCount else { throw c.corrupt("more reference graph root edges than its header says", at: partAt) }
            for _ in 0..<n {
                let at = c.position
                let region = try c.varint()
                let slot = try c.delta(from: previousSlot)
                let to = try c.varint()
                let pc = try c.varint()
                let register = try c.byte()
                guard region < UInt64(regionCount), to < UInt64(blockCount) else {
                    throw c.corrupt("reference graph root edge names a region or block out of range", at: at)
                }
                guard register == 0xFF || register < 80 else { throw c.corrupt("root edge register \(register) out of range", at: at) }
                record.rootEdges.append(G.RootEdge(region: UInt32(region), slot: slot, to: UInt32(to), pc: pc,
                                                   register: register == 0xFF ? nil : register))
                previousSlot = slot
            }
        case .fields:
            guard fieldTypesSeen + n <= fieldTypeCount else { throw c.corrupt("more reference graph field types than its header says", at: partAt) }
            for _ in 0..<n {
                let at = c.position
                let type = try c.varint32("field type id")
                let count = try c.length("field count", limit: G.maxFields)
                guard record.fieldNames[type] == nil else { throw c.corrupt("field names of type \(type) given twice", at: at) }
                var fields: [G.Field] = []
                for _ in 0..<count {
                    let offset = try c.varint32("field offset")
                    fields.append(G.Field(offset: offset, name: try c.string("field name")))
                }
                record.fieldNames[type] = fields
                fieldTypesSeen += 1
            }
        case .header, .end:
            break
        }
        return false
    }
}
