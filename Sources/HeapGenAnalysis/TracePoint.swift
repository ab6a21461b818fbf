// Points in a trace that diffs and exports measure the live heap at.

/// A point of a trace, as a user names it on the command line.
public enum TracePoint: Sendable, Equatable, CustomStringConvertible {
    /// Before the first record: nothing is live.
    case start
    /// After the last record.
    case end
    /// The mark with this index (0-based, among all marks of the trace, settle marks included).
    case mark(Int)
    /// The mark with this label; the label must name exactly one mark.
    case label(String)
    /// The final snapshot of a generation analysis: a `heapgen.settle` mark after the last
    /// ordinary mark, else the last ordinary mark, else (no marks) the end of the trace.
    case finalSnapshot

    /// Reads a command-line spelling: `start`, `end`, `last-mark`, a decimal mark index,
    /// anything else a mark label. The keywords win over labels spelled the same.
    public init(parsing text: String) {
        switch text {
        case "start": self = .start
        case "end": self = .end
        case "last-mark": self = .finalSnapshot
        default:
            if !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let index = Int(text) {
                self = .mark(index)
            } else {
                self = .label(text)
            }
        }
    }

    public var description: String {
        switch self {
        case .start: "start"
        case .end: "end"
        case .mark(let i): "mark #\(i)"
        case .label(let l): "mark \"\(l)\""
        case .finalSnapshot: "last-mark"
        }
    }
}

/// Where a ``TracePoint`` lies in one trace.
public struct ResolvedPoint: Codable, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Codable, Sendable {
        case start, end, mark
    }

    /// Start, end, or a mark.
    public var kind: Kind
    /// Index of the mark among all marks of the trace; `nil` for start and end.
    public var index: Int?
    /// The mark's label; `nil` for start and end.
    public var label: String?

    public init(kind: Kind, index: Int? = nil, label: String? = nil) {
        self.kind = kind
        self.index = index
        self.label = label
    }

    public static let start = ResolvedPoint(kind: .start)
    public static let end = ResolvedPoint(kind: .end)

    private enum CodingKeys: String, CodingKey {
        case kind, index, label
    }

    /// Encodes every field; `index` and `label` as `null` for start and end.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind, forKey: .kind)
        try c.encode(index, forKey: .index)
        try c.encode(label, forKey: .label)
    }

    /// `start`, `end`, `mark #3 "cycle"`.
    public var description: String {
        switch kind {
        case .start: return "start"
        case .end: return "end"
        case .mark:
            let l = label.map { $0.isEmpty ? "" : " \"\($0)\"" } ?? ""
            return "mark #\(index ?? -1)\(l)"
        }
    }
}

/// A point that does not exist in a trace (unknown or ambiguous label, index out of range).
public struct TracePointError: Error, CustomStringConvertible, Sendable {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

/// Follows the marks of a trace as they come and tells when a ``TracePoint`` is reached.
///
/// Call ``reached(markIndex:label:)`` at every mark, in order; take the measurement each
/// time it returns true (for ``TracePoint/finalSnapshot`` that can happen several times:
/// the last one counts). ``TracePoint/start`` and ``TracePoint/end`` are never reached at a
/// mark: measure before and after the pass. A label is reached at the first mark with that
/// label; if another mark has the same label the point is ambiguous, which
/// ``resolve(marks:)`` reports after the pass.
public struct TracePointWatcher: Sendable {
    public let point: TracePoint
    /// Index of the mark where the point was (last) reached.
    public private(set) var reachedAt: Int?
    private var labelCount = 0
    /// Final snapshot: the current candidate mark, and whether it is a settle mark.
    private var candidate: (index: Int, settle: Bool)?

    public init(_ point: TracePoint) {
        self.point = point
    }

    /// True when the point lies after the last record: ``TracePoint/end``, or a final
    /// snapshot in a trace without marks. Ask after the pass.
    public var isAtEnd: Bool {
        point == .end || (point == .finalSnapshot && reachedAt == nil)
    }

    /// Called at mark `index`; true if the point is (or, for the final snapshot, may be) this mark.
    public mutating func reached(markIndex index: Int, label: String) -> Bool {
        switch point {
        case .start, .end:
            return false
        case .mark(let i):
            if i == index { reachedAt = index; return true }
            return false
        case .label(let l):
            guard l == label else { return false }
            labelCount += 1
            if labelCount == 1 { reachedAt = index; return true }
            return false
        case .finalSnapshot:
            // GenerationAnalyzer's rule: the last ordinary mark, or the first settle mark after it.
            let settle = label == AnalysisOptions.settleLabel
            if !settle || candidate.map({ !$0.settle }) ?? true {
                candidate = (index, settle)
                reachedAt = index
                return true
            }
            return false
        }
    }

    /// The point in the trace whose marks are `marks`, or why there is none.
    public func resolve(marks: [GenerationMark]) -> Result<ResolvedPoint, TracePointError> {
        func at(_ i: Int) -> ResolvedPoint { ResolvedPoint(kind: .mark, index: i, label: marks[i].label) }
        func known() -> String {
            if marks.isEmpty { return "the trace has no marks" }
            let shown = marks.prefix(12).map { "#\($0.index) \"\($0.label)\"" }.joined(separator: ", ")
            return "its marks: " + shown + (marks.count > 12 ? ", … (\(marks.count) in all)" : "")
        }
        switch point {
        case .start: return .success(.start)
        case .end: return .success(.end)
        case .finalSnapshot:
            return .success(reachedAt.map(at) ?? .end)
        case .mark(let i):
            guard let r = reachedAt else {
                return .failure(TracePointError("no mark #\(i) in the trace (\(known()))"))
            }
            return .success(at(r))
        case .label(let l):
            guard let r = reachedAt else {
                return .failure(TracePointError("no mark labelled \"\(l)\" in the trace (\(known()); a number is a mark index; start, end and last-mark are points too)"))
            }
            if labelCount > 1 {
                let indices = marks.filter { $0.label == l }.map { "#\($0.index)" }
                let shown = indices.prefix(8).joined(separator: ", ") + (indices.count > 8 ? ", …" : "")
                return .failure(TracePointError("\(labelCount) marks are labelled \"\(l)\" (\(shown)): name one by its index"))
            }
            return .success(at(r))
        }
    }
}
