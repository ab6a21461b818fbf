// The stacks whose frames an analysis hands out, read again when the first pass dropped them.

import HeapGenTrace

extension GenerationAnalyzer {
    /// Stack ids whose frames ``finish()`` can hand out, or a few more: the stacks of every
    /// site live at exit or at some mark (every finding, regrouping candidate and
    /// live-at-exit site is one), of the ``AnalysisOptions/maxSites`` sites with the highest
    /// peaks, and of the blocks of the reference graphs.
    func stacksFinishNeeds() -> IdSet {
        var needed = IdSet()
        let stackOf = siteStacks()
        for s in sites.indices where sites[s].liveObjects != 0 || sites[s].liveBytes != 0 {
            needed.insert(stackOf[s])
        }
        for s in series.keys { needed.insert(stackOf[Int(s)]) }
        for s in sitesWithHighestPeaks(max(0, options.maxSites)) { needed.insert(stackOf[s]) }
        for graph in graphs {
            for stack in graph.stacks where stack != RetentionGraph.unknown { needed.insert(stack) }
        }
        return needed
    }

    /// The second pass of ``analyze(path:options:)`` once the first dropped the frames
    /// (``framesDropped``): reads `reader` again from the start and keeps the definitions
    /// of ``stacksFinishNeeds()`` only, at the record positions the first pass counted (one
    /// a record), and their `stackTruncated` records.
    ///
    /// Checks the stack aliases on the way (the exact keys of the stacks they name, against
    /// the same module records): returns the wrong ones, which the compact identity answered
    /// for two different stacks (see ``StackIdentity``).
    mutating func defineNeededStacks(_ reader: inout TraceReader) throws -> [UInt32: UInt32] {
        let needed = stacksFinishNeeds()
        var aliased = IdSet()
        for (id, first) in stackAlias {
            aliased.insert(id)
            aliased.insert(first)
        }
        let checking = !stackAlias.isEmpty
        var check = StackIdentity()
        var store = StackFrameStore()
        var truncated: [UInt32: Int] = [:]
        var index: UInt64 = 0
        try reader.forEach { record in
            switch record {
            case let .stack(id, frames):
                if needed.contains(id) { store.define(id, frames: frames, record: index) }
                if aliased.contains(id) { check.check(id, frames: frames) }
            case let .stackTruncated(id) where needed.contains(id):
                truncated[id] = store.depth(of: id) ?? 0
            case let .moduleLoad(module) where checking:
                check.load(module)
            case let .moduleUnload(loadBias) where checking:
                check.unload(loadBias: loadBias)
            default:
                break
            }
            index &+= 1
        }
        stackFrames = store
        truncatedStacks = truncated
        return StackIdentity.wrongAliases(stackAlias, check: check)
    }

    /// The `limit` sites with the highest peak bytes (ties: the lowest site index first),
    /// in that order; sites that never had a live byte are left out.
    func sitesWithHighestPeaks(_ limit: Int) -> [Int] {
        Self.top(limit, of: sites.indices, where: { sites[$0].peakBytes > 0 }) { a, b in
            sites[a].peakBytes != sites[b].peakBytes ? sites[a].peakBytes > sites[b].peakBytes : a < b
        }
    }

    /// The first `limit` elements of `indices` that satisfy `include`, in the order
    /// `precedes` (a strict total order), without sorting them all: O(n log limit) time,
    /// O(limit) memory (sorting every site of a test suite's trace took 80 MB).
    static func top(_ limit: Int, of indices: Range<Int>, where include: (Int) -> Bool,
                    by precedes: (Int, Int) -> Bool) -> [Int] {
        guard limit > 0 else { return [] }
        // A heap whose root is the kept element that comes last in `precedes` order.
        var heap: [Int] = []
        heap.reserveCapacity(limit)
        func siftDown(_ start: Int) {
            var i = start
            while true {
                let l = 2 * i + 1, r = l + 1
                var last = i
                if l < heap.count && precedes(heap[last], heap[l]) { last = l }
                if r < heap.count && precedes(heap[last], heap[r]) { last = r }
                if last == i { return }
                heap.swapAt(i, last)
                i = last
            }
        }
        for i in indices where include(i) {
            if heap.count < limit {
                heap.append(i)
                var c = heap.count - 1
                while c > 0 {
                    let p = (c - 1) / 2
                    guard precedes(heap[p], heap[c]) else { break }
                    heap.swapAt(p, c)
                    c = p
                }
            } else if precedes(i, heap[0]) {
                heap[0] = i
                siftDown(0)
            }
        }
        return heap.sorted(by: precedes)
    }
}
