// Thin wrappers over the few system calls the trace files need.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

enum SystemCalls {
    /// The current `errno` as a readable string, e.g. "No space left on device (errno 28)".
    static func errorString(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return "\(String(cString: text)) (errno \(code))"
    }

    /// Writes all `count` bytes, retrying on EINTR and short writes. Returns `errno` on failure.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int32? {
        var done = 0
        while done < count {
            let r = write(fd, bytes + done, count - done)
            if r < 0 {
                let e = errno
                if e == EINTR { continue }
                return e
            }
            // write(2) returning 0 for a non-empty buffer makes no progress: give up.
            if r == 0 { return EIO }
            done += r
        }
        return nil
    }

    /// Reads up to `count` bytes at `offset`, retrying on EINTR and short reads.
    /// Returns the number read (fewer only at end of file) or `-errno`.
    static func preadAll(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: UInt64) -> Int {
        var done = 0
        while done < count {
            guard let position = off_t(exactly: offset &+ UInt64(done)) else { return -Int(EOVERFLOW) }
            let r = pread(fd, buffer + done, count - done, position)
            if r < 0 {
                let e = errno
                if e == EINTR { continue }
                return -Int(e)
            }
            if r == 0 { break }
            done += r
        }
        return done
    }
}
