/// What `heapgen record` was asked to do.
public struct RecordOptions: Sendable {
    /// The program as typed: a path (contains `/`) or a name looked up in `PATH`.
    public var program: String
    /// The program's arguments (without `argv[0]`).
    public var arguments: [String]
    /// The root trace file; nil: `heapgen-<program>-<pid>.trace` in the current directory.
    public var output: String?
    /// Trace children created with `fork` (default on). Off: a forked child
    /// runs without the shim's tracking and with the environment it would have
    /// had without heapgen (so whatever it execs is untraced too).
    public var followFork: Bool
    /// Trace programs started with `exec` by traced processes (default on).
    /// Off: the program's environment is, from its start, the one it would
    /// have had without heapgen, so nothing it execs loads the shim.
    public var followExec: Bool
    /// Ring size in slots (a power of two) passed to the shim; nil: the shim's default.
    public var ringSlots: Int?
    /// No summary line on success.
    public var quiet: Bool
    /// Mark a generation in the program every this many nanoseconds (0: never),
    /// for programs that cannot mark their own cycles.
    public var markEveryNanoseconds: UInt64 = 0
    /// After each program mark, wait this long and then put a `heapgen.settle`
    /// mark: the analysis takes its final snapshot there, so objects released
    /// shortly after the last cycle (async work) are not counted as left behind.
    public var settleNanoseconds: UInt64 = 0
    /// Print one machine-readable `heapgen: stats: key=value ...` line (for scripts/bench).
    public var stats: Bool = false
    /// Leak scan at exit (`--leaks`): track every live block from the start, and when the
    /// program exits (its shim's atexit handler) find the blocks nothing references any
    /// more with a conservative reachability scan; they go into the trace as `unreachable`.
    public var scanLeaks: Bool = false
    /// `--retention`: at exit, scan as `--leaks` does to take the reference graph of the live
    /// heap (a `referenceGraph` record), without judging leaks unless `scanLeaks` is on too.
    public var retention: Bool = false
    /// `--retention-at LABEL`: right after each program mark with one of these labels, the
    /// shim asks for a scan that takes the reference graph there (threads stopped).
    public var retentionAt: [String] = []
    /// `--aggregate`: fold heap events into per-site, per-generation counts written at each
    /// mark (and at the end), so that disk use grows with marks and sites, not with events.
    /// Individual blocks are not in the trace (`dump` refuses it); not with the scans.
    public var aggregate: Bool = false
    /// The collector tracks every live block from the start: some scan will need them.
    public var tracksLiveBlocks: Bool { scanLeaks || retention || !retentionAt.isEmpty }
    /// At the end, store in each trace what its stacks symbolicate to (`--no-symbols` turns
    /// it off): the trace then reports and diffs the same after the program is rebuilt.
    public var storeSymbols: Bool = true
    /// The preload library; nil: `$HEAPGEN_SHIM`, else `libHeapGenShim.so` next to the executable.
    public var shimPath: String?
    /// The traces are temporary (`heapgen run` removes them after its report): warnings name
    /// the process, not a file that will be gone.
    public var temporaryTraces: Bool = false
    /// Told about four times a second how the recording is going (a progress line on a
    /// terminal); nil: nobody is told. Called on the recording thread: keep it quick.
    public var progress: (@Sendable (RecordingStatus) -> Void)?

    public init(program: String, arguments: [String] = [], output: String? = nil,
                followFork: Bool = true, followExec: Bool = true, ringSlots: Int? = nil,
                quiet: Bool = false, shimPath: String? = nil) {
        self.program = program
        self.arguments = arguments
        self.output = output
        self.followFork = followFork
        self.followExec = followExec
        self.ringSlots = ringSlots
        self.quiet = quiet
        self.shimPath = shimPath
    }
}
