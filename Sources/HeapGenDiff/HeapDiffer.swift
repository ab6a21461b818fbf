// Computing heapgen-diff/1 diffs.

import HeapGenAnalysis
import HeapGenSymbolication
import HeapGenTrace

/// Diffs the live heap between two points of one trace, or between two traces.
///
/// ```swift
/// let differ = HeapDiffer()
/// let d1 = try differ.diff(trace: "app.trace", from: .mark(1), to: .mark(5))
/// let d2 = try differ.diff(base: "old.trace", new: "new.trace", at: .finalSnapshot)
/// ```
///
/// Each trace is read once, with a live table (memory proportional to the live blocks);
/// per-site counts are taken at the two points. Sites are then named by their symbolicated
/// frames and matched by a key made of the Swift type name and the function, file and line
/// of up to ``depth`` frames from the user frame (``OwnCode/firstUserFrame(_:)``) outwards,
/// none past an executor's or queue's job entry (``OwnCode/jobEntry(_:)``),
/// a frame without a name counting as `module+0xOFFSET`: never by address, so the match
/// survives ASLR and rebuilds. Sites with one key are summed into one entry.
public struct HeapDiffer {
    public var symbolication: StackSymbolication
    /// Frames from the user frame on that identify a site (at least 1).
    public var depth: Int

    public static let defaultDepth = 8

    public init(symbolizer: Symbolizer = Symbolizer(), depth: Int = HeapDiffer.defaultDepth) {
        symbolication = StackSymbolication(symbolizer: symbolizer)
        self.depth = max(1, depth)
    }

    // MARK: - Two points of one trace

    /// How the live heap of `trace` changed from `from` to `to` (`from` must not come after `to`).
    ///
    /// - Throws: ``TraceError`` if the trace cannot be read, ``TracePointError`` if a point is
    ///   not in the trace or `from` comes after `to`.
    public func diff(trace: String, from: TracePoint, to: TracePoint) throws -> HeapDiff {
        var reader = try TraceReader(path: trace)
        // Frames are read again for the sites the diff names (a second pass).
        var replay = LiveHeapReplay(keepingFrames: false)
        var fromWatch = TracePointWatcher(from), toWatch = TracePointWatcher(to)
        var before: Capture?
        var after: Capture?
        if from == .start {
            before = Capture()
            replay.countAddedFromNow()
        }
        if to == .start { after = Capture() }
        try reader.forEach { record in
            guard case let .mark(index, label) = replay.consume(record) else { return }
            if fromWatch.reached(markIndex: index, label: label) {
                before = Capture(replay)
                replay.countAddedFromNow()
            }
            if toWatch.reached(markIndex: index, label: label) {
                after = Capture(replay, withAdded: before != nil)
            }
        }
        if fromWatch.isAtEnd {
            before = Capture(replay)
            replay.countAddedFromNow()
        }
        if toWatch.isAtEnd {
            after = Capture(replay, withAdded: before != nil)
        }
        let context = replay.finish(trace: trace)
        let fromPoint = try fromWatch.resolve(marks: context.marks).get()
        let toPoint = try toWatch.resolve(marks: context.marks).get()
        guard Self.order(fromPoint) <= Self.order(toPoint) else {
            throw TracePointError("--from (\(fromPoint)) comes after --to (\(toPoint)): a diff goes forward in the trace")
        }
        guard let before, let after else {
            throw TracePointError("internal error: a point was resolved but not captured")
        }

        // Sites live at either point.
        let count = context.sites.count
        var rows: [Row] = []
        var stackIDs: [UInt32] = []
        for s in 0..<count {
            let ob = before.objects(s), oa = after.objects(s)
            guard ob > 0 || oa > 0 else { continue }
            let ao = after.addedObjects(s), ab = after.addedBytes(s)
            // Live at A and still live at B = live at B minus those allocated since A.
            let survivorsO = oa - ao, survivorsB = after.bytes(s) - ab
            let change = HeapDiff.Change(
                objectsBefore: UInt64(clamping: ob), objectsAfter: UInt64(clamping: oa),
                bytesBefore: UInt64(clamping: before.bytes(s)), bytesAfter: UInt64(clamping: after.bytes(s)),
                added: HeapDiff.Amount(objects: UInt64(clamping: ao), bytes: UInt64(clamping: ab)),
                removed: HeapDiff.Amount(objects: UInt64(clamping: ob - survivorsO),
                                         bytes: UInt64(clamping: before.bytes(s) - survivorsB)))
            rows.append(Row(site: context.sites[s], side: .new, change: change))
            stackIDs.append(context.sites[s].stack)
        }
        let symbolicated = symbolication.symbolicate(stackIDs, in: try context.withStacks(stackIDs))
        var entries = Accumulator(depth: depth)
        for row in rows {
            entries.add(row, typeName: context.typeName(row.site.type), stack: symbolicated.stacks[row.site.stack])
        }
        return entries.diff(mode: .marks, base: HeapDiff.Side(trace: trace, point: fromPoint),
                            new: HeapDiff.Side(trace: trace, point: toPoint), notes: symbolicated.notes)
    }

