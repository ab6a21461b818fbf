import CHeapGenCollector
#if canImport(Glibc)
import Glibc
#endif

/// `heapgen mark PID`: puts a generation mark into a running, recorded
/// process from outside, for programs that cannot be changed.
///
/// The shim keeps its segment open at a descriptor ≥ 500; we find it in
/// `/proc/PID/fd` (the kernel lets only the same user, or root, open it),
/// map it and publish the mark as one more producer, so it is ordered with
/// the program's allocations like an in-process `heapgen_mark`.
public enum ExternalMark {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public var exitCode: Int32
    }

    /// Marks every heapgen segment that process `pid` has open (normally one).
    public static func mark(pid: Int32, label: String) throws(Failure) {
        let dir = "/proc/\(pid)/fd"
        guard let handle = opendir(dir) else {
            throw Failure(description: "no process \(pid) that we may inspect (\(String(cString: strerror(errno))))",
                          exitCode: ExitCodes.notRecorded)
        }
        defer { closedir(handle) }
        var marked = 0
        var lastError = "it has no heapgen segment: is it running under `heapgen record`?"
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let number = Int32(name), number >= 500 else { continue }
            let path = "\(dir)/\(name)"
            var target = [CChar](repeating: 0, count: 256)
            let n = readlink(path, &target, target.count - 1)
            guard n > 0 else { continue }
            let link = String(decoding: target.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard link.hasPrefix("/memfd:heapgen") else { continue }
            let fd = open(path, O_RDWR | O_CLOEXEC)
            guard fd >= 0 else {
                lastError = "cannot open its segment: \(String(cString: strerror(errno)))"
                continue
            }
            var segment = hg_segment()
            var errbuf = [CChar](repeating: 0, count: 200)
            if hg_segment_attach(fd, &segment, &errbuf, errbuf.count) != 0 {
                close(fd)
                lastError = String(decoding: errbuf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                continue
            }
            defer { hg_segment_close(&segment) }
            // The collector drains continuously; a full ring frees up quickly.
            var result: Int32 = -EAGAIN
            for _ in 0..<2000 where result == -EAGAIN {
                result = hg_produce_mark(&segment, label, 2)
                if result == -EAGAIN { usleep(1000) }
            }
            if result == 0 { marked += 1 } else { lastError = "its event ring stayed full for 2 s" }
        }
        if marked == 0 {
            throw Failure(description: "cannot mark process \(pid): \(lastError)", exitCode: ExitCodes.notRecorded)
        }
    }
}
