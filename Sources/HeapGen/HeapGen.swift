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
    /// are expected, and the analysis ignores growth in them.
    ///
    /// The marks form one *scope*, judged on its own cycles with its own warm-up, apart from
    /// other scopes and other marks of the program. Labels:
    /// `HeapGen.cycles <name> start`, `HeapGen.cycles <name> warm-up 1/10`,
    /// `HeapGen.cycles <name> cycle 2/10`, where `<name>` is the calling function and its
    /// file and line, e.g. `main (main.swift:12)` (see ``scopeName(function:fileID:line:)``).
    public static func cycles(_ n: Int, warmUp: Int = 1, function: String = #function, fileID: String = #fileID,
                              line: UInt = #line, _ body: () throws -> Void) rethrows {
        let count = max(n, 1)
        let labels = scopeLabels("HeapGen.cycles", name: scopeName(function: function, fileID: fileID, line: line),
                                 cycles: count, warmUp: warmUp)
        mark(labels[0])
        for index in 1...count {
            try body()
            mark(labels[index])
        }
    }

    /// The name a scope's labels carry: `function (File.swift:line)`, e.g.
    /// `testProfileDoesNotLeak() (ProfileTests.swift:31)`. Distinct for every call site.
    public static func scopeName(function: String, fileID: String, line: UInt) -> String {
        let file = fileID.split(separator: "/").last.map(String.init) ?? fileID
        return "\(function) (\(file):\(line))"
    }

    /// The labels of one scope: `<kind> <name> start`, then for i in 1...cycles
    /// `<kind> <name> warm-up i/cycles` (the first `warmUp`) or `<kind> <name> cycle i/cycles`.
    /// heapgen's analysis recognises scopes by these labels alone.
    public static func scopeLabels(_ kind: String, name: String, cycles: Int, warmUp: Int) -> [String] {
        ["\(kind) \(name) start"] + (1...max(cycles, 1)).map { i in
            i <= warmUp ? "\(kind) \(name) warm-up \(i)/\(cycles)" : "\(kind) \(name) cycle \(i)/\(cycles)"
        }
    }
}
