#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Marks generations from Swift code.
///
/// The library has no link-time dependency on heapgen: it looks up the
/// preload library's `heapgen_mark` at run time, so a program that uses it
/// runs unchanged (and the calls do nothing) when it is not recorded.
public enum HeapGen {
    private typealias MarkFunction = @convention(c) (UnsafePointer<CChar>?) -> Void
    private typealias TracingFunction = @convention(c) () -> Int32

    // Resolved once; dlsym on every mark would cost more than the mark.
    private static let markFunction: MarkFunction? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "heapgen_mark") else { return nil }
        return unsafeBitCast(symbol, to: MarkFunction.self)
    }()

    private static let tracingFunction: TracingFunction? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "heapgen_is_tracing") else { return nil }
        return unsafeBitCast(symbol, to: TracingFunction.self)
    }()

    /// True when this process is being recorded by heapgen.
    public static var isTracing: Bool {
        tracingFunction.map { $0() != 0 } ?? false
    }

    /// Ends the current generation and starts the next one. The mark is
    /// ordered with the allocations of every thread.
    public static func mark(_ label: String = "") {
        guard let markFunction else { return }
        label.withCString { markFunction($0) }
    }

    /// Runs `body` `n` times and marks a generation before the first run
    /// and after each one, so every run is one generation ("cycle").
    /// The first `warmUp` runs are labelled as warm-up: caches filled there
    /// are expected, and the analysis ignores growth in them (its
    /// `--warm-up` defaults to the same 1).
    public static func cycles(_ n: Int, warmUp: Int = 1, _ body: () throws -> Void) rethrows {
        mark("heapgen.start")
        for index in 1...max(n, 1) {
            try body()
            mark(index <= warmUp ? "warm-up \(index)" : "cycle \(index)")
        }
    }
}
