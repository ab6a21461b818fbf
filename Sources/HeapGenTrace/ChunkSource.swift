// Where the reader gets its bytes: an in-memory array or a file read with pread(2).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Random access to the bytes of a trace, front to back.
protocol ChunkSource {
    /// Up to `count` bytes at `offset`; fewer only at the end of the file.
    /// Valid until the next call.
    mutating func bytes(at offset: UInt64, count: Int) throws(TraceError) -> UnsafeRawBufferPointer
}

/// A trace held in memory.
struct MemorySource: ChunkSource {
    let all: UnsafeRawBufferPointer

    func bytes(at offset: UInt64, count: Int) -> UnsafeRawBufferPointer {
        guard offset < UInt64(all.count) else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        let start = Int(offset)
        let n = min(count, all.count - start)
        return UnsafeRawBufferPointer(rebasing: all[start..<(start + n)])
    }
}

/// An open trace file. Closed when the last reader using it goes away.
final class TraceFile: Sendable {
    let fd: Int32

    init(fd: Int32) {
        self.fd = fd
    }

    deinit {
        close(fd)
    }
}

/// Reads a file through a read-ahead buffer of at least 1 MiB (no mmap: a file
/// truncated under us must give an error, not SIGBUS).
final class FileSource: ChunkSource {
    let file: TraceFile
    let name: String
    private var storage: UnsafeMutableRawPointer
    private var capacity: Int
    /// `storage[0..<length]` holds the file's bytes at `start..<start+length`.
    private var start: UInt64 = 0
    private var length = 0
    /// The buffer reached the end of the file.
    private var sawEOF = false
    /// Told after each read (nil: nobody listens), with the file's size at open.
    private let progress = TraceReadProgress.current
    private let fileSize: UInt64

    static let readAhead = 1 << 20

    init(file: TraceFile, name: String) {
        self.file = file
        self.name = name
        var info = stat()
        fileSize = fstat(file.fd, &info) == 0 ? UInt64(max(info.st_size, 0)) : 0
        capacity = Self.readAhead
        storage = .allocate(byteCount: capacity, alignment: 16)
    }

    deinit {
        storage.deallocate()
    }

    func bytes(at offset: UInt64, count: Int) throws(TraceError) -> UnsafeRawBufferPointer {
        let end = start &+ UInt64(length)
        if offset >= start && offset <= end {
            let skip = Int(offset - start)
            let available = length - skip
            if available >= count || sawEOF {
                return UnsafeRawBufferPointer(start: storage + skip, count: min(count, available))
            }
            // Keep the tail we have, read the rest.
            if skip > 0 { (storage).copyMemory(from: storage + skip, byteCount: available) }
            length = available
        } else {
            length = 0
        }
        start = offset
        if count > capacity {
            let grown = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: 16)
            grown.copyMemory(from: storage, byteCount: length)
            storage.deallocate()
            storage = grown
            capacity = count
        }
        let want = max(count, Self.readAhead) - length
        let toRead = min(want, capacity - length)
        let r = SystemCalls.preadAll(file.fd, storage + length, toRead, offset &+ UInt64(length))
        if r < 0 {
            throw TraceError(.io, "cannot read: \(SystemCalls.errorString(Int32(-r)))", offset: offset &+ UInt64(length), file: name)
        }
        sawEOF = r < toRead
        length += r
        progress?.read(path: name, offset: start &+ UInt64(length), size: fileSize)
        return UnsafeRawBufferPointer(start: storage, count: min(count, length))
    }
}
