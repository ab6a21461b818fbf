import CHeapGenCollector
#if canImport(Glibc)
import Glibc
#endif

/// `heapgen mark PID`: puts a generation mark into a running, recorded
/// process from outside, for programs that cannot be changed.
///
/// The traced process keeps no descriptor of heapgen's, so the mark is asked
/// of the collector that records it: its pid and rendezvous socket are in the
/// name of the process's segment, as `/proc/PID/maps` shows it
/// (`/memfd:heapgen:<pid>:<path> (deleted)`), else in the process's
/// environment (`HEAPGEN_COLLECTOR`, `HEAPGEN_SOCK`) or an ancestor's. The
/// environment alone would not do: PostgreSQL writes its process titles over
/// its own. The collector publishes the mark into the process's ring as one
/// more producer, ordered with the program's allocations like an in-process
/// `heapgen_mark`, if we are root or the process's user.
public enum ExternalMark {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public var exitCode: Int32
    }

    /// How long the collector may take to answer (it answers between two drains,
    /// but a leak scan of another process can hold it for seconds).
    static let answerMilliseconds: Int32 = 30_000

    /// Marks the traced image of process `pid`.
    public static func mark(pid: Int32, label: String) throws(Failure) {
        guard pid > 0, access("/proc/\(pid)", F_OK) == 0 else {
            throw Failure(description: "no process \(pid)", exitCode: ExitCodes.notRecorded)
        }
        guard let collector = segmentRendezvous(of: pid) ?? rendezvous(of: pid) else {
            throw Failure(description: "cannot mark process \(pid): it has no heapgen collector in its environment "
                          + "(is it running under `heapgen record`, and may we read /proc/\(pid)/environ?)",
                          exitCode: ExitCodes.notRecorded)
        }
        if collector.pid == pid {
            // heapgen's own pid, which `$!` after `heapgen run … &` gives: name the program.
            let children = procFile(pid, "task/\(pid)/children", limit: 1 << 16)
                .map { String(decoding: $0, as: UTF8.self).split(separator: " ").map(String.init) } ?? []
            let hint = children.isEmpty ? "" : "; the program it records: pid " + children.joined(separator: ", ")
            throw Failure(description: "cannot mark process \(pid): it is heapgen itself, which records the program\(hint)",
                          exitCode: ExitCodes.notRecorded)
        }
        let answer = hg_ask_mark(collector.socket, collector.pid, pid, label, answerMilliseconds)
        guard answer != 0 else { return }
        let reason: String
        switch -answer {
        case ESRCH: reason = "heapgen does not record it (not followed, or already ended)"
        case EPERM: reason = "it runs as another user"
        case ECONNREFUSED, ENOENT: reason = "its heapgen collector is gone"
        case EACCES: reason = "the socket in its environment is not its collector's"
        case ETIMEDOUT: reason = "its heapgen collector did not answer in \(answerMilliseconds / 1000) s"
        default: reason = String(cString: strerror(-answer))
        }
        throw Failure(description: "cannot mark process \(pid): \(reason)", exitCode: ExitCodes.notRecorded)
    }

    /// The collector's socket path and pid from the name of `pid`'s segment mapping.
    static func segmentRendezvous(of pid: Int32) -> (socket: String, pid: Int32)? {
        guard let bytes = procFile(pid, "maps", limit: 64 << 20) else { return nil }
        let marker = Array("/memfd:heapgen:".utf8)
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            guard let start = line.firstRange(of: marker)?.upperBound else { continue }
            var name = String(decoding: line[start...], as: UTF8.self)
            if name.hasSuffix(" (deleted)") { name.removeLast(" (deleted)".count) }
            guard let colon = name.firstIndex(of: ":"), let collector = Int32(name[..<colon]), collector > 0 else { continue }
            let socket = String(name[name.index(after: colon)...])
            if socket.hasPrefix("/") { return (socket, collector) }
        }
        return nil
    }

    /// The collector's socket path and pid from the environment of `pid` or of its
    /// nearest ancestor that has both.
    static func rendezvous(of pid: Int32) -> (socket: String, pid: Int32)? {
        var current = pid
        for _ in 0 ..< 64 where current > 1 {
            let env = environment(of: current)
            if let socket = env[HG_ENV_SOCK], socket.hasPrefix("/"),
               let collector = env[HG_ENV_COLLECTOR].flatMap({ Int32($0) }), collector > 0 {
                return (socket, collector)
            }
            guard let parent = parentPid(of: current), parent != current else { return nil }
            current = parent
        }
        return nil
    }

    /// /proc/PID/environ as a dictionary (empty when unreadable).
    static func environment(of pid: Int32) -> [String: String] {
        guard let bytes = procFile(pid, "environ", limit: 8 << 20) else { return [:] }
        var env: [String: String] = [:]
        for entry in bytes.split(separator: 0) {
            guard let eq = entry.firstIndex(of: UInt8(ascii: "=")) else { continue }
            let key = String(decoding: entry[entry.startIndex ..< eq], as: UTF8.self)
            if env[key] == nil { env[key] = String(decoding: entry[(eq + 1)...], as: UTF8.self) }
        }
        return env
    }

    /// /proc/PID/NAME, whole up to about `limit` bytes; nil when it cannot be opened.
    static func procFile(_ pid: Int32, _ name: String, limit: Int) -> [UInt8]? {
        let fd = open("/proc/\(pid)/\(name)", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < limit {
            let n = read(fd, &chunk, chunk.count)
            if n <= 0 { break }
            bytes.append(contentsOf: chunk.prefix(n))
        }
        return bytes
    }

    /// The PPid: line of /proc/PID/status.
    static func parentPid(of pid: Int32) -> Int32? {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = hg_read_proc_file(pid, "status", &buf, buf.count - 1)
        guard n > 0 else { return nil }
        let text = String(decoding: buf.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix("PPid:") {
            return Int32(line.dropFirst(5).trimmingCharacters(in: " \t"))
        }
        return nil
    }
}

private extension Substring {
    func trimmingCharacters(in set: String) -> Substring {
        var s = self
        while let c = s.first, set.contains(c) { s.removeFirst() }
        while let c = s.last, set.contains(c) { s.removeLast() }
        return s
    }
}
