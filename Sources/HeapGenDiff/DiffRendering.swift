// heapgen-diff/1 as text and JSON.

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HeapGenSymbolication
import HeapGenUnits

/// `heapgen-diff/1` JSON: pretty-printed, keys sorted, slashes unescaped, addresses as `"0x…"`.
public enum DiffJSON {
    /// The JSON text of `diff`, with a final newline.
    public static func render(_ diff: HeapDiff) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(diff), as: UTF8.self) + "\n"
    }

    /// Reads a diff back (unknown keys are ignored).
    public static func decode(_ data: Data) throws -> HeapDiff {
        try JSONDecoder().decode(HeapDiff.self, from: data)
    }
}

/// The text form of a diff: totals, then the entries with the largest |bytesDelta|.
public enum DiffText {
    /// Entries shown by default.
    public static let defaultLimit = 20
    /// Frames shown after the user frame.
    static let stackFrames = 4

    /// Renders `diff`, listing at most `limit` changed entries (0: all).
    public static func render(_ diff: HeapDiff, limit: Int = defaultLimit) -> String {
        var out: [String] = []
        let c = diff.totals.change
        switch diff.mode {
        case .marks:
            out.append("heapgen diff \(diff.base.trace): \(diff.base.point) → \(diff.new.point)")
        case .traces:
            out.append("heapgen diff \(diff.base.trace) (\(diff.base.point)) → \(diff.new.trace) (\(diff.new.point))")
        }
        out.append("live heap: \(amount(c.objectsBefore, c.bytesBefore)) → \(amount(c.objectsAfter, c.bytesAfter))"
            + " (\(signedObjects(c.objectsDelta)), \(HumanUnits.signedBytes(c.bytesDelta)))")
        if let a = c.added, let r = c.removed {
            out.append("added \(HumanUnits.plural(a.objects, "object")) (\(HumanUnits.bytes(a.bytes))), removed \(HumanUnits.plural(r.objects, "object")) (\(HumanUnits.bytes(r.bytes)))")
        }
        if diff.mode == .traces {
            let t = diff.totals
            out.append("sites: \(t.matchedEntries) in both, \(t.addedEntries) only in the new trace, \(t.removedEntries) only in the base (matched by frames, depth \(diff.options.depth))")
        }

        let changed = diff.entries.filter { !$0.change.isUnchanged }
        let shown = limit > 0 ? Array(changed.prefix(limit)) : changed
        out.append("")
        if changed.isEmpty {
            out.append("No site changed (\(HumanUnits.plural(diff.entries.count, "site")) compared).")
        }
        for e in shown {
            let x = e.change
            var head = "\(pad(HumanUnits.signedBytes(x.bytesDelta), 10))  \(pad(signedObjects(x.objectsDelta), 13))"
            head += "  \(HumanUnits.bytes(x.bytesBefore)) → \(HumanUnits.bytes(x.bytesAfter))"
            if let a = x.added, let r = x.removed {
                head += "; added \(HumanUnits.count(a.objects)) (\(HumanUnits.bytes(a.bytes))), removed \(HumanUnits.count(r.objects)) (\(HumanUnits.bytes(r.bytes)))"
            }
            switch e.status {
            case .added where diff.mode == .traces: head += "  [new site]"
            case .removed where diff.mode == .traces: head += "  [gone]"
            default: break
            }
            out.append(head)
            out.append(contentsOf: stackLines(e))
        }
        let hidden = changed.count - shown.count
        let unchanged = diff.entries.count - changed.count
        var tail: [String] = []
        if hidden > 0 { tail.append("\(hidden) more changed site\(hidden == 1 ? "" : "s") (--limit 0 lists all)") }
        if unchanged > 0 && !changed.isEmpty { tail.append("\(unchanged) unchanged") }
        if !tail.isEmpty {
            out.append("")
            out.append(tail.joined(separator: "; ") + ".")
        }
        if !diff.notes.isEmpty {
            out.append("")
            out.append(contentsOf: diff.notes.map { "note: " + $0 })
        }
        return out.joined(separator: "\n") + "\n"
    }

    /// The user frame (with the type), then a short stack of its callers.
    static func stackLines(_ e: HeapDiff.Entry) -> [String] {
        guard !e.frames.isEmpty else {
            return ["    " + (e.typeName.map { "\($0) " } ?? "") + "(no stack)"]
        }
        let first = e.userFrame ?? 0
        let f = e.frames[first]
        var line = "    " + frameText(f)
        if let t = e.typeName { line += "  [\(t)]" }
        var lines = [line]
        let callers = e.frames[(first + 1)...].prefix(stackFrames).map { "< " + (($0.shortFunction ?? $0.function) ?? unknown($0)) }
        if !callers.isEmpty { lines.append("      " + callers.joined(separator: " ")) }
        return lines
    }

    static func frameText(_ f: SymbolicatedFrame) -> String {
        let name = (f.shortFunction ?? f.function) ?? unknown(f)
        guard let file = f.file else { return name }
        let base = file.split(separator: "/").last.map(String.init) ?? file
        return "\(name)  \(base)" + (f.line.map { ":\($0)" } ?? "")
    }

    static func unknown(_ f: SymbolicatedFrame) -> String {
        if let place = f.moduleAndOffset { return place }
        return (f.module.map { ($0.split(separator: "/").last.map(String.init) ?? $0) + " " } ?? "") + SymbolicatedFrame.formatAddress(f.address)
    }

    static func amount(_ objects: UInt64, _ bytes: UInt64) -> String {
        "\(HumanUnits.plural(objects, "object")), \(HumanUnits.bytes(bytes))"
    }

    static func signedObjects(_ n: Int) -> String {
        (n > 0 ? "+" : "") + HumanUnits.plural(n, "object")
    }

    static func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
    }
}
