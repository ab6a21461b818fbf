// Value types carried by heapgen trace records (see docs/trace-format.md).

import HeapGenUnits

/// The allocator entry point that produced an allocation (`alloc` record, function code 1…10).
public enum AllocationFunction: UInt8, Sendable, CaseIterable {
    case malloc = 1, calloc, realloc, reallocarray, posixMemalign, alignedAlloc, memalign, valloc, pvalloc
    /// Not a call: a block a forked child inherited from its parent, live at the fork
    /// (minor version 2). These come before the child's first event.
    case inherited = 10

    /// The C name of the function, e.g. `"posix_memalign"`.
    public var name: String {
        switch self {
        case .malloc: "malloc"
        case .calloc: "calloc"
        case .realloc: "realloc"
        case .reallocarray: "reallocarray"
        case .posixMemalign: "posix_memalign"
        case .alignedAlloc: "aligned_alloc"
        case .memalign: "memalign"
        case .valloc: "valloc"
        case .pvalloc: "pvalloc"
        case .inherited: "inherited"
        }
    }
}

/// The entry point that released a block (`free` record, function code 16 or 17).
public enum FreeFunction: UInt8, Sendable, CaseIterable {
    /// `free(p)` with a non-null `p`.
    case free = 16
    /// The old block of a `realloc` or `reallocarray`; `realloc(p, 0)` is only this.
    case realloc = 17

    /// The C name of the function: `"free"` or `"realloc"`.
    public var name: String {
        switch self {
        case .free: "free"
        case .realloc: "realloc"
        }
    }
}

/// Who asked for a generation mark.
public enum MarkOrigin: UInt8, Sendable, CaseIterable {
    /// The traced program itself (an API call in the target).
    case program = 0
    /// The collector's periodic timer.
    case timer = 1
    /// Someone outside the target (a signal, the `heapgen` command line...).
    case external = 2
}

/// How a traced process image came to be.
public enum ProcessOrigin: UInt8, Sendable, CaseIterable {
    /// The program `heapgen` started.
    case root = 0
    /// A child forked by a traced process.
    case fork = 1
    /// A new image exec'd by a traced process.
    case exec = 2
}

/// The first record of every trace: which process image it describes.
public struct ProcessRecord: Sendable, Equatable, Codable {
    public var pid: Int32
    public var ppid: Int32
    public var origin: ProcessOrigin
    /// Path of the executable.
    public var executable: String
    /// `argv`, including `argv[0]`. The writer keeps at most 65,536 arguments
    /// of at most 64 KiB each, and drops trailing arguments beyond 8 MiB in total.
    public var arguments: [String]
    /// Wall-clock start time, nanoseconds since the Unix epoch.
    public var startUnixNanoseconds: UInt64

    public init(pid: Int32, ppid: Int32, origin: ProcessOrigin, executable: String,
                arguments: [String], startUnixNanoseconds: UInt64) {
        self.pid = pid
        self.ppid = ppid
        self.origin = origin
        self.executable = executable
        self.arguments = arguments
        self.startUnixNanoseconds = startUnixNanoseconds
    }
}

/// A module (executable or shared object) mapped into the traced process.
public struct ModuleRecord: Sendable, Equatable, Codable {
    /// One `PT_LOAD` segment, as in the ELF program header.
    public struct Segment: Sendable, Equatable, Codable {
        public var vaddr: UInt64
        public var memsz: UInt64
        /// `p_flags` (`PF_X` = 1, `PF_W` = 2, `PF_R` = 4).
        public var flags: UInt32

        public init(vaddr: UInt64, memsz: UInt64, flags: UInt32) {
            self.vaddr = vaddr
            self.memsz = memsz
            self.flags = flags
        }
    }

    /// Difference between run-time and link-time addresses (`dlpi_addr`).
    public var loadBias: UInt64
    public var path: String
    /// The GNU build ID note (usually 20 bytes), or empty.
    public var buildID: [UInt8]
    /// At most 64 segments; the writer drops any beyond that.
    public var segments: [Segment]

