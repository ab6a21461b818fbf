import Foundation

extension Symbolizer {
    /// The program that does the lookups.
    public enum Backend: Sendable, Equatable {
        /// A long-lived `llvm-symbolizer` (JSON protocol on stdin/stdout).
        case llvmSymbolizer(String)
        /// binutils `addr2line`, one process per module and batch.
        case addr2line(String)
        /// None found: frames carry module and offset only.
        case none
    }

    /// How Swift names are demangled.
    public enum SwiftDemangling: Sendable, Equatable {
        /// The Swift runtime's `swift_demangle` / `_swift_backtrace_demangle`, else `swift-demangle`.
        case automatic
        /// Only the `swift-demangle` program at this path.
        case commandLine(String)
        /// Leave Swift names mangled.
        case disabled
    }

    public struct Options: Sendable {
        /// Symbolizer program to use before any other; `HEAPGEN_SYMBOLIZER` when nil.
        public var symbolizerPath: String?
        /// When false, only the first candidate is considered (the override if there is one,
        /// else the Swift toolchain's llvm-symbolizer): if it isn't there, there is no backend.
        public var allowFallbacks: Bool
        /// Environment for `HEAPGEN_SYMBOLIZER` and `PATH`; the process's own when nil.
        public var environment: [String: String]?
        /// Where separate debug files are looked up by build ID (`<dir>/.build-id/ab/cdef….debug`),
        /// both by heapgen for stale modules and by llvm-symbolizer (`--debug-file-directory`).
        public var debugFileDirectories: [String]
        /// Seconds a symbolizer may stay silent before it is considered hung and killed.
        public var timeout: Double
        public var swiftDemangling: SwiftDemangling

        public init(symbolizerPath: String? = nil, allowFallbacks: Bool = true,
                    environment: [String: String]? = nil,
                    debugFileDirectories: [String] = ["/usr/lib/debug"],
                    timeout: Double = 30, swiftDemangling: SwiftDemangling = .automatic) {
            self.symbolizerPath = symbolizerPath
            self.allowFallbacks = allowFallbacks
            self.environment = environment
            self.debugFileDirectories = debugFileDirectories
            self.timeout = timeout
            self.swiftDemangling = swiftDemangling
        }
    }
}
