// Merging sites that are one place in the source.

/// Merges findings (and live sites) whose symbolicated stacks are the same source path.
///
/// The analysis keys sites by raw return addresses. An optimising compiler can copy one
/// call (loop peeling, unrolling, inlining into several callers of one line), so one
/// source call path becomes several sites: a C loop whose first iteration gcc peels shows
/// its leak as a "cache" (the peeled copy, cycle 1 only) plus an abandoned site that
/// starts in cycle 2. Once symbolicated, sites whose frames all agree on module, function,
/// file, line, column and inlining (and that have the same Swift type) are one site.
///
/// Merged findings sum their per-cycle deltas and survivors; `cyclesWithGrowth` and
/// `averageBytesPerCycle` are recomputed on the sums; the kind is the strongest of the
/// parts (leaked, then abandoned, then cache): a source site that grows every cycle
/// grows every cycle, whatever copy of it filled once. Frames of unknown functions only
/// match at the same address, so nothing is merged without symbols.
public enum SourceSites {
    /// The key of a stack: equal for one source path.
    static func key(typeName: String?, frames: [Report.Frame]) -> [String] {
        [typeName ?? "\u{0}"] + frames.map { f in
            guard let function = f.function else { return "\(f.module ?? "?")@\(f.address)" }
            return "\(f.module ?? "?")|\(function)|\(f.file ?? "")|\(f.line ?? 0)|\(f.column ?? 0)|\(f.inlined)"
        }
    }

    /// `findings` with those on one source path merged into the first of them, in report
    /// order (kind, then bytes per cycle, largest first; ties keep their order).
    public static func merge(_ findings: [Report.Finding]) -> [Report.Finding] {
        var merged: [Report.Finding] = []
        var index: [[String]: Int] = [:]
        for f in findings {
            let k = key(typeName: f.typeName, frames: f.frames)
            if let i = index[k] {
                merged[i] = combine(merged[i], f)
            } else {
                index[k] = merged.count
                merged.append(f)
            }
        }
        return merged.enumerated().sorted { a, b in
            let ka = rank(a.element.kind), kb = rank(b.element.kind)
            if ka != kb { return ka < kb }
            if a.element.averageBytesPerCycle != b.element.averageBytesPerCycle {
                return a.element.averageBytesPerCycle > b.element.averageBytesPerCycle
            }
            return a.offset < b.offset
        }.map(\.element)
    }

    /// `sites` with those on one source path merged, largest (bytes, then objects) first.
    public static func merge(_ sites: [Report.Site]) -> [Report.Site] {
        var merged: [Report.Site] = []
        var index: [[String]: Int] = [:]
        for s in sites {
            let k = key(typeName: s.typeName, frames: s.frames)
            if let i = index[k] {
                merged[i].objects += s.objects
                merged[i].bytes += s.bytes
            } else {
                index[k] = merged.count
                merged.append(s)
            }
        }
        return merged.enumerated().sorted { a, b in
            if a.element.bytes != b.element.bytes { return a.element.bytes > b.element.bytes }
            if a.element.objects != b.element.objects { return a.element.objects > b.element.objects }
            return a.offset < b.offset
        }.map(\.element)
    }

    /// Report order of kinds.
    static func rank(_ kind: Report.Finding.Kind) -> Int {
        switch kind {
        case .abandoned: 0
        case .leaked: 1
        case .cache: 2
        }
    }

    /// Precedence when merging: leaked, abandoned, cache.
    static func strength(_ kind: Report.Finding.Kind) -> Int {
        switch kind {
        case .leaked: 2
        case .abandoned: 1
        case .cache: 0
        }
    }

    /// Two findings of one source path as one.
    static func combine(_ a: Report.Finding, _ b: Report.Finding) -> Report.Finding {
        func add(_ x: [Int], _ y: [Int]) -> [Int] {
            (0..<max(x.count, y.count)).map { (x.indices.contains($0) ? x[$0] : 0) + (y.indices.contains($0) ? y[$0] : 0) }
        }
        var c = strength(b.kind) > strength(a.kind) ? b : a
        c.frames = a.frames
        c.userFrame = a.userFrame
        c.cycles = max(a.cycles, b.cycles)
        c.objectsPerCycle = add(a.objectsPerCycle, b.objectsPerCycle)
        c.bytesPerCycle = add(a.bytesPerCycle, b.bytesPerCycle)
        let judged = max(0, min(c.cycles, c.objectsPerCycle.count))
        let start = c.objectsPerCycle.count - judged
        c.cyclesWithGrowth = (start..<c.objectsPerCycle.count).filter {
            c.objectsPerCycle[$0] > 0 || c.bytesPerCycle[$0] > 0
        }.count
        let judgedBytes = c.bytesPerCycle[start...].reduce(0, +)
        c.averageBytesPerCycle = judged > 0 ? Int((Double(judgedBytes) / Double(judged)).rounded()) : 0
        c.survivingObjects = a.survivingObjects + b.survivingObjects
        c.survivingBytes = a.survivingBytes + b.survivingBytes
        return c
    }
}