    // MARK: - Two traces

    /// How the live heap at `point` differs from the trace `base` to the trace `new`.
    ///
    /// - Throws: ``TraceError`` if a trace cannot be read, ``TracePointError`` if the point
    ///   is not in one of them.
    public func diff(base: String, new: String, at point: TracePoint) throws -> HeapDiff {
        let b = try liveSites(trace: base, at: point)
        let n = try liveSites(trace: new, at: point)
        var entries = Accumulator(depth: depth)
        for (side, live) in [(Row.Side.base, b), (.new, n)] {
            for (site, objects, bytes) in live.sites {
                let change = side == .base
                    ? HeapDiff.Change(objectsBefore: objects, objectsAfter: 0, bytesBefore: bytes, bytesAfter: 0)
                    : HeapDiff.Change(objectsBefore: 0, objectsAfter: objects, bytesBefore: 0, bytesAfter: bytes)
                entries.add(Row(site: site, side: side, change: change), typeName: live.context.typeName(site.type),
                            stack: live.stacks[site.stack])
            }
        }
        var notes = b.notes
        for note in n.notes where !notes.contains(note) { notes.append(note) }
        return entries.diff(mode: .traces, base: HeapDiff.Side(trace: base, point: b.point),
                            new: HeapDiff.Side(trace: new, point: n.point), notes: notes)
    }

    /// The sites of `trace` live at `point`, symbolicated.
    private func liveSites(trace: String, at point: TracePoint) throws
        -> (context: TraceContext, point: ResolvedPoint, sites: [(SiteKey, UInt64, UInt64)],
            stacks: [UInt32: SymbolicatedStack], notes: [String]) {
        var reader = try TraceReader(path: trace)
        var replay = LiveHeapReplay(keepingFrames: false)
        var watch = TracePointWatcher(point)
        var captured: Capture? = point == .start ? Capture() : nil
        try reader.forEach { record in
            guard case let .mark(index, label) = replay.consume(record) else { return }
            if watch.reached(markIndex: index, label: label) { captured = Capture(replay) }
        }
        if watch.isAtEnd { captured = Capture(replay) }
        var context = replay.finish(trace: trace)
        let resolved = try watch.resolve(marks: context.marks).mapError { e in
            TracePointError("\(trace): \(e.message)")
        }.get()
        let capture = captured ?? Capture()
        var sites: [(SiteKey, UInt64, UInt64)] = []
        for s in context.sites.indices where capture.objects(s) > 0 {
            sites.append((context.sites[s], UInt64(clamping: capture.objects(s)), UInt64(clamping: capture.bytes(s))))
        }
        context = try context.withStacks(sites.map(\.0.stack))
        let symbolicated = symbolication.symbolicate(sites.map(\.0.stack), in: context)
        return (context, resolved, sites, symbolicated.stacks, symbolicated.notes)
    }

