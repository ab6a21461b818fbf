// What makes a CI leak gate fail.

/// The criteria and exceptions of a gate (`--fail-on`, `--max-bytes-per-cycle`,
/// `--max-live-at-exit`, `--suppressions`, `--baseline`).
public struct GatePolicy: Sendable, Equatable {
    /// A `--fail-on` criterion.
    public enum Criterion: String, Sendable, CaseIterable, Comparable {
        /// An abandoned finding (not suppressed, not in the baseline) that grows more than
        /// ``GatePolicy/maxBytesPerCycle`` on average per judged cycle.
        case abandoned
        /// A leaked finding (not suppressed, not in the baseline).
        case leaked
        /// The whole live heap, less the growth of suppressed and baseline findings, grew
        /// more than ``GatePolicy/maxBytesPerCycle`` on average per judged cycle.
        case growth
        /// A `free` or `realloc` of an address that was not live (``Report/StrayFree``: a
        /// double free, a pointer into a block, memory heapgen never saw allocated) that no
        /// `free:` suppression matches.
        case invalidFree = "invalid-free"

        public static func < (a: Criterion, b: Criterion) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }
    }

    /// The criteria that fail the gate.
    public var failOn: Set<Criterion>
    /// Per-cycle growth allowed to an abandoned site (`abandoned`) and to the heap (`growth`).
    public var maxBytesPerCycle: Int
    /// Bytes live at exit, after suppressions, above which the gate fails; `nil`: no limit.
    public var maxLiveAtExit: UInt64?
    /// Findings and live-at-exit sites that never fail the gate.
    public var suppressions: Suppressions
    /// Findings accepted as known; `nil` without `--baseline`.
    public var baseline: Baseline?
    /// Judge abandoned sites with no frame in the program's own code too
    /// (``Report/Finding/inLibraries``); by default they never fail the gate.
    public var includeLibraries = false

    /// A policy; by default one that never fails.
    public init(failOn: Set<Criterion> = [], maxBytesPerCycle: Int = 0, maxLiveAtExit: UInt64? = nil,
                suppressions: Suppressions = Suppressions(), baseline: Baseline? = nil) {
        self.failOn = failOn
        self.maxBytesPerCycle = maxBytesPerCycle
        self.maxLiveAtExit = maxLiveAtExit
        self.suppressions = suppressions
        self.baseline = baseline
    }

    /// True if some criterion can fail the gate.
    public var hasCriteria: Bool { !failOn.isEmpty || maxLiveAtExit != nil }

    /// Parses a `--fail-on` value: a comma-separated list of criteria (`abandoned,leaked`).
    ///
    /// - Throws: ``GatePolicyError`` naming the unknown word.
    public static func parseCriteria(_ list: String) throws -> [Criterion] {
        var out: [Criterion] = []
        for word in list.split(separator: ",", omittingEmptySubsequences: false) {
            let name = word.trimmingSpaces.lowercased()
            guard let c = Criterion(rawValue: name) else {
                throw GatePolicyError(message: "--fail-on: unknown criterion '\(word)' (use \(Criterion.allCases.map(\.rawValue).joined(separator: ", ")), comma-separated)")
            }
            if !out.contains(c) { out.append(c) }
        }
        return out
    }
}

/// A gate option with a bad value.
public struct GatePolicyError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, naming the option.
    public var message: String
    public var description: String { message }
}

extension Substring {
    var trimmingSpaces: String { Suppressions.trimmed(self) }
}
