// Control-channel answers: the ones the collector writes by hand (their member order is
// fixed) and the ones a client decodes (HeapGenTesting). See docs/control-protocol.md.

import HeapGenJSON

/// Answer texts the collector writes. Member order is part of the protocol.
public enum ControlAnswerText {
    /// `{"ok":false,"error":"…"}`.
    public static func error(_ text: String) -> String {
        "{\"ok\":false,\"error\":\(JSONWriter.quote(text))}"
    }

    public static func ping(tracking: Bool) -> String {
        "{\"ok\":true,\"op\":\"ping\",\"tracking\":\(tracking)}"
    }

    public static func track(since: UInt64, already: Bool) -> String {
        "{\"ok\":true,\"op\":\"track\",\"tracking\":true,\"since\":\(since),\"already\":\(already)}"
    }

    public static let untrack = "{\"ok\":true,\"op\":\"untrack\",\"tracking\":false}"

    public static func begin(since: UInt64) -> String {
        "{\"ok\":true,\"op\":\"begin\",\"since\":\(since)}"
    }

    public static func end(ended: Bool) -> String {
        "{\"ok\":true,\"op\":\"end\",\"ended\":\(ended)}"
    }

    /// The `status` answer.
    public struct Status: Sendable {
        public var tracking: Bool
        public var liveBlocks: Int
        public var marks: Int
        public var session: Bool
        public var untrackedFrees: UInt64
        public var answered: UInt64
        public var rejected: UInt64
        public var ignored: UInt64

        public init(tracking: Bool, liveBlocks: Int, marks: Int, session: Bool, untrackedFrees: UInt64,
                    answered: UInt64, rejected: UInt64, ignored: UInt64) {
            self.tracking = tracking
            self.liveBlocks = liveBlocks
            self.marks = marks
            self.session = session
            self.untrackedFrees = untrackedFrees
            self.answered = answered
            self.rejected = rejected
            self.ignored = ignored
        }

        public var json: String {
            var w = JSONObjectWriter()
            w.bool("ok", true)
            w.string("op", "status")
            w.bool("tracking", tracking)
            w.int("liveBlocks", liveBlocks)
            w.int("marks", marks)
            w.bool("session", session)
            w.int("untrackedFrees", untrackedFrees)
            w.int("answered", answered)
            w.int("rejected", rejected)
            w.int("ignored", ignored)
            return w.json
        }
    }

    /// The `scan` answer.
    public struct Scan: Sendable {
        public var unreachable: Int
        public var indirect: Int
        public var live: Int
        public var scannedBytes: UInt64
        public var rootBytes: UInt64
        public var rootRegions: UInt64
        public var threads: UInt64
        public var threadsStopped: UInt64
        public var deadStackBytes: UInt64
        public var microseconds: UInt64
        /// The reference graph's fate when worth saying (dropped, or recorded by a scan that
        /// judged nothing); nil: not in the answer.
        public var graph: String?

        public init(unreachable: Int, indirect: Int, live: Int, scannedBytes: UInt64, rootBytes: UInt64,
                    rootRegions: UInt64, threads: UInt64, threadsStopped: UInt64, deadStackBytes: UInt64,
                    microseconds: UInt64) {
            self.unreachable = unreachable
            self.indirect = indirect
            self.live = live
            self.scannedBytes = scannedBytes
            self.rootBytes = rootBytes
            self.rootRegions = rootRegions
            self.threads = threads
            self.threadsStopped = threadsStopped
            self.deadStackBytes = deadStackBytes
            self.microseconds = microseconds
        }

        public var json: String {
            var w = JSONObjectWriter()
            w.bool("ok", true)
            w.string("op", "scan")
            w.int("unreachable", unreachable)
            w.int("indirect", indirect)
            w.int("live", live)
            w.int("scannedBytes", scannedBytes)
            w.int("rootBytes", rootBytes)
            w.int("rootRegions", rootRegions)
            w.int("threads", threads)
            w.int("threadsStopped", threadsStopped)
            w.int("deadStackBytes", deadStackBytes)
            w.int("microseconds", microseconds)
            if let graph { w.string("graph", graph) }
            return w.json
        }
    }
}

