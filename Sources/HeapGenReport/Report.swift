// The heapgen-report/1 document.

import HeapGenSymbolication

/// A report on one trace, in the `heapgen-report/1` shape documented in
/// `docs/report-schema.md`: what the program was, the per-generation table, the sites
/// that grew every cycle (abandoned), leaked or filled once (caches), with symbolicated
/// stacks, and what was live at exit.
///
/// Made by ``ReportBuilder``; rendered by ``TextReport`` and ``JSONReport``. Both
/// renderers work from this value alone, so the text and the JSON always agree.
///
/// Encoding: optional fields are written as `null` (never left out), addresses as
/// `"0x…"` strings. Decoding accepts what encoding writes, and ignores unknown keys.
public struct Report: Codable, Sendable, Equatable {
    /// The value of ``schema`` for this version of the format.
    public static let schemaVersion = "heapgen-report/1"

    /// Always ``schemaVersion``.
    public var schema: String
    /// The trace this report was made from.
    public var trace: String
    /// The traced process.
    public var program: Program
    /// The analysis options that matter to the findings.
    public var options: Options
    /// Counts over the whole trace.
    public var totals: Totals
    /// Cycles between marks.
    public var cycles: Int
    /// Cycles after the warm-up (judged for growth).
    public var judgedCycles: Int
    /// Setup, cycles and tail.
    public var generations: [Generation]
    /// Abandoned, then leaked, then caches; within a kind by bytes per cycle, largest first.
    public var findings: [Finding]
    /// What was live at the end of the trace.
    public var liveAtExit: LiveAtExit
    /// Traces of forked children and exec'd programs of the same recording.
    public var otherTraces: [String]
    /// Caveats: too few cycles, lost events, no symbolizer…
    public var notes: [String]
    /// Suppression lines the program's `__lsan_default_suppressions()` returned (LeakSanitizer's
    /// hook, read at exit by `--leaks`): gates honour them with the user's; `nil` if none.
    public var programSuppressions: String?
    /// The reference-graph scan behind the findings' retention answers; nil without one.
    public var retentionScan: RetentionScan? = nil
    /// The first frees of addresses that were not live, explained (double frees, pointers into
    /// blocks); nil (absent in JSON) when the trace has none.
    public var strayFrees: [StrayFree]? = nil
    /// What heapgen warned about the process while recording it (an allocator whose calls
    /// it could not see; also the first notes); nil (absent in JSON) when none.
    public var recordingWarnings: [String]? = nil
    /// Timed cycles after the warm-up without a heap event, each merged into the next (so
    /// `judgedCycles` leaves them out); nil (absent in JSON) when none.
    public var idleCycles: Int? = nil

    /// Creates a report (``ReportBuilder`` makes these; public for tests and tools).
    public init(trace: String, program: Program, options: Options, totals: Totals, cycles: Int,
                judgedCycles: Int, generations: [Generation], findings: [Finding], liveAtExit: LiveAtExit,
                otherTraces: [String] = [], notes: [String] = [], programSuppressions: String? = nil) {
        self.schema = Self.schemaVersion
        self.trace = trace
        self.program = program
        self.options = options
        self.totals = totals
        self.cycles = cycles
        self.judgedCycles = judgedCycles
        self.generations = generations
        self.findings = findings
        self.liveAtExit = liveAtExit
        self.otherTraces = otherTraces
        self.notes = notes
        self.programSuppressions = programSuppressions
    }

    /// Findings of one kind, in report order.
    public func findings(_ kind: Finding.Kind) -> [Finding] {
        findings.filter { $0.kind == kind }
    }
}

extension Report {
    /// A frame of a report's stacks: symbolication's one frame type, under the name the
    /// report's API and schema documentation have always used.
    public typealias Frame = SymbolicatedFrame
}
