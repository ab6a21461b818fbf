import CHeapGenCollector

/// The collector's watch over one ring whose program may write over its own segment
/// (issue 7): the collector keeps its own copy of every position and, whenever a drain
/// finds nothing, checks the shared head, tail and the slot at its tail against it
/// (`hg_ring_check`). Nonsense, or a slot claimed but not published for
/// ``stuckNanoseconds`` while no position moved and the process was not stopped, ends the
/// recording of that process (``corruption`` is set; the recording loop detaches it).
struct RingWatch {
    /// A claimed slot may stay unpublished this long, with head and tail standing still,
    /// before the ring counts as stuck. Publishing takes a few stores: anything close to
    /// this is a producer that will never publish (the program wrote the head, or a
    /// thread was abandoned between claiming and publishing).
    static let stuckNanoseconds: UInt64 = 10_000_000_000

    /// Why the ring was given up, for the user; nil while it is sane.
    private(set) var corruption: String?
    /// When the slot at the tail was first seen claimed and unpublished (0: not pending).
    private var pendingSince: UInt64 = 0
    private var pendingHead: UInt64 = 0
    private var pendingTail: UInt64 = 0

    /// A drain took something: the ring moves.
    mutating func progressed() {
        pendingSince = 0
    }

    /// After a drain that found nothing: checks the ring of process `pid` whose next
    /// position to read is `tail`.
    mutating func check(_ raw: UnsafePointer<hg_segment>, tail: UInt64, pid: Int32, now: UInt64) {
        var head: UInt64 = 0
        let state = hg_ring_check(raw, tail, &head)
        switch Int(state) {
        case Int(HG_RING_PENDING.rawValue):
            if pendingSince == 0 || head != pendingHead || tail != pendingTail {
                pendingSince = now
                pendingHead = head
                pendingTail = tail
            } else if now - pendingSince >= Self.stuckNanoseconds {
                if Self.isStopped(pid) {
                    pendingSince = now // stopped by a signal or a debugger: not stuck
                } else {
                    corruption = "the event at ring position \(tail) was claimed but not published for "
                        + "\(Self.stuckNanoseconds / 1_000_000_000) s while nothing else moved"
                }
            }
        case Int(HG_RING_BAD_TAIL.rawValue):
            corruption = "its ring's read position (tail) was overwritten"
        case Int(HG_RING_BAD_HEAD.rawValue):
            corruption = "its ring's write position (head) \(head) is outside \(tail)…\(tail &+ raw.pointee.ring_slots)"
        case Int(HG_RING_BAD_SEQ.rawValue):
            corruption = "the slot at ring position \(tail) holds an impossible lap tag"
        default:
            pendingSince = 0
        }
    }

    /// True if `pid` is stopped (`T`, `t` in /proc/PID/stat): SIGSTOP, a debugger.
    static func isStopped(_ pid: Int32) -> Bool {
        var buf = [CChar](repeating: 0, count: 512)
        let n = hg_read_proc_file(pid, "stat", &buf, buf.count - 1)
        guard n > 0 else { return false }
        let bytes = buf.prefix(Int(n)).map { UInt8(bitPattern: $0) }
        // "pid (comm) S ...": comm may hold anything, so look after the last ')'.
        guard let close = bytes.lastIndex(of: UInt8(ascii: ")")), close + 2 < bytes.count else { return false }
        let state = bytes[close + 2]
        return state == UInt8(ascii: "T") || state == UInt8(ascii: "t")
    }
}

/// The shim's counters of one segment, checked before they are written or printed: they
/// live in the shared header, which the program can overwrite. Each counts something that
/// takes a thread at least a nanosecond (a wait, a lost event, a `free(NULL)` call...), so
/// none can exceed the nanoseconds the process was recorded (plus one second) times the
/// threads it announced (plus one). A larger value is nonsense: it is dropped (0) and flagged,
/// never reported as a number.
struct ShimCounters {
    var waits: UInt64
    var waitNanoseconds: UInt64
    var lostEvents: UInt64
    var arenaFull: UInt64
    var freeNullCalls: UInt64
    var unwindFallbacks: UInt64
    /// Allocations recorded with stack 0: the stack store was full.
    var stacksLost: UInt64
    /// Bytes written to the arena in all its epochs (the halves before the current one
    /// counted whole).
    var arenaBytes: UInt64
    /// The program installed a seccomp filter: the shim made no system calls of its own from
    /// then on, and the processes it forked ran untraced.
    var sandboxed: Bool
    /// At least one counter was out of range (and was dropped).
    var dropped = false

    /// The counters of `raw`, for a process recorded for `elapsedNanoseconds` that announced `threads` threads.
    init(_ raw: UnsafePointer<hg_segment>, elapsedNanoseconds: UInt64, threads: UInt64) {
        var c = hg_counters()
        hg_segment_counters(raw, &c)
        let (product, overflow) = elapsedNanoseconds.addingReportingOverflow(1_000_000_000).partialValue
            .multipliedReportingOverflow(by: threads &+ 1)
        let bound = overflow ? UInt64.max : product
        var dropped = false
        func plausible(_ v: UInt64) -> UInt64 {
            if v > bound { dropped = true; return 0 }
            return v
        }
        waits = plausible(c.wait_count)
        waitNanoseconds = plausible(c.wait_ns)
        lostEvents = plausible(c.lost_events)
        arenaFull = plausible(c.arena_full)
        freeNullCalls = plausible(c.free_null)
        unwindFallbacks = plausible(c.unwind_fallbacks)
        stacksLost = plausible(c.stacks_lost)
        sandboxed = c.sandboxed == 1
        let half = raw.pointee.arena_half
        let epoch = c.arena_state >> UInt64(HG_ARENA_EPOCH_SHIFT)
        let (before, tooMany) = epoch.multipliedReportingOverflow(by: half)
        arenaBytes = tooMany ? UInt64.max : before &+ min(c.arena_state & ArenaEpochs.usedMask, half)
        self.dropped = dropped
    }
}