    public init(loadBias: UInt64, path: String, buildID: [UInt8], segments: [Segment]) {
        self.loadBias = loadBias
        self.path = path
        self.buildID = buildID
        self.segments = segments
    }
}

/// Why a trace ended.
public enum EndReason: UInt8, Sendable, CaseIterable {
    /// The process exited; `status` is its exit code.
    case exited = 0
    /// The process was killed by a signal; `status` is the signal number.
    case signaled = 1
    /// The process image was replaced by `execve`; its successor has its own trace.
    case execed = 2
    /// The collector stopped tracing while the process was still running.
    case collectorStopped = 3
    /// The collector lost track of the process (also: a salvaged trace, see ``EndRecord/salvage``).
    case unknown = 4
    /// The traced process wrote nonsense into its own shared segment (ring positions or slot
    /// lap tags out of range, or a claimed slot never published): the collector
    /// stopped reading it, detached the process and kept what was recorded before.
    case corrupt = 5
}

/// The last record of every complete trace: how the process ended and the
/// shim's and collector's counters.
extension EndRecord {
    /// What ended a process image whose torn events are calls its end cut short: "the exec"
    /// or "signal 9 (SIGKILL)", whose thread was inside `malloc` or `free` and never came
    /// back. nil when there are none, or the image ended otherwise (then a torn event is a
    /// fault: see ``tornEvents``).
    public var cutShortBy: String? {
        guard tornEvents > 0 else { return nil }
        switch reason {
        case .execed: return "the exec"
        case .signaled: return HumanUnits.signal(status)
        default: return nil
        }
    }
}

public struct EndRecord: Sendable, Equatable, Codable {
    public var reason: EndReason
    /// Exit code or signal number, per `reason`.
    public var status: Int32
    /// Times the shim waited for room in its ring.
    public var producerWaits: UInt64
    /// Total time the shim spent waiting for room, in nanoseconds.
    public var producerWaitNanoseconds: UInt64
    /// Events the shim gave up on (also reported by `lost` records).
    public var lostEvents: UInt64
    /// Events found half-written in the ring and discarded.
    public var tornEvents: UInt64
    /// Blobs (stack nodes, names, labels, module descriptions) that did not fit in the
    /// shim's arena.
    public var arenaFull: UInt64
    /// `free(NULL)` calls, which are counted but not recorded.
    public var freeNullCalls: UInt64
    /// Stacks the unwinder cut short (it could not go on: CFI it cannot
    /// express, unreadable memory); such a stack ends at its last good frame.
    public var unwindFallbacks: UInt64
    /// Number of alloc, free, reallocUndo and mark records in the file.
    /// ``TraceWriter/finish(_:)`` ignores the value passed and writes its own count.
    public var eventCount: UInt64
    /// Allocations recorded without their stack (stack 0) because the shim's stack store
    /// was full: their sites are unknown, so findings and live-at-exit sites are incomplete.
    /// Minor version 2; 0 in older traces.
    public var stacksLost: UInt64
    /// Set only on the `end` record a reader makes up for a trace cut short (the collector
    /// was killed): what it ignored. Never written to a file.
    public var salvage: TraceSalvage?

    public init(reason: EndReason, status: Int32 = 0, producerWaits: UInt64 = 0,
                producerWaitNanoseconds: UInt64 = 0, lostEvents: UInt64 = 0, tornEvents: UInt64 = 0,
                arenaFull: UInt64 = 0, freeNullCalls: UInt64 = 0, unwindFallbacks: UInt64 = 0,
                eventCount: UInt64 = 0, stacksLost: UInt64 = 0) {
        self.reason = reason
        self.status = status
        self.producerWaits = producerWaits
        self.producerWaitNanoseconds = producerWaitNanoseconds
        self.lostEvents = lostEvents
        self.tornEvents = tornEvents
        self.arenaFull = arenaFull
        self.freeNullCalls = freeNullCalls
        self.unwindFallbacks = unwindFallbacks
        self.eventCount = eventCount
        self.stacksLost = stacksLost
    }
}
