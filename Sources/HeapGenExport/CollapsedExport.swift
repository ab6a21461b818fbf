// A heap profile as folded stacks ("collapsed" format of flamegraph.pl, speedscope, inferno).

import HeapGenSymbolication

/// Folded stacks: one line per distinct stack, `outermost;…;innermost VALUE`.
///
/// Frames are short function names (inlined frames included, each its own frame), or
/// `module+0xOFFSET` without a symbol; `;` in a name becomes `:` and line breaks become
/// spaces. Sites whose frames print the same are one line; lines with value 0 are left
/// out; lines are sorted. The values of all lines add up to the profile's total of the
/// chosen sample (for `inuse_space`, the live requested bytes at the point).
public enum CollapsedExport {
    /// The folded stacks of `profile` for `sample`, and notes on symbolication.
    public static func render(_ profile: HeapProfile, sample: HeapSample = .inuseSpace,
                              symbolication: StackSymbolication = StackSymbolication()) -> (text: String, notes: [String]) {
        let context = profile.context
        let bySite = profile.valuesBySite.filter { $0.value.value(sample) != 0 }
        let symbolicated = symbolication.symbolicate(bySite.keys.map { context.sites[$0].stack }, in: context)
        var lines: [String: Int64] = [:]
        for (site, values) in bySite {
            let stack = symbolicated.stacks[context.sites[site].stack]
            var names: [String] = []
            if let stack {
                for i in stack.frames.indices.reversed() { names.append(clean(stack.name(ofFrame: i))) }
            }
            let folded = names.isEmpty ? "[no stack]" : names.joined(separator: ";")
            lines[folded, default: 0] &+= values.value(sample)
        }
        let text = lines.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)\n" }.joined()
        return (text, symbolicated.notes)
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