    /// Position of a point for ordering: start, marks by index, end.
    static func order(_ p: ResolvedPoint) -> Int {
        switch p.kind {
        case .start: -1
        case .mark: p.index ?? 0
        case .end: Int.max
        }
    }
}

// MARK: - Internals

/// Per-site live counts taken at one point (sites seen later count as 0).
struct Capture {
    var liveObjects: [Int] = []
    var liveBytes: [Int] = []
    var added: (objects: [Int], bytes: [Int])?

    init() {}

    init(_ replay: LiveHeapReplay, withAdded: Bool = false) {
        liveObjects = replay.liveObjects
        liveBytes = replay.liveBytes
        if withAdded { added = (replay.addedObjects, replay.addedBytes) }
    }

    func objects(_ s: Int) -> Int { s < liveObjects.count ? liveObjects[s] : 0 }
    func bytes(_ s: Int) -> Int { s < liveBytes.count ? liveBytes[s] : 0 }
    func addedObjects(_ s: Int) -> Int { added.map { s < $0.objects.count ? $0.objects[s] : 0 } ?? objects(s) }
    func addedBytes(_ s: Int) -> Int { added.map { s < $0.bytes.count ? $0.bytes[s] : 0 } ?? bytes(s) }
}

/// One recorded site's change, before it is merged with the others of its key.
struct Row {
    enum Side {
        case base, new
    }

    var site: SiteKey
    var side: Side
    var change: HeapDiff.Change
}

/// What identifies a site across traces: the Swift type and the user's part of the stack.
struct MatchKey: Hashable {
    struct Frame: Hashable {
        var function: String
        var file: String?
        var line: Int?
    }

    var typeName: String?
    var frames: [Frame]

    init(typeName: String?, stack: SymbolicatedStack?, depth: Int) {
        self.typeName = typeName
        guard let stack, !stack.frames.isEmpty else {
            frames = []
            return
        }
        let first = stack.userFrame ?? 0
        // Not past the frame where an executor or queue ran the job: the frames outside it
        // change with the worker thread that took it.
        var end = min(stack.frames.count, first + depth)
        if let entry = OwnCode.jobEntry(stack.frames[first...].lazy.map(\.function)) {
            end = min(end, entry + 1)
        }
        frames = (first..<end).map { i in
            let f = stack.frames[i]
            return Frame(function: f.function ?? stack.name(ofFrame: i), file: f.file, line: f.line)
        }
    }
}

/// Sums rows by ``MatchKey`` and makes the diff.
struct Accumulator {
    struct Sum {
        var typeName: String?
        var stack: SymbolicatedStack?
        /// Bytes of the row the frames come from, and whether it is of the new side.
        var stackWeight: (new: Bool, bytes: UInt64) = (false, 0)
        var objectsBefore: UInt64 = 0, objectsAfter: UInt64 = 0
        var bytesBefore: UInt64 = 0, bytesAfter: UInt64 = 0
        var added: HeapDiff.Amount?
        var removed: HeapDiff.Amount?
        var sites = 0

        var change: HeapDiff.Change {
            HeapDiff.Change(objectsBefore: objectsBefore, objectsAfter: objectsAfter, bytesBefore: bytesBefore,
                            bytesAfter: bytesAfter, added: added, removed: removed)
        }

        /// Adds `c`'s objects and bytes at both points.
        mutating func addCounts(_ c: HeapDiff.Change) {
            objectsBefore &+= c.objectsBefore
            objectsAfter &+= c.objectsAfter
            bytesBefore &+= c.bytesBefore
            bytesAfter &+= c.bytesAfter
        }

        /// Adds `c`: its counts, and its added and removed amounts where it has them (a sum
        /// has them when one of its parts had them).
        mutating func add(_ c: HeapDiff.Change) {
            addCounts(c)
            if let a = c.added { added = Accumulator.plus(added, a) }
            if let r = c.removed { removed = Accumulator.plus(removed, r) }
        }
    }

