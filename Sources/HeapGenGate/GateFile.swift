// Reading gate inputs and writing gate outputs safely.

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HeapGenTrace
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// File access for the gate: bounded reads of suppression and baseline files, and writes of
/// the JUnit, Markdown, SARIF and baseline files that never follow a symbolic link and leave
/// the file readable by its owner only (mode 0600), since they name files and functions.
public enum GateFile {
    /// A file that cannot be read or written: the path and the system's reason.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The file.
        public var path: String
        /// Why (`strerror`, or a size limit).
        public var reason: String
        public var description: String { "\(path): \(reason)" }
    }

    /// Reads at most `limit` bytes of `path`.
    ///
    /// - Throws: ``Failure`` if it cannot be opened or read, or is larger than `limit`.
    public static func read(_ path: String, limit: Int) throws -> Data {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw Failure(path: path, reason: String(cString: strerror(errno))) }
            if n == 0 { break }
            bytes += chunk[0..<n]
            if bytes.count > limit { throw Failure(path: path, reason: "larger than \(limit) bytes") }
        }
        return Data(bytes)
    }

    /// Writes `text` to `path`: created with mode 0600 (or truncated, and then made 0600 if
    /// it is a regular file; or appended to when `append`), never through a symbolic link
    /// (`O_NOFOLLOW`). A device or FIFO keeps its mode (see `PrivateOutputFile`).
    ///
    /// - Throws: ``Failure`` with the reason.
    public static func write(_ text: String, to path: String, append: Bool = false) throws {
        let fd = PrivateOutputFile.open(path, append: append)
        if fd < 0 { throw Failure(path: path, reason: String(cString: strerror(-fd))) }
        defer { close(fd) }
        var text = text
        let problem: String? = text.withUTF8 { buf in
            guard let base = buf.baseAddress else { return nil }
            var off = 0
            while off < buf.count {
                let n = Glibc.write(fd, base + off, buf.count - off)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { return String(cString: strerror(errno)) }
                off += n
            }
            return nil
        }
        if let problem { throw Failure(path: path, reason: problem) }
    }
}
