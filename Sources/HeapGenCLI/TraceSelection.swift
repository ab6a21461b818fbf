// Which traces of one recording `run` reports on.

import Foundation
import HeapGenRecord
import HeapGenTrace

/// Which traces of one recording a report is about.
///
/// A recording writes one trace per process image. The one worth reporting is not
/// always the program heapgen started: `heapgen run -- swift test` starts
/// swift-package, which runs the test binary as a child; a script starts a server.
/// The traces that matter are those in which generations were marked (the program's
/// own marks, `heapgen mark`, or `--mark-every`); without any, the last program the
/// started process exec'd.
enum TraceSelection {
    /// The traces to report on: every trace with a mark, else the last image of `root`'s
    /// exec chain. That image comes first when it has marks (the one JSON and HTML show):
    /// with `--mark-every`, a wrapper that ran a while before it exec'd the program (a shell
    /// script, pyenv's shims) has marks too, and it was written first.
    static func subjects(root: String, written: [String]) -> [String] {
        let marked = written.filter { markCount($0) > 0 }
        let program = lastImage(root: root, others: written)
        guard !marked.isEmpty else { return [program] }
        return marked.contains(program) ? [program] + marked.filter { $0 != program } : marked
    }

    /// Mark records in `trace`; 0 when it cannot be read (the report says why later).
    static func markCount(_ trace: String) -> Int {
        var count = 0
        do {
            var reader = try TraceReader(path: trace)
            try reader.forEach { record in
                if case .mark = record { count += 1 }
            }
        } catch {}
        return count
    }

    /// True if a leak scan recorded an unreachable block in `trace`.
    static func hasUnreachable(_ trace: String) -> Bool {
        struct Found: Error {}
        do {
            var reader = try TraceReader(path: trace)
            try reader.forEach { record in
                if case .unreachable(let addresses) = record, !addresses.isEmpty { throw Found() }
            }
        } catch is Found {
            return true
        } catch {}
        return false
    }

    /// True if `trace` holds a free of an address that was not live (``TraceSummary``'s
    /// replay, lighter than a report's analysis); false for a trace that cannot be read.
    static func hasStrayFrees(_ trace: String) -> Bool {
        ((try? TraceSummary.load(path: trace))?.unknownFrees ?? 0) > 0
    }

    /// The traces a recording to `trace` wrote next to it for other process images
    /// (`TRACE.<pid>` and `TRACE.<pid>.<n>`, see ``TracePaths``), by name.
    static func siblings(of trace: String) -> [String] {
        let url = URL(fileURLWithPath: trace)
        let directory = url.deletingLastPathComponent().path
        let prefix = url.lastPathComponent + "."
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.filter { name in
            guard name.hasPrefix(prefix) else { return false }
            let rest = name.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false)
            return (1...2).contains(rest.count) && rest.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isNumber) }
        }.sorted().map { directory + "/" + $0 }
    }

    /// The trace of the last program the root process exec'd (`ROOT.<pid>.<n>` with the
    /// highest n, see ``TracePaths``), or `root` if it exec'd none that was traced.
    static func lastImage(root: String, others: [String]) -> String {
        guard let pid = rootPid(trace: root) else { return root }
        let paths = TracePaths(output: root)
        var last = root
        var image = 1
        let known = Set(others)
        while known.contains(paths.path(pid: pid, image: image, isRoot: true)) {
            last = paths.path(pid: pid, image: image, isRoot: true)
            image += 1
        }
        return last
    }

    /// The pid in the process record (the first record) of `trace`.
    static func rootPid(trace: String) -> Int32? {
        struct Stop: Error {}
        var pid: Int32?
        do {
            var reader = try TraceReader(path: trace)
            try reader.forEach { record in
                if case .process(let p) = record { pid = p.pid }
                throw Stop()
            }
        } catch {}
        return pid
    }
}
