// Scopes: the runs of marks one `expectNoGrowth` or `HeapGen.cycles` call makes, judged apart.

/// The marks of one `HeapGen.expectNoGrowth` or `HeapGen.cycles` call: a start mark and one
/// mark after each run of the body. A test binary holds many such calls; each is judged on its
/// own cycles with its own warm-up, never joined with the others into one staircase.
///
/// Scopes are recognised by label alone (see ``parse(_:)``):
///
///     expectNoGrowth <name> start
///     expectNoGrowth <name> warm-up <i>/<n>
///     expectNoGrowth <name> cycle <i>/<n>
///
/// and the same with `HeapGen.cycles` in place of `expectNoGrowth`. `<name>` names the call
/// (for tests: the test function and its file and line, `testLeaky() (LeakTests.swift:31)`).
/// A scope is a start mark followed by ordinary marks of the same prefix and name numbered
/// 1, 2, …; warm-up marks count its warm-up. Marks outside every scope are judged together,
/// as in a trace without scopes.
public struct CycleScope: Codable, Sendable, Equatable {
    /// `expectNoGrowth` or `HeapGen.cycles`.
    public var kind: String
    /// The call's name from its labels (may be empty).
    public var name: String
    /// Index in ``Analysis/marks`` of the start mark.
    public var startMark: Int
    /// Index in ``Analysis/marks`` of the scope's last mark (its final snapshot).
    public var endMark: Int
    /// Cycles of the scope (its marks after the start mark).
    public var cycles: Int
    /// Leading cycles labelled warm-up: not judged.
    public var warmUp: Int
    /// Cycles judged (``cycles`` minus ``warmUp``).
    public var judgedCycles: Int { max(0, cycles - warmUp) }

    /// `kind name`, as findings and messages name the scope.
    public var title: String { name.isEmpty ? kind : "\(kind) \(name)" }

    /// Creates a scope.
    public init(kind: String, name: String, startMark: Int, endMark: Int, cycles: Int, warmUp: Int) {
        self.kind = kind
        self.name = name
        self.startMark = startMark
        self.endMark = endMark
        self.cycles = cycles
        self.warmUp = warmUp
    }

    /// Label prefixes that open a scope.
    public static let kinds = ["expectNoGrowth", "HeapGen.cycles"]

    /// One parsed scope label.
    public struct Label: Equatable, Sendable {
        /// The prefix (one of ``kinds``).
        public var kind: String
        /// The call's name (may be empty).
        public var name: String
        /// 0 for the start mark, else the cycle number.
        public var cycle: Int
        /// True for a warm-up mark.
        public var isWarmUp: Bool

        /// Creates a parsed label.
        public init(kind: String, name: String, cycle: Int, isWarmUp: Bool) {
            self.kind = kind
            self.name = name
            self.cycle = cycle
            self.isWarmUp = isWarmUp
        }
    }

    /// The scope label `label` is, or `nil`: `<kind> [<name> ]start`,
    /// `<kind> [<name> ](warm-up|cycle) <i>[/<n>]`.
    public static func parse(_ label: String) -> Label? {
        guard let kind = kinds.first(where: { label.hasPrefix($0 + " ") }) else { return nil }
        var words = label.dropFirst(kind.count + 1).split(separator: " ", omittingEmptySubsequences: false)
        guard let last = words.popLast() else { return nil }
        if last == "start" {
            return Label(kind: kind, name: words.joined(separator: " "), cycle: 0, isWarmUp: false)
        }
        let number = last.split(separator: "/", maxSplits: 1).first.flatMap { Int($0) }
        guard let number, number >= 1, let word = words.popLast(), word == "cycle" || word == "warm-up" else {
            return nil
        }
        return Label(kind: kind, name: words.joined(separator: " "), cycle: number, isWarmUp: word == "warm-up")
    }

    /// The scopes among `marks` (only boundary marks take part), in order. A start mark not
    /// followed by its cycle 1 opens no scope; a scope ends at its last consecutive cycle mark.
    public static func find(in marks: [GenerationMark]) -> [CycleScope] {
        let boundary = marks.indices.filter { marks[$0].role == .boundary }
        return find(labels: boundary.map { marks[$0].label }).map { s in
            var s = s
            s.startMark = boundary[s.startMark]
            s.endMark = boundary[s.endMark]
            return s
        }
    }

    /// The scopes among the labels of the ordinary marks, in order; ``startMark`` and
    /// ``endMark`` are positions in `labels` (`nil` labels end any scope).
    public static func find(labels: [String?]) -> [CycleScope] {
        var scopes: [CycleScope] = []
        var open: (label: Label, scope: CycleScope)?
        func close() {
            if let o = open, o.scope.cycles >= 1 { scopes.append(o.scope) }
            open = nil
        }
        for (i, text) in labels.enumerated() {
            guard let text, let label = parse(text) else {
                close()
                continue
            }
            if label.cycle == 0 {
                close()
                open = (label, CycleScope(kind: label.kind, name: label.name, startMark: i, endMark: i,
                                          cycles: 0, warmUp: 0))
            } else if var o = open, o.label.kind == label.kind, o.label.name == label.name,
                      label.cycle == o.scope.cycles + 1 {
                o.scope.cycles += 1
                o.scope.endMark = i
                if label.isWarmUp && o.scope.warmUp == o.scope.cycles - 1 { o.scope.warmUp += 1 }
                open = o
            } else {
                close()
            }
        }
        close()
        return scopes
    }
}

extension Analysis {
    /// The scopes among ``marks`` (see ``CycleScope``): each judged on its own cycles; their
    /// findings carry ``Finding/scope``.
    public var scopes: [CycleScope] { CycleScope.find(in: marks) }
}
