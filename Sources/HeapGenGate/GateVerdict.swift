// The outcome of a gate.

import HeapGenReport

/// What a gate decided, finding by finding, and why.
public struct GateVerdict: Sendable {
    /// What the gate made of one abandoned or leaked finding.
    public enum Status: Sendable, Equatable {
        /// Fails the gate.
        case failing
        /// Matched the rule at this index of ``GatePolicy/suppressions``.
        case suppressed(rule: Int)
        /// Matched the entry at this index of ``GatePolicy/baseline``.
        case known(entry: Int)
        /// Abandoned, but grows no more than ``GatePolicy/maxBytesPerCycle``.
        case belowLimit
        /// Its kind is not among the ``GatePolicy/failOn`` criteria.
        case notGated
        /// Abandoned, but with no frame in the program's own code, and the policy does not
        /// include libraries (``GatePolicy/includeLibraries``).
        case inLibraries
    }

    /// One abandoned or leaked finding and its status.
    public struct FindingResult: Sendable {
        /// The finding.
        public var finding: Report.Finding
        /// What the gate made of it.
        public var status: Status
        /// Its identity across runs.
        public var signature: BaselineSignature
        /// True if this finding fails the gate.
        public var isFailing: Bool { status == .failing }
    }

    /// The `growth` criterion's measurement.
    public struct Growth: Sendable, Equatable {
        /// Live heap at the mark that opens the first judged cycle.
        public var startBytes: UInt64
        /// Live heap at the mark that closes the last cycle.
        public var endBytes: UInt64
        /// Cycles between them.
        public var cycles: Int
        /// Mean per-cycle growth of the whole heap.
        public var heapBytesPerCycle: Int
        /// Mean per-cycle growth of suppressed and baseline findings, left out.
        public var excusedBytesPerCycle: Int
        /// ``heapBytesPerCycle`` minus ``excusedBytesPerCycle``: what is judged.
        public var bytesPerCycle: Int { heapBytesPerCycle - excusedBytesPerCycle }
        /// The limit.
        public var limit: Int
        /// True if ``bytesPerCycle`` is above ``limit``.
        public var failed: Bool { bytesPerCycle > limit }
    }

    /// The `--max-live-at-exit` measurement.
    public struct LiveAtExit: Sendable, Equatable {
        /// Live bytes at exit, all of them.
        public var totalBytes: UInt64
        /// Those of suppressed sites (among the largest sites the report lists).
        public var suppressedBytes: UInt64
        /// What is judged: total less suppressed.
        public var bytes: UInt64 { totalBytes - min(totalBytes, suppressedBytes) }
        /// The limit.
        public var limit: UInt64
        /// True if ``bytes`` is above ``limit``.
        public var failed: Bool { bytes > limit }
    }

    /// The `--fail-on invalid-free` judgement: the frees of addresses that were not live.
    /// The report explains the first few (``Report/strayFrees``), each of which a `free:`
    /// rule may suppress; the rest are only counted, so they fail the gate.
    public struct InvalidFrees: Sendable, Equatable {
        /// One explained stray free and what the gate made of it.
        public struct Result: Sendable, Equatable {
            public var free: Report.StrayFree
            /// The `free:` rule (index in ``GatePolicy/suppressions``) that matched the
            /// block's allocation stack; nil: failing.
            public var suppressedBy: Int?
        }
        /// All stray frees of the trace (``Report/Totals/untrackedFrees``).
        public var total: UInt64
        /// The explained ones, in trace order.
        public var explained: [Result]
        /// Stray frees beyond the explained ones: counted, never suppressed.
        public var unexplained: UInt64 { total - min(total, UInt64(explained.count)) }
        /// The explained ones no rule matched.
        public var failingExplained: [Report.StrayFree] { explained.filter { $0.suppressedBy == nil }.map(\.free) }
        /// Stray frees that fail the gate.
        public var failingCount: UInt64 { UInt64(failingExplained.count) + unexplained }
        /// Stray frees a `free:` rule excused.
        public var suppressedCount: Int { explained.count - failingExplained.count }
        /// True if some stray free fails the gate.
        public var failed: Bool { failingCount > 0 }
    }

    /// How often and on how many bytes a suppression rule matched (LSan's "Suppressions used").
    public struct RuleUse: Sendable, Equatable {
        /// The rule.
        public var rule: Suppressions.Rule
        /// Findings it suppressed.
        public var findings: Int
        /// Bytes those findings left behind (``Report/Finding/survivingBytes``).
        public var bytes: UInt64
        /// Live-at-exit sites it suppressed.
        public var liveSites: Int
        /// Their bytes.
        public var liveBytes: UInt64
        /// Stray frees it excused (a `free:` rule).
        public var frees = 0
    }

    /// The policy judged against.
    public var policy: GatePolicy
    /// Abandoned and leaked findings, in report order (caches are never gated).
    public var findings: [FindingResult]
    /// Cycles after the warm-up.
    public var judgedCycles: Int
    /// Set when `growth` was asked for and there was a cycle to judge.
    public var growth: Growth?
    /// Set with `--max-live-at-exit`.
    public var liveAtExit: LiveAtExit?
    /// Set with `--fail-on invalid-free`.
    public var invalidFrees: InvalidFrees?
    /// One per suppression rule, in file order.
    public var ruleUses: [RuleUse]
    /// Baseline entries that no finding matched: fixed. Empty when cycles were too few to tell.
    public var fixedEntries: [Baseline.Entry]
    /// Warnings: criteria that could not be judged.
    public var warnings: [String]
    /// False when the trace has no leak scan (the process was not scanned at exit, or the
    /// scan gave up): leaked findings could not be judged.
    public var leaksJudged = true
    /// Allocations the trace holds without a stack (the shim's stack store was full), when
    /// the policy has criteria: the data is partial, so the gate fails rather than pass on it.
    public var stacksLost: UInt64 = 0

    /// True if abandoned or leaked findings are among the criteria (a verdict on
    /// `--fail-on invalid-free` or `--max-live-at-exit` alone says nothing of findings).
    public var judgesFindings: Bool { !policy.failOn.isDisjoint(with: [.abandoned, .leaked]) }

    /// Findings that fail the gate.
    public var failingFindings: [FindingResult] { findings.filter(\.isFailing) }

    /// Failing findings of one kind.
    public func failing(_ kind: Report.Finding.Kind) -> [FindingResult] {
        failingFindings.filter { $0.finding.kind == kind }
    }

    /// True if the gate fails.
    public var failed: Bool {
        !failingFindings.isEmpty || growth?.failed == true || liveAtExit?.failed == true
            || invalidFrees?.failed == true || stacksLost > 0
    }
}
