// Icicle (top-down flame graph) of allocation stacks: the tree, its static SVG, its JSON.

import HeapGenReport
import HeapGenUnits

/// A tree of call stacks weighted by bytes, outermost frame at the root. Rendered as a
/// static SVG (readable without JavaScript); the page's script re-lays it out from the
/// same tree (``json``) to zoom into a node.
struct Icicle {
    /// One node: a function (merged by name under the same parent).
    final class Node {
        let name: String
        let location: String?
        var value: UInt64 = 0
        /// Findings (or diff entries) whose stacks pass through here: anchors to link to.
        var anchors: [String] = []
        var children: [Node] = []
        var index: [String: Int] = [:]

        init(name: String, location: String?) {
            self.name = name
            self.location = location
        }

        func child(_ name: String, location: String?) -> Node {
            if let i = index[name] { return children[i] }
            let n = Node(name: name, location: location)
            index[name] = children.count
            children.append(n)
            return n
        }
    }

    /// Levels drawn at most (deeper frames are summed into their ancestor).
    static let maxDepth = 40
    /// Nodes narrower than this share of the root are not drawn.
    static let minShare = 0.002
    /// Nodes drawn at most in the static SVG (the widest; the script draws from the stacks).
    static let maxStaticNodes = 1200

    /// One stack as added: for the script.
    struct Leaf {
        var frames: [(name: String, location: String?)]
        var anchor: String
        var bytes: UInt64
        var perCycle: [Int]
    }

    let root: Node
    private(set) var leaves: [Leaf] = []
    let width = 980.0
    let rowHeight = 20.0

    init(rootName: String) {
        root = Node(name: rootName, location: nil)
    }

    /// Adds a stack (innermost first, as reports store them) weighing `bytes`, linking to `anchor`.
    /// `perCycle` (bytes left by each cycle the reader may pick) goes to the script only.
    mutating func add(frames: [Report.Frame], bytes: UInt64, anchor: String, perCycle: [Int] = []) {
        let path = frames.reversed().prefix(Self.maxDepth).map { (name: HTMLText.frameName($0), location: HTMLText.location($0)) }
        leaves.append(Leaf(frames: path, anchor: anchor, bytes: bytes, perCycle: perCycle))
        guard bytes > 0 else { return }
        root.value += bytes
        var node = root
        for frame in path {
            node = node.child(frame.name, location: frame.location)
            node.value += bytes
            if node.anchors.count < 8 && node.anchors.last != anchor { node.anchors.append(anchor) }
        }
    }

    /// The depth of the deepest drawn node.
    private func depth(_ n: Node, _ min: UInt64) -> Int {
        1 + (n.children.filter { $0.value >= min }.map { depth($0, min) }.max() ?? 0)
    }

    /// Static SVG: every node at least ``minShare`` wide, widest children first.
    func svg(id: String) -> String {
        guard root.value > 0 else {
            return "<p class=\"empty\">Nothing to show: no bytes left behind.</p>"
        }
        var values: [UInt64] = []
        func collect(_ n: Node) { values.append(n.value); n.children.forEach(collect) }
        collect(root)
        var min = Swift.max(1, UInt64(Double(root.value) * Self.minShare))
        if values.count > Self.maxStaticNodes {
            values.sort(by: >)
            min = Swift.max(min, values[Self.maxStaticNodes - 1] + 1)
        }
        let levels = depth(root, min)
        let h = Double(levels) * rowHeight
        var out = "<svg class=\"icicle\" id=\"\(id)\" viewBox=\"0 0 \(HTMLText.num(width)) \(HTMLText.num(h))\" xmlns=\"http://www.w3.org/2000/svg\">"
        func draw(_ n: Node, x: Double, w: Double, level: Int) {
            let y = Double(level) * rowHeight
            let share = Double(n.value) / Double(root.value) * 100
            let tip = "\(n.name)\(n.location.map { " (\($0))" } ?? ""): \(HumanUnits.bytes(n.value)), \(HTMLText.num(share))%"
            out += "<g class=\"node\"><title>\(HTMLText.escape(tip))</title>"
            let hue = level == 0 ? "root" : "h\(abs(n.name.hashValueStable) % 6)"
            let rect = "<rect class=\"\(hue)\" x=\"\(HTMLText.num(x))\" y=\"\(HTMLText.num(y))\" width=\"\(HTMLText.num(Swift.max(0.5, w - 0.5)))\" height=\"\(HTMLText.num(rowHeight - 1))\"/>"
            let chars = Int((w - 6) / 6.6)
            let label = chars >= 3 ? (n.name.count > chars ? String(n.name.prefix(chars - 1)) + "…" : n.name) : ""
            let text = label.isEmpty ? "" : "<text x=\"\(HTMLText.num(x + 3))\" y=\"\(HTMLText.num(y + 14))\">\(HTMLText.escape(label))</text>"
            if let anchor = n.anchors.first, level > 0 {
                out += "<a href=\"#\(anchor)\">\(rect)\(text)</a>"
            } else {
                out += rect + text
            }
            out += "</g>"
            var cx = x
            for c in n.children.sorted(by: { $0.value > $1.value }) where c.value >= min {
                let cw = w * Double(c.value) / Double(n.value)
                draw(c, x: cx, w: cw, level: level + 1)
                cx += cw
            }
        }
        draw(root, x: 0, w: width, level: 0)
        return out + "</svg>"
    }

    /// The stacks as compact JSON for the page's script, which builds the same tree, zooms
    /// and re-weighs it per cycle: `{"leaves":[{"f":[frame index…],"a":anchor,"w":bytes,"p":[bytes per cycle]}],
    /// "frames":[[name,location]…]}`, frames outermost first.
    func json() -> String {
        // Frames as indices into a table of distinct [name, location] pairs: stacks share most frames.
        var table: [String] = []
        var index: [String: Int] = [:]
        var out = "{\"leaves\":["
        for (i, leaf) in leaves.enumerated() {
            if i > 0 { out += "," }
            let ids = leaf.frames.map { frame -> String in
                let entry = "[\(HTMLText.jsonString(frame.name)),\(frame.location.map(HTMLText.jsonString) ?? "null")]"
                if let k = index[entry] { return String(k) }
                index[entry] = table.count
                table.append(entry)
                return String(table.count - 1)
            }
            out += "{\"f\":[" + ids.joined(separator: ",") + "],\"a\":\(HTMLText.jsonString(leaf.anchor)),\"w\":\(leaf.bytes)"
            if !leaf.perCycle.isEmpty { out += ",\"p\":[" + leaf.perCycle.map(String.init).joined(separator: ",") + "]" }
            out += "}"
        }
        out += "],\"frames\":[" + table.joined(separator: ",") + "]}"
        return HTMLText.scriptSafe(out)
    }
}

extension String {
    /// A hash that is the same in every run (Swift's `hashValue` is seeded): picks a node's colour.
    var hashValueStable: Int {
        var h: UInt32 = 2166136261
        for b in utf8 { h = (h ^ UInt32(b)) &* 16777619 }
        return Int(h % 1_000_003)
    }
}
