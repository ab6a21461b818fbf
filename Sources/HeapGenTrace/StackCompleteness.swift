// The one wording of incomplete stacks, shared by the collector, `info`, reports and gates.

import HeapGenUnits

/// Texts for stacks heapgen could not record whole: allocations recorded without a stack
/// because the shim's stack store was full, and stacks cut at the frame limit.
public enum StackCompleteness {
    /// `1,204 allocations recorded without a stack: the stack store was full …`.
    public static func lostWarning(_ count: UInt64) -> String {
        "\(HumanUnits.plural(count, "allocation")) recorded without a stack: the stack store was full "
            + "(the collector fell behind; HEAPGEN_ARENA_MB gives it more room), so their sites are unknown "
            + "and findings may be incomplete"
    }

    /// `stack truncated at 64 frames (…)`: the outermost callers are missing.
    public static func truncated(frames: Int) -> String {
        "stack truncated at \(frames) frames (its outermost callers are missing; HEAPGEN_MAX_FRAMES raises the limit)"
    }
}
