// A heap profile as folded stacks ("collapsed" format of flamegraph.pl, speedscope, inferno).

import HeapGenSymbolication
import HeapGenTrace

/// Folded stacks: one line per distinct stack, `outermost;…;innermost VALUE`.
///
/// Frames are short function names (inlined frames included, each its own frame), or
/// `module+0xOFFSET` without a symbol; `;` in a name becomes `:` and line breaks become
/// spaces. Sites whose frames print the same are one line; lines with value 0 are left
/// out; lines are sorted. The values of all lines add up to the profile's total of the
/// chosen sample (for `inuse_space`, the live requested bytes at the point).
///
/// Lines are folded in a tree of names, not as strings: the stacks are read from the trace
/// twice (once for their distinct addresses, once to fold them after those are
/// symbolicated), and the text is written as the tree is walked in sorted order.
public enum CollapsedExport {
    /// Writes the folded stacks of `profile` for `sample` to `sink` a piece at a time;
    /// returns notes on symbolication.
    ///
    /// - Throws: ``TraceError`` if the trace cannot be read again, or what `sink` throws.
    public static func write(_ profile: HeapProfile, sample: HeapSample = .inuseSpace,
                             symbolication: StackSymbolication = StackSymbolication(),
                             to sink: ([UInt8]) throws -> Void) throws -> [String] {
        let context = profile.context
        let counts: (HeapProfile.Sample) -> Bool = { $0.values.value(sample) != 0 }
        var table = AddressTable(timeline: ModuleTimeline(events: context.analysis.modules))
        try profile.forEachStack(including: counts) { frames, position, _ in
            _ = table.add(frames, at: position)
        }
        let (addresses, notes) = table.symbolicate(with: symbolication, stored: StoredSymbols(tracePath: context.trace))

        var tree = NameTree()
        // Per distinct address: its frames' names, outermost (the containing function) first.
        let entryNames = addresses.map { $0.frameNames.reversed().map { tree.name(clean($0)) } }
        table.rewind()
        try profile.forEachStack(including: counts) { frames, position, samples in
            let entries = table.add(frames, at: position)
            var value: Int64 = 0
            for i in samples { value &+= profile.samples[i].values.value(sample) }
            var node = NameTree.root
            for e in entries.reversed() {
                for name in entryNames[Int(e)] { node = tree.child(of: node, name: name) }
            }
            if node == NameTree.root {
                tree.noStack &+= value
            } else {
                tree.add(value, to: node)
            }
        }
        try tree.writeLines(to: sink)
        return notes
    }

    /// The folded stacks of `profile` for `sample`, whole, and notes on symbolication.
    public static func render(_ profile: HeapProfile, sample: HeapSample = .inuseSpace,
                              symbolication: StackSymbolication = StackSymbolication()) throws -> (text: String, notes: [String]) {
        var bytes: [UInt8] = []
        let notes = try write(profile, sample: sample, symbolication: symbolication) { bytes.append(contentsOf: $0) }
        return (String(decoding: bytes, as: UTF8.self), notes)
    }

    static func clean(_ name: String) -> String {
        var out = ""
        for c in name {
            switch c {
            case ";": out.append(":")
            case "\n", "\r", "\t": out.append(" ")
            default: out.append(c)
            }
        }
        return out
    }
}

/// Folded stacks as a tree: a node per distinct (parent, name), outermost frame at the
/// root, with the value of the stacks that end there.
struct NameTree {
    static let root: UInt32 = 0
    private var names = StringTable()
    /// Per node (0: the root): its name and parent, and the value of stacks ending there.
    private var nodeName: [UInt32] = [0]
    private var nodeParent: [UInt32] = [0]
    private var nodeValue: [Int64] = [0]
    private var nodeIndex: [UInt64: UInt32] = [:]
    /// The value of the stacks without frames (`[no stack]`).
    var noStack: Int64 = 0

    /// The number of `name`.
    mutating func name(_ name: String) -> UInt32 {
        UInt32(names.index(name))
    }

    /// The node `name` under `parent`, made if new.
    mutating func child(of parent: UInt32, name: UInt32) -> UInt32 {
        let key = UInt64(parent) << 32 | UInt64(name)
        if let n = nodeIndex[key] { return n }
        let n = UInt32(nodeName.count)
        nodeIndex[key] = n
        nodeName.append(name)
        nodeParent.append(parent)
        nodeValue.append(0)
        return n
    }

    mutating func add(_ value: Int64, to node: UInt32) {
        nodeValue[Int(node)] &+= value
    }

    /// Writes a line per node with a non-zero value (and `[no stack]`), in the order of
    /// the lines' text, in pieces of about 1 MB.
    ///
    /// A walk in string order: under a node, each child stands for two items, its own line
    /// (key: its name) and its subtree (key: its name and `;`); every line of an item starts
    /// with the item's key, and no key (no name has a `;`) is a prefix of another but a
    /// name of its name-and-`;`, so sorting the items by key sorts their lines.
    func writeLines(to sink: ([UInt8]) throws -> Void) throws {
        // Children of every node, as one array by parent (built from the parent links).
        var start = [Int](repeating: 0, count: nodeName.count + 1)
        for n in 1..<nodeName.count { start[Int(nodeParent[n]) + 1] += 1 }
        for i in 1..<start.count { start[i] += start[i - 1] }
        var fill = start
        var children = [UInt32](repeating: 0, count: max(nodeName.count - 1, 0))
        for n in 1..<nodeName.count {
            let p = Int(nodeParent[n])
            children[fill[p]] = UInt32(n)
            fill[p] += 1
        }
        var out: [UInt8] = []
        var prefix: [UInt8] = []
        func line(_ value: Int64) throws {
            out.append(contentsOf: prefix)
            out.append(UInt8(ascii: " "))
            out.append(contentsOf: String(value).utf8)
            out.append(UInt8(ascii: "\n"))
            if out.count >= 1 << 20 {
                try sink(out)
                out.removeAll(keepingCapacity: true)
            }
        }
        /// An item under a node: a child's own line, or its subtree (a child node), or the
        /// root's `[no stack]` line (node 0).
        struct Item {
            var key: String
            var node: UInt32
            var subtree: Bool
        }
        func walk(_ node: UInt32) throws {
            var items: [Item] = []
            if node == Self.root && noStack != 0 { items.append(Item(key: "[no stack]", node: 0, subtree: false)) }
            for c in children[start[Int(node)]..<start[Int(node) + 1]] {
                let name = names.strings[Int(nodeName[Int(c)])]
                if nodeValue[Int(c)] != 0 { items.append(Item(key: name, node: c, subtree: false)) }
                if start[Int(c) + 1] > start[Int(c)] { items.append(Item(key: name + ";", node: c, subtree: true)) }
            }
            items.sort { $0.key < $1.key }
            let mark = prefix.count
            for item in items {
                prefix.append(contentsOf: item.key.utf8)
                if item.subtree {
                    try walk(item.node)
                } else {
                    try line(item.node == Self.root ? noStack : nodeValue[Int(item.node)])
                }
                prefix.removeSubrange(mark...)
            }
        }
        try walk(Self.root)
        if !out.isEmpty { try sink(out) }
    }
}
