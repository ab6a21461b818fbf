// "Why is it alive": the report's model of retention paths, cycles and held findings.

import HeapGenSymbolication

extension Report {
    /// One step of a retention path or cycle: a root, or a heap block, and the reference that
    /// leaves it towards the next step.
    public struct RetentionStep: Codable, Sendable, Equatable {
        /// What the step is.
        public enum Kind: String, Codable, Sendable {
            /// Where the path starts: a global, a thread's stack slot or register, other memory.
            case root
            /// A heap block.
            case block
            /// The middle of a long path or cycle, left out (`name`: `N more blocks`).
            case elided
        }

        /// Steps a report keeps at each end of a path or cycle longer than twice this plus one.
        public static let keptAtEachEnd = 6
        public var kind: Kind
        /// Roots: the global's symbol (`g_clients`, `static Demo.EventBus.shared`), `thread N's
        /// stack in <function>`, `thread N's register rbx`. Blocks: the Swift type name, else
        /// `blocks from <function>` of the block's site.
        public var name: String
        /// Roots: the module a global is in (file name). Blocks: the site's first user frame as
        /// `function, file:line` (nil when unknown).
        public var detail: String?
        /// The Swift stored property holding the reference to the next step (nil for roots,
        /// C blocks, the last step, or an offset no property covers).
        public var field: String?
        /// Byte offset of the reference to the next step inside this block (roots: inside the
        /// global's symbol, when known); nil on the last step.
        public var offset: UInt64?
        /// Blocks: the Swift type name, if any.
        public var typeName: String?
        /// Blocks: the site's first user frame.
        public var frame: Frame?

        public init(kind: Kind, name: String, detail: String? = nil, field: String? = nil, offset: UInt64? = nil,
                    typeName: String? = nil, frame: Frame? = nil) {
            self.kind = kind
            self.name = name
            self.detail = detail
            self.field = field
            self.offset = offset
            self.typeName = typeName
            self.frame = frame
        }

        /// The reference to the next step as text: `.next` for a property, `+0x10` for an
        /// offset, empty for a root at its symbol's start or the last step.
        public var edgeText: String {
            if let field { return "." + field }
            guard let offset else { return "" }
            if kind == .root && offset == 0 { return "" }
            return "+0x" + String(offset, radix: 16)
        }

        /// The step as one text item: `g_clients (retention)`, `Demo.Model .subscribers`,
        /// `blocks from accept_client (retention.c:14) +0x8`.
        public var text: String {
            if kind == .elided { return "… \(name) …" }
            var s = name
            if let detail { s += " (\(detail))" }
            let edge = edgeText
            if !edge.isEmpty { s += kind == .root && field == nil ? edge : " " + edge }
            return s
        }
    }

    /// The reference-graph scan the retention answers come from.
    public struct RetentionScan: Codable, Sendable, Equatable {
        /// `exit`, `mark` (`--retention-at LABEL`) or `request` (a program's scan request).
        public var trigger: String
        /// The mark's label, for `mark`.
        public var label: String?
        /// Bytes the scan read from the program.
        public var bytesRead: UInt64
        /// How long the program's threads were stopped, nanoseconds.
        public var nanoseconds: UInt64
        /// Live blocks and references in the graph.
        public var blocks: Int
        public var references: Int

        public init(trigger: String, label: String?, bytesRead: UInt64, nanoseconds: UInt64, blocks: Int, references: Int) {
            self.trigger = trigger
            self.label = label
            self.bytesRead = bytesRead
            self.nanoseconds = nanoseconds
            self.blocks = blocks
            self.references = references
        }
    }
}

/// Text forms of retention paths and cycles, kept short.
public enum RetentionText {
    /// Steps kept at each end of a long path.
    public static let keptAtEachEnd = 2

    /// `a → b → c`, with the middle of a path longer than 5 steps shortened to `…`: the first
    /// two steps, `…`, the last two.
    public static func path(_ steps: [Report.RetentionStep]) -> String {
        let items = steps.map(\.text)
        guard items.count > 2 * keptAtEachEnd + 1 else { return items.joined(separator: " → ") }
        let hidden = steps.dropFirst(keptAtEachEnd).dropLast(keptAtEachEnd).filter { $0.kind != .elided }.count
            + steps.filter { $0.kind == .elided }.compactMap { Int($0.name.split(separator: " ").first ?? "") }.reduce(0, +)
        return (items.prefix(keptAtEachEnd) + ["… \(hidden) more …"] + items.suffix(keptAtEachEnd)).joined(separator: " → ")
    }

    /// `A.b → B.a → A`: each block of the cycle by its short name and the reference leaving
    /// it, back to the first.
    public static func cycle(_ steps: [Report.RetentionStep]) -> String {
        guard let first = steps.first else { return "" }
        let items = steps.map { $0.kind == .elided ? $0.text : shortName($0) + $0.edgeText }
        return (items + [shortName(first)]).joined(separator: " → ")
    }

    /// A block's name without its module prefix (`Demo.A` → `A`); C blocks keep theirs.
    static func shortName(_ step: Report.RetentionStep) -> String {
        if let t = step.typeName { return t.split(separator: ".").last.map(String.init) ?? t }
        return step.name
    }
}