    let depth: Int
    var sums: [Sum] = []
    var index: [MatchKey: Int] = [:]

    init(depth: Int) {
        self.depth = depth
    }

    mutating func add(_ row: Row, typeName: String?, stack: SymbolicatedStack?) {
        let key = MatchKey(typeName: typeName, stack: stack, depth: depth)
        let i: Int
        if let known = index[key] {
            i = known
        } else {
            i = sums.count
            index[key] = i
            sums.append(Sum(typeName: typeName))
        }
        var sum = sums[i]
        let c = row.change
        sum.add(c)
        sum.sites += 1
        // Frames: preferably the new side's, from its largest site.
        let isNew = row.side == .new
        let weight = isNew ? c.bytesAfter : c.bytesBefore
        if sum.stack == nil || (isNew && !sum.stackWeight.new) || (isNew == sum.stackWeight.new && weight > sum.stackWeight.bytes) {
            sum.stack = stack
            sum.stackWeight = (isNew, weight)
        }
        sums[i] = sum
    }

    static func plus(_ a: HeapDiff.Amount?, _ b: HeapDiff.Amount) -> HeapDiff.Amount {
        HeapDiff.Amount(objects: (a?.objects ?? 0) &+ b.objects, bytes: (a?.bytes ?? 0) &+ b.bytes)
    }

    func diff(mode: HeapDiff.Mode, base: HeapDiff.Side, new: HeapDiff.Side, notes: [String]) -> HeapDiff {
        var entries: [HeapDiff.Entry] = sums.map { s in
            let status: HeapDiff.Status = s.objectsBefore == 0 ? .added : (s.objectsAfter == 0 ? .removed : .matched)
            return HeapDiff.Entry(status: status, typeName: s.typeName, frames: s.stack?.frames ?? [],
                                  userFrame: s.stack?.userFrame, sites: s.sites, change: s.change)
        }
        entries = Self.sorted(entries, change: \.change) { a, b in
            // Ties: a stable, readable order.
            let x = a.userFrame.map { a.frames[$0] }, y = b.userFrame.map { b.frames[$0] }
            let kx = "\(x?.function ?? "")|\(x?.file ?? "")|\(x?.line ?? 0)|\(a.typeName ?? "")"
            let ky = "\(y?.function ?? "")|\(y?.file ?? "")|\(y?.line ?? 0)|\(b.typeName ?? "")"
            return kx < ky
        }

        var byType: [String: Sum] = [:]
        for s in sums {
            guard let name = s.typeName else { continue }
            var t = byType[name] ?? Sum(typeName: name)
            t.add(s.change)
            byType[name] = t
        }
        let types = Self.sorted(byType.map { HeapDiff.TypeEntry(typeName: $0.key, change: $0.value.change) },
                                change: \.change) { $0.typeName < $1.typeName }

        var total = Sum()
        for s in sums {
            total.addCounts(s.change)
            // Between marks the totals always carry added and removed (zero when no part had
            // them); between traces never.
            if mode == .marks {
                total.added = Self.plus(total.added, s.added ?? .zero)
                total.removed = Self.plus(total.removed, s.removed ?? .zero)
            }
        }
        let totals = HeapDiff.Totals(
            change: total.change, entries: entries.count,
            matchedEntries: entries.filter { $0.status == .matched }.count,
            addedEntries: entries.filter { $0.status == .added }.count,
            removedEntries: entries.filter { $0.status == .removed }.count,
            changedEntries: entries.filter { !$0.change.isUnchanged }.count)
        return HeapDiff(mode: mode, base: base, new: new, options: HeapDiff.Options(depth: depth), totals: totals,
                        entries: entries, types: types, notes: notes)
    }

    static func sorted<T>(_ items: [T], change: KeyPath<T, HeapDiff.Change>, tie: (T, T) -> Bool) -> [T] {
        items.sorted { a, b in HeapDiff.largerChange(a[keyPath: change], b[keyPath: change]) ?? tie(a, b) }
    }
}
