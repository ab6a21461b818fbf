// Writing heapgen's output: buffered standard output and error, and owner-only files.

import ArgumentParser
import HeapGenRecord
import HeapGenTrace
#if canImport(Glibc)
import Glibc
#endif

/// Buffered standard output without Foundation: `dump` prints millions of lines.
final class OutputBuffer {
    private var bytes: [UInt8] = []
    private let fd: Int32
    private static let flushAt = 1 << 16

    init(fd: Int32 = 1) {
        self.fd = fd
        bytes.reserveCapacity(Self.flushAt + 4096)
    }

    func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
        if bytes.count >= Self.flushAt { flush() }
    }

    func line(_ text: String) {
        write(text)
        bytes.append(10)
        if bytes.count >= Self.flushAt { flush() }
    }

    func flush() {
        bytes.withUnsafeBytes { _ = OutputFile.writeAll($0, to: fd) }
        bytes.removeAll(keepingCapacity: true)
    }

    deinit { flush() }
}

/// A command's output (`--output PATH`, or standard output).
enum OutputFile {
    /// Writes `bytes` to `path` (created or truncated, never through a symbolic link; a
    /// regular file is made mode 0600, a device or FIFO keeps its mode: see
    /// `PrivateOutputFile`) or, with no path, to standard output unbuffered; returns a
    /// description of the failure, or nil.
    static func write(_ bytes: UnsafeRawBufferPointer, to path: String?) -> String? {
        withDescriptor(for: path) { writeAll(bytes, to: $0) }
    }

    /// Calls `body` with a descriptor for `path`, opened as ``write(_:to:)`` opens it and
    /// closed after (standard output with no path); returns the failure to open it, or what
    /// `body` returns (a description of a failure, or nil).
    static func withDescriptor(for path: String?, _ body: (Int32) throws -> String?) rethrows -> String? {
        let fd: Int32
        if let path {
            fd = PrivateOutputFile.open(path)
            if fd < 0 { return String(cString: strerror(-fd)) }
        } else {
            fd = 1
        }
        defer { if path != nil { close(fd) } }
        return try body(fd)
    }

    /// A failure to write output given in pieces (``writing(to:)``): its description.
    struct Failure: Error {
        var problem: String
    }

    /// Output written in pieces as it is made: `body` gets a sink that writes each piece to
    /// `path` (see ``withDescriptor(for:_:)``) and throws ``Failure`` when one cannot be;
    /// it must not be used once `body` has returned (the file is closed then).
    ///
    /// - Throws: ``Failure`` if `path` cannot be opened or written, or what `body` throws.
    static func writing<T>(to path: String?, _ body: (_ sink: @escaping ([UInt8]) throws -> Void) throws -> T) throws -> T {
        var result: T?
        if let problem = try withDescriptor(for: path, { fd in
            result = try body { piece in
                if let problem = piece.withUnsafeBytes({ writeAll($0, to: fd) }) { throw Failure(problem: problem) }
            }
            return nil
        }) {
            throw Failure(problem: problem)
        }
        return result!
    }

    /// `write(_:to:)` for bytes.
    static func write(_ bytes: [UInt8], to path: String?) -> String? {
        bytes.withUnsafeBytes { write($0, to: path) }
    }

    /// `write(_:to:)` for UTF-8 text.
    static func write(_ text: String, to path: String?) -> String? {
        var text = text
        return text.withUTF8 { write(UnsafeRawBufferPointer($0), to: path) }
    }

    /// Prints `text` to standard output (buffered), or writes it to `path`. A failure prints
    /// `heapgen: cannot write the WHAT PATH: PROBLEM` and becomes exit status 125.
    static func emit(_ text: String, to path: String?, what: String) throws {
        guard let path else {
            let out = OutputBuffer()
            out.write(text)
            out.flush()
            return
        }
        if let problem = write(text, to: path) {
            standardError("heapgen: cannot write the \(what) \(path): \(problem)\n")
            throw ExitCode(ExitCodes.heapgenFailed)
        }
    }

    /// Writes all of `bytes` to `fd`, retrying after EINTR; returns a description of the
    /// failure, or nil.
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to fd: Int32) -> String? {
        guard let base = bytes.baseAddress else { return nil }
        var off = 0
        while off < bytes.count {
            let n = Glibc.write(fd, base + off, bytes.count - off)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return String(cString: strerror(errno)) }
            off += n
        }
        return nil
    }
}

func standardError(_ text: String) {
    let out = OutputBuffer(fd: 2)
    out.write(text)
}

func hex(_ v: UInt64) -> String { "0x" + String(v, radix: 16) }
