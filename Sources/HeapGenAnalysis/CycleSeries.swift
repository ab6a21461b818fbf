// A per-cycle series stored sparse: memory grows with its changes, not with the cycles.

/// A series of integers, one per cycle (index 0 = cycle 1), that keeps only its nonzero
/// entries: a site that allocated in 3 of 20,000 cycles costs 3 entries, not 20,000.
///
/// ``dense`` gives the plain array when one is needed (printing one finding); sums and
/// lookups work on the sparse form. Two series are equal when their dense arrays are.
public struct CycleSeries: Sendable, Equatable {
    /// Number of cycles (length of ``dense``).
    public private(set) var count: Int
    /// Cycle indices of the nonzero entries, increasing.
    private var indices: [Int]
    /// The nonzero entries, parallel to `indices`.
    private var values: [Int]

    /// An empty series (no cycles).
    public init() {
        count = 0
        indices = []
        values = []
    }

    /// The series of the plain array `dense`.
    public init(_ dense: [Int]) {
        count = dense.count
        indices = []
        values = []
        for (i, v) in dense.enumerated() where v != 0 {
            indices.append(i)
            values.append(v)
        }
    }

    /// A series of `count` cycles with `entries` (cycle index, value) in increasing index
    /// order, each index below `count`; zero values are skipped.
    init(count: Int, increasing entries: [(index: Int, value: Int)]) {
        self.count = count
        indices = []
        values = []
        indices.reserveCapacity(entries.count)
        values.reserveCapacity(entries.count)
        for e in entries where e.value != 0 {
            indices.append(e.index)
            values.append(e.value)
        }
    }

    /// The plain array: `count` values, zero where the series has no entry.
    public var dense: [Int] {
        var out = [Int](repeating: 0, count: count)
        for (i, v) in zip(indices, values) { out[i] = v }
        return out
    }

    /// The value at cycle index `i` (0 for an index with no entry).
    public subscript(i: Int) -> Int {
        var low = 0, high = indices.count
        while low < high {
            let mid = (low + high) / 2
            if indices[mid] < i { low = mid + 1 } else { high = mid }
        }
        return low < indices.count && indices[low] == i ? values[low] : 0
    }

    /// The nonzero entries, by cycle index.
    public var nonzero: [(index: Int, value: Int)] {
        zip(indices, values).map { (index: $0, value: $1) }
    }

    /// Sum of the values at cycle indices `from` and later.
    public func sum(from start: Int = 0) -> Int {
        var total = 0
        for (i, v) in zip(indices, values) where i >= start { total &+= v }
        return total
    }

    /// Number of nonzero entries.
    public var nonzeroCount: Int { indices.count }
}

extension CycleSeries: Codable {
    /// Decodes the plain array.
    public init(from decoder: any Decoder) throws {
        self.init(try [Int](from: decoder))
    }

    /// Encodes the plain array, element by element (never the whole array at once).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.unkeyedContainer()
        var next = 0
        for i in 0..<count {
            if next < indices.count && indices[next] == i {
                try c.encode(values[next])
                next += 1
            } else {
                try c.encode(0)
            }
        }
    }
}

/// A value that keeps a per-cycle change of live objects and of live bytes as sparse
/// ``CycleSeries`` (a finding, a type rollup, a report's finding) and offers them as the plain
/// arrays JSON and printing use. One definition of the dense accessors for all of them.
public protocol PerCycleSeries {
    /// Change of live objects per cycle, sparse.
    var objectsSeries: CycleSeries { get set }
    /// Change of live bytes per cycle, sparse.
    var bytesSeries: CycleSeries { get set }
}

extension PerCycleSeries {
    /// Change of live objects over every cycle, warm-up included (index 0 = cycle 1).
    public var objectsPerCycle: [Int] {
        get { objectsSeries.dense }
        set { objectsSeries = CycleSeries(newValue) }
    }

    /// Change of live bytes over every cycle, warm-up included (index 0 = cycle 1).
    public var bytesPerCycle: [Int] {
        get { bytesSeries.dense }
        set { bytesSeries = CycleSeries(newValue) }
    }
}
