// What the reader left out of a trace whose collector was killed (docs/trace-format.md, "Chunks").

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HeapGenUnits

/// A trace read without its `end` record: the collector was killed (or the disk filled)
/// before it finished. The reader delivered every record of the whole chunks before
/// ``readBytes`` and ignored the ``ignoredBytes`` after them (a chunk cut short).
public struct TraceSalvage: Sendable, Equatable, Codable {
    /// The file (path as given, or a name for in-memory traces).
    public var file: String
    /// Bytes of the file that were read: header and whole chunks.
    public var readBytes: UInt64
    /// Bytes at the end of the file that were ignored (0: the file ends at a chunk boundary).
    public var ignoredBytes: UInt64

    public init(file: String, readBytes: UInt64, ignoredBytes: UInt64) {
        self.file = file
        self.readBytes = readBytes
        self.ignoredBytes = ignoredBytes
    }

    /// One clause for the user, e.g. `truncated: 1,234 bytes at the end ignored; no end record:
    /// the collector was killed`.
    public var notice: String {
        let end = "no end record: the collector was killed or is still recording"
        guard ignoredBytes > 0 else { return end }
        return "truncated: \(HumanUnits.count(ignoredBytes)) byte\(ignoredBytes == 1 ? "" : "s") at the end ignored; \(end)"
    }
}

/// Every trace salvaged in this process, once per file, so that a command that reads the
/// same trace several times (or through several libraries) can say so once.
public enum TraceSalvageLog {
    private final class Storage: @unchecked Sendable {
        let lock: UnsafeMutablePointer<pthread_mutex_t> = {
            let p = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
            pthread_mutex_init(p, nil)
            return p
        }()
        var pending: [TraceSalvage] = []
        var seen: Set<String> = []
    }
    private static let storage = Storage()

    /// Records `salvage` unless its file was noted before.
    static func note(_ salvage: TraceSalvage) {
        pthread_mutex_lock(storage.lock)
        defer { pthread_mutex_unlock(storage.lock) }
        if storage.seen.insert(salvage.file).inserted { storage.pending.append(salvage) }
    }

    /// The salvages noted since the last call (each file once per process), oldest first.
    public static func take() -> [TraceSalvage] {
        pthread_mutex_lock(storage.lock)
        defer { pthread_mutex_unlock(storage.lock) }
        let out = storage.pending
        storage.pending.removeAll()
        return out
    }

    /// Every file salvaged so far in this process (whether taken or not).
    public static func wasSalvaged(_ file: String) -> Bool {
        pthread_mutex_lock(storage.lock)
        defer { pthread_mutex_unlock(storage.lock) }
        return storage.seen.contains(file)
    }
}
