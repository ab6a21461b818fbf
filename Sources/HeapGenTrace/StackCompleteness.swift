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

    /// The shim's frame limit unless `HEAPGEN_MAX_FRAMES` sets another (`HG_DEFAULT_FRAMES` in
    /// heapgen_protocol.h, which this module does not see: a test keeps the two equal).
    public static let defaultFrameLimit = 128

    /// `stack truncated at 128 frames (…)`: the outermost callers are missing. A stack cut
    /// before the default limit most often ended where the unwinder could not go on (the
    /// trace does not say which): code without unwind information, as a JIT compiler's (V8's
    /// stacks end at its first generated frame), so the limit is not blamed for it.
    /// `outermost`: the function of the stack's outermost frame, when known. Go's runtime
    /// calls C on its system stack (`runtime.asmcgocall`): the goroutine's Go callers lie on
    /// another stack, where no unwinder follows.
    public static func truncated(frames: Int, outermost: String? = nil) -> String {
        if let outermost, outermost.hasPrefix("runtime.asmcgocall") || outermost.hasPrefix("runtime.systemstack") {
            return "stack cut short at \(frames) frames, where Go's runtime switched to its system stack to call C "
                + "(\(outermost)): the goroutine's Go callers are on another stack and not shown"
        }
        if frames < defaultFrameLimit {
            return "stack cut short at \(frames) frames (its outermost callers are missing: the unwinder could not walk on, "
                + "as in code without unwind information such as a JIT compiler's, or HEAPGEN_MAX_FRAMES set the limit to \(frames))"
        }
        return "stack truncated at \(frames) frames (its outermost callers are missing; HEAPGEN_MAX_FRAMES raises the limit)"
    }
}
