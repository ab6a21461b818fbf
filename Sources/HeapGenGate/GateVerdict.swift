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
    /// One per suppression rule, in file order.
    public var ruleUses: [RuleUse]
    /// Baseline entries that no finding matched: fixed. Empty when cycles were too few to tell.
    public var fixedEntries: [Baseline.Entry]
    /// Warnings: criteria that could not be judged.
    public var warnings: [String]
    /// Allocations the trace holds without a stack (the shim's stack store was full), when
    /// the policy has criteria: the data is partial, so the gate fails rather than pass on it.
    public var stacksLost: UInt64 = 0

    /// Findings that fail the gate.
    public var failingFindings: [FindingResult] { findings.filter(\.isFailing) }

    /// Failing findings of one kind.
    public func failing(_ kind: Report.Finding.Kind) -> [FindingResult] {
        failingFindings.filter { $0.finding.kind == kind }
    }

    /// True if the gate fails.
    public var failed: Bool {
        !failingFindings.isEmpty || growth?.failed == true || liveAtExit?.failed == true || stacksLost > 0
    }
}
