// Sites that are one place in the source.

import HeapGenSymbolication

/// Tells which sites are one source path once their stacks are symbolicated.
///
/// The analysis keys sites by raw return addresses. An optimising compiler can copy one
/// call (loop peeling, unrolling, inlining into several callers of one line), so one
/// source call path becomes several sites: a C loop whose first iteration gcc peels
/// allocates from its peeled copy in cycle 1 only and from the loop copy from cycle 2 on.
/// Sites whose frames all agree on module, function, file, line, column and inlining (and
/// that have the same Swift type) are one source site. ``ReportBuilder`` has the analysis
/// judge such sites as one (their live counts summed at every mark, see
/// ``Analysis/regrouped(by:)``), and merges the live-at-exit sites the same way. Frames of
/// unknown functions only match at the same address, so nothing is merged without symbols.
public enum SourceSites {
    /// The grouping key of a site: its source path (interned) and Swift type.
    struct Key: Hashable {
        /// Index of the interned ``pathKey(_:)`` of the site's frames.
        var path: Int
        /// Swift type id; only compared when the type has no name.
        var typeID: UInt32
        var typeName: String?

        static func == (a: Key, b: Key) -> Bool {
            a.path == b.path && a.typeName == b.typeName && (a.typeName != nil || a.typeID == b.typeID)
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(path)
            hasher.combine(typeName)
            if typeName == nil { hasher.combine(typeID) }
        }
    }

    /// The source path of a stack: equal for one source call path; `nil` for no frames.
    /// It ends at the innermost frame where an executor or queue ran the job
    /// (``OwnCode/jobEntry(_:)``): a Swift task's allocation is one site whichever
    /// worker path resumed it (split in two, each half missed cycles and one only grew "since
    /// cycle 4").
    static func pathKey(_ frames: [Report.Frame]) -> [String]? {
        guard !frames.isEmpty else { return nil }
        return jobFrames(frames[...]).map { f in
            guard let function = f.function else { return "\(f.module ?? "?")@\(f.address)" }
            return "\(f.module ?? "?")|\(function)|\(f.file ?? "")|\(f.line ?? 0)|\(f.column ?? 0)|\(f.inlined)"
        }
    }

    /// `frames` (innermost first) up to and with the innermost frame where an executor or a
    /// queue ran the job (``OwnCode/jobEntry(_:)``); all of them without one. What lies
    /// outside changes from run to run with the thread that took the job.
    public static func jobFrames(_ frames: ArraySlice<Report.Frame>) -> ArraySlice<Report.Frame> {
        guard let entry = OwnCode.jobEntry(frames.lazy.map(\.function)) else { return frames }
        return frames[...entry]
    }

    /// The key of a stack and type name: equal for one source site.
    static func key(typeName: String?, frames: [Report.Frame]) -> [String] {
        [typeName ?? "\u{0}"] + (pathKey(frames) ?? [])
    }

    /// `sites` with those on one source path merged, largest (bytes, then objects) first.
    public static func merge(_ sites: [Report.Site]) -> [Report.Site] {
        merge(sites) { key(typeName: $0.typeName, frames: $0.frames) }
    }

    /// `sites` with those that allocate at one place of the program's own code (the first
    /// frame there, ``OwnCode/firstUserFrame(_:)``, else the innermost: its function, file
    /// and line) and have one type merged, largest first; each keeps the frames of its
    /// largest part. A recursive function, or one reached from many callers, is one site
    /// of the live-at-exit list: listed by source path, the list kept its 10 largest paths
    /// and the text summed what was kept (36 B of a function's 96 B).
    public static func mergeByAllocationPoint(_ sites: [Report.Site]) -> [Report.Site] {
        merge(sites) { site in
            guard let i = OwnCode.firstUserFrame(site.frames) ?? (site.frames.isEmpty ? nil : 0) else {
                return [site.typeName ?? "\u{0}"]
            }
            let f = site.frames[i]
            let place = f.function.map { "\($0)|\(f.file ?? "")|\(f.line ?? 0)" } ?? "\(f.module ?? "?")@\(f.address)"
            return [site.typeName ?? "\u{0}", place]
        }
    }

    private static func merge(_ sites: [Report.Site], by key: (Report.Site) -> [String]) -> [Report.Site] {
        var merged: [Report.Site] = []
        var index: [[String]: Int] = [:]
        for s in sites {
            let k = key(s)
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
}
