// The test side of the control channel: sends a request through the preload library's
// `heapgen_control` and decodes the collector's answer (types in HeapGenControlProtocol).

import CHeapGenTestingStart
import Foundation
import HeapGen
import HeapGenControlProtocol
import HeapGenJSON
#if canImport(Glibc)
import Glibc
#endif

/// Talks to the heapgen collector through the preload library's
/// `heapgen_control` (looked up at run time: no link-time dependency).
enum ControlClient {
    private typealias ControlFunction = @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int) -> Int

    private static let function: ControlFunction? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "heapgen_control") else { return nil }
        return unsafeBitCast(symbol, to: ControlFunction.self)
    }()

    /// The largest answer the collector can give (the response region).
    private static let capacity = 1 << 20

    /// One request at a time per process (the shim serialises too, but the
    /// answer buffer is ours), and one expectNoGrowth session at a time.
    static let lock = NSRecursiveLock()

    /// Mapped once, on the first request, and kept: a request made inside a
    /// measured cycle must not allocate or free a megabyte. Mapped rather than
    /// allocated, so heapgen's own buffer never shows among the program's blocks
    /// (it would top "live at exit").
    nonisolated(unsafe) private static var buffer: UnsafeMutablePointer<CChar>?

    private static func mapBuffer() -> UnsafeMutablePointer<CChar>? {
        guard let m = mmap(nil, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              m != MAP_FAILED else { return nil }
        return m.assumingMemoryBound(to: CChar.self)
    }

    enum Outcome {
        /// The collector's JSON answer.
        case answer(Data)
        /// Not running under heapgen (or the collector declined this process).
        case notTraced
        /// The request failed (errno-style reason).
        case failed(String)
    }

    /// True when `heapgen_control` is there and this process is traced.
    static var isAvailable: Bool { function != nil && HeapGen.isTracing }

    /// What the start-up constructor got for `{"op":"track"}`.
    static var startResult: Int { hg_testing_start_result() }

    /// Sends `request` (a JSON object) and waits for the answer.
    static func send(_ request: String) -> Outcome {
        guard let function else { return .notTraced }
        lock.lock()
        defer { lock.unlock() }
        if buffer == nil { buffer = mapBuffer() }
        guard let buffer else { return .failed("cannot map a \(capacity)-byte answer buffer: \(String(cString: strerror(errno)))") }
        let rc = request.withCString { function($0, buffer, capacity) }
        switch rc {
        case 0...:
            let n = min(rc, capacity - 1)
            return .answer(Data(bytes: buffer, count: n))
        case -Int(ENOSYS): return .notTraced
        case -Int(ETIMEDOUT): return .failed("heapgen did not answer within 30 s")
        case -Int(EPIPE): return .failed("the heapgen collector went away")
        case -Int(E2BIG): return .failed("request too large")
        default: return .failed("heapgen_control failed (\(rc))")
        }
    }

    /// Sends `request` and decodes the answer as `T`; failures become
    /// ``ControlError``s (not traced included).
    static func ask<T: ControlAnswer>(_ request: String, as type: T.Type) throws -> T {
        switch send(request) {
        case .notTraced:
            throw ControlError.notTraced
        case .failed(let reason):
            throw ControlError.failed(reason)
        case .answer(let data):
            let json = try? JSONReader.parse([UInt8](data))
            if let json, let status = try? ControlStatusAnswer(json: json), !status.ok {
                throw ControlError.failed("heapgen refused the request: \(status.error ?? "no reason given")")
            }
            do {
                guard let json else { throw ControlProtocolError("not JSON") }
                return try T(json: json)
            } catch {
                throw ControlError.failed("unexpected answer from heapgen: \(String(decoding: data.prefix(300), as: UTF8.self))")
            }
        }
    }
}

enum ControlError: Error, CustomStringConvertible {
    case notTraced
    case failed(String)

    var description: String {
        switch self {
        case .notTraced: "this process is not running under heapgen"
        case .failed(let reason): reason
        }
    }
}
