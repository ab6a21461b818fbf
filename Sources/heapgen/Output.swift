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
        bytes.withUnsafeBytes { buf in
            guard let base = buf.baseAddress else { return }
            var off = 0
            while off < buf.count {
                let n = Glibc.write(fd, base + off, buf.count - off)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                off += n
            }
        }
        bytes.removeAll(keepingCapacity: true)
    }

    deinit { flush() }
}

func standardError(_ text: String) {
    let out = OutputBuffer(fd: 2)
    out.write(text)
}

func hex(_ v: UInt64) -> String { "0x" + String(v, radix: 16) }