// MARK: - Decoding (clients)

/// An answer a client decodes from the collector's JSON.
public protocol ControlAnswer: Sendable {
    init(json: JSONValue) throws(ControlProtocolError)
}

/// Member readers that fail like a decoder: a missing required member or a member
/// of the wrong type is an error; a missing or null optional member is nil.
private struct Members {
    let fields: [String: JSONValue]

    init(_ json: JSONValue) throws(ControlProtocolError) {
        guard let fields = json.members else { throw ControlProtocolError("the answer is not a JSON object") }
        self.fields = fields
    }

    func optional<T>(_ key: String, _ read: (JSONValue) -> T?) throws(ControlProtocolError) -> T? {
        guard let v = fields[key], v != .null else { return nil }
        guard let t = read(v) else { throw ControlProtocolError("\"\(key)\" has the wrong type") }
        return t
    }

    func required<T>(_ key: String, _ read: (JSONValue) -> T?) throws(ControlProtocolError) -> T {
        guard let t = try optional(key, read) else { throw ControlProtocolError("\"\(key)\" is missing") }
        return t
    }

    func list<T>(_ key: String, _ read: (JSONValue) throws(ControlProtocolError) -> T) throws(ControlProtocolError) -> [T]? {
        guard let v = fields[key], v != .null else { return nil }
        guard let items = v.array else { throw ControlProtocolError("\"\(key)\" has the wrong type") }
        var out: [T] = []
        for item in items { out.append(try read(item)) }
        return out
    }
}

/// `{"ok":…,"error":…}`: every answer has `ok`; a refusal has `error`.
public struct ControlStatusAnswer: ControlAnswer {
    public var ok: Bool
    public var error: String?

    public init(json: JSONValue) throws(ControlProtocolError) {
        let m = try Members(json)
        ok = try m.required("ok", \.bool)
        error = try m.optional("error", \.string)
    }
}

/// A heapgen-report/1 frame, as the `object` and `growth` answers carry it. The collector
/// encodes the `object` answer's frames with this type (every member written, null when
/// unknown, as reports write frames); the client decodes both answers' frames with it.
public struct ControlFrame: ControlAnswer, Encodable {
    public var function: String?
    public var shortFunction: String?
    public var file: String?
    public var line: Int?
    public var column: Int?
    public var module: String?
    /// `0x…`.
    public var address: String
    public var inlined: Bool?

    public init(function: String?, shortFunction: String?, file: String?, line: Int?, column: Int?,
                module: String?, address: String, inlined: Bool) {
        self.function = function
        self.shortFunction = shortFunction
        self.file = file
        self.line = line
        self.column = column
        self.module = module
        self.address = address
        self.inlined = inlined
    }

    public init(json: JSONValue) throws(ControlProtocolError) {
        let m = try Members(json)
        function = try m.optional("function", \.string)
        shortFunction = try m.optional("shortFunction", \.string)
        file = try m.optional("file", \.string)
        line = try m.optional("line", \.int)
        column = try m.optional("column", \.int)
        module = try m.optional("module", \.string)
        address = try m.required("address", \.string)
        inlined = try m.optional("inlined", \.bool)
    }

    private enum CodingKeys: String, CodingKey {
        case function, shortFunction, file, line, column, module, address, inlined
    }

    /// Every member, `null` when unknown: the bytes of a heapgen-report/1 frame.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(function, forKey: .function)
        try c.encode(shortFunction, forKey: .shortFunction)
        try c.encode(file, forKey: .file)
        try c.encode(line, forKey: .line)
        try c.encode(column, forKey: .column)
        try c.encode(module, forKey: .module)
        try c.encode(address, forKey: .address)
        try c.encode(inlined ?? false, forKey: .inlined)
    }
}

