// Strings numbered in the order they are first seen.

/// Strings numbered in first-seen order, the empty string first (number 0): profile.proto's
/// string table, and the names of folded stacks.
struct StringTable {
    private(set) var strings: [String] = [""]
    private var indices: [String: Int64] = ["": 0]

    /// The number of `s`, given now if it is new.
    mutating func index(_ s: String) -> Int64 {
        if let i = indices[s] { return i }
        let i = Int64(strings.count)
        strings.append(s)
        indices[s] = i
        return i
    }
}