/// A heapgen-report/1 finding, as the `growth` answer carries it (the members a client uses).
public struct ControlFinding: ControlAnswer {
    public var kind: String
    public var typeName: String?
    public var frames: [ControlFrame]
    public var userFrame: Int?
    public var cycles: Int
    public var cyclesWithGrowth: Int
    public var objectsPerCycle: [Int]
    public var bytesPerCycle: [Int]
    public var averageBytesPerCycle: Int
    public var survivingObjects: UInt64
    public var survivingBytes: UInt64

    public init(json: JSONValue) throws(ControlProtocolError) {
        let m = try Members(json)
        kind = try m.required("kind", \.string)
        typeName = try m.optional("typeName", \.string)
        guard let frames = try m.list("frames", { (v: JSONValue) throws(ControlProtocolError) in try ControlFrame(json: v) })
        else { throw ControlProtocolError("\"frames\" is missing") }
        self.frames = frames
        userFrame = try m.optional("userFrame", \.int)
        cycles = try m.required("cycles", \.int)
        cyclesWithGrowth = try m.required("cyclesWithGrowth", \.int)
        objectsPerCycle = try m.required("objectsPerCycle", Self.ints)
        bytesPerCycle = try m.required("bytesPerCycle", Self.ints)
        averageBytesPerCycle = try m.required("averageBytesPerCycle", \.int)
        survivingObjects = try m.required("survivingObjects", \.uint64)
        survivingBytes = try m.required("survivingBytes", \.uint64)
    }

    static func ints(_ v: JSONValue) -> [Int]? {
        guard let items = v.array else { return nil }
        var out: [Int] = []
        for item in items {
            guard let n = item.int else { return nil }
            out.append(n)
        }
        return out
    }
}

/// The `growth` answer.
public struct ControlGrowthAnswer: ControlAnswer {
    public var ok: Bool
    public var label: String?
    public var marks: Int
    public var cycles: Int
    public var judgedCycles: Int
    public var warmUp: Int
    public var toleratedMisses: Int
    public var findings: [ControlFinding]
    public var notes: [String]

    public init(json: JSONValue) throws(ControlProtocolError) {
        let m = try Members(json)
        ok = try m.required("ok", \.bool)
        label = try m.optional("label", \.string)
        marks = try m.required("marks", \.int)
        cycles = try m.required("cycles", \.int)
        judgedCycles = try m.required("judgedCycles", \.int)
        warmUp = try m.required("warmUp", \.int)
        toleratedMisses = try m.required("toleratedMisses", \.int)
        guard let findings = try m.list("findings", { (v: JSONValue) throws(ControlProtocolError) in try ControlFinding(json: v) })
        else { throw ControlProtocolError("\"findings\" is missing") }
        self.findings = findings
        guard let notes = try m.list("notes", { (v: JSONValue) throws(ControlProtocolError) -> String in
            guard let s = v.string else { throw ControlProtocolError("\"notes\" has the wrong type") }
            return s
        }) else { throw ControlProtocolError("\"notes\" is missing") }
        self.notes = notes
    }
}

/// The `object` answer: written by the collector (encoded with this type, optional members
/// left out when nil) and read by the client.
public struct ControlObjectAnswer: ControlAnswer, Encodable {
    public var ok: Bool
    public var op: String
    /// The address asked about, `0x…`.
    public var address: String
    public var live: Bool
    public var allocation: UInt64?
    public var typeName: String?
    public var size: UInt64?
    public var generation: Int?
    public var generationLabel: String?
    public var previousMark: String?
    public var frames: [ControlFrame]?
    public var userFrame: Int?

    /// The answer for a block that is not live (the collector fills in the rest for a live one).
    public init(address: String) {
        ok = true
        op = ControlOp.object.rawValue
        self.address = address
        live = false
    }

    public init(json: JSONValue) throws(ControlProtocolError) {
        let m = try Members(json)
        ok = try m.required("ok", \.bool)
        op = try m.optional("op", \.string) ?? ControlOp.object.rawValue
        address = try m.optional("address", \.string) ?? ""
        live = try m.required("live", \.bool)
        allocation = try m.optional("allocation", \.uint64)
        typeName = try m.optional("typeName", \.string)
        size = try m.optional("size", \.uint64)
        generation = try m.optional("generation", \.int)
        generationLabel = try m.optional("generationLabel", \.string)
        previousMark = try m.optional("previousMark", \.string)
        frames = try m.list("frames", { (v: JSONValue) throws(ControlProtocolError) in try ControlFrame(json: v) })
        userFrame = try m.optional("userFrame", \.int)
    }
}

/// One step of a `retention` answer's path or cycle: a root (`kind` "root"), a block
/// ("block"), or the middle of a long path left out ("elided", `name` says how many blocks). `field` names the reference leaving this block towards the next step (a stored
/// property, else `+0x…`, the offset in the block); nil on a root and on the path's last block.
public struct ControlRetentionStep: ControlAnswer, Encodable, Equatable {
    /// "root", "block" or "elided".
    public var kind: String
    /// A root's name (`static EventBus.shared`, `thread 2's stack in main`, …) or a block's
    /// (its Swift type, else `blocks from <function>`).
    public var name: String
    public var field: String?
    /// More about the step: a root's module, a block's allocation site (`function, file:line`).
    public var detail: String?

    public init(kind: String, name: String, field: String? = nil, detail: String? = nil) {
        self.kind = kind
        self.name = name
        self.field = field
        self.detail = detail
    }

    public init(json: JSONValue) throws(ControlProtocolError) {
        let m = try Members(json)
        kind = try m.required("kind", \.string)
        name = try m.required("name", \.string)
        field = try m.optional("field", \.string)
        detail = try m.optional("detail", \.string)
    }
}

/// The `retention` answer: written by the collector (encoded with this type, nil members left
/// out) and read by the client. `live` is false when no live block contains the address;
/// `reachable` false when a live block is referenced from no root (then `path` is absent).
public struct ControlRetentionAnswer: ControlAnswer, Encodable, Equatable {
    public var ok: Bool
    public var op: String
    /// The address asked about, `0x…`.
    public var address: String
    public var live: Bool
    public var reachable: Bool
    /// Root first, the block asked about last.
    public var path: [ControlRetentionStep]?
    /// The shortest reference cycle through the block, starting at it; nil when it is on none.
    public var cycle: [ControlRetentionStep]?
    /// True when only the asking thread's own stack or registers (the request's `tid`) reach
    /// the block: a variable of the caller, or a stale copy of the address. Nil: false.
    public var askingThreadOnly: Bool?

    public init(address: String, live: Bool = false, reachable: Bool = false,
                path: [ControlRetentionStep]? = nil, cycle: [ControlRetentionStep]? = nil,
                askingThreadOnly: Bool? = nil) {
        ok = true
        op = ControlOp.retention.rawValue
        self.address = address
        self.live = live
        self.reachable = reachable
        self.path = path
        self.cycle = cycle
        self.askingThreadOnly = askingThreadOnly
    }

    public init(json: JSONValue) throws(ControlProtocolError) {
        let m = try Members(json)
        ok = try m.required("ok", \.bool)
        op = try m.optional("op", \.string) ?? ControlOp.retention.rawValue
        address = try m.optional("address", \.string) ?? ""
        live = try m.optional("live", \.bool) ?? false
        reachable = try m.required("reachable", \.bool)
        path = try m.list("path", { (v: JSONValue) throws(ControlProtocolError) in try ControlRetentionStep(json: v) })
        cycle = try m.list("cycle", { (v: JSONValue) throws(ControlProtocolError) in try ControlRetentionStep(json: v) })
        askingThreadOnly = try m.optional("askingThreadOnly", \.bool)
    }

    /// `EventBus.shared → EventBus.subscribers → … → ProfileViewModel`: each step its name,
    /// a block joined to the field it holds the next step by.
    public static func text(_ steps: [ControlRetentionStep]) -> String {
        steps.map { step in
            guard let field = step.field else { return step.name }
            return field.hasPrefix("+") ? "\(step.name)\(field)" : "\(step.name).\(field)"
        }.joined(separator: " → ")
    }
}
