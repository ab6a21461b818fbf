#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// Finds the external programs.
enum ToolLocator {
    static let toolchainBin = "/opt/swift/usr/bin"

    static func isExecutable(_ path: String) -> Bool {
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return false }
        return access(path, X_OK) == 0
    }

    /// `name` in the directories of `PATH`.
    static func onPath(_ name: String, environment: [String: String]) -> String? {
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") where !dir.isEmpty {
            let candidate = "\(dir)/\(name)"
            if isExecutable(candidate) { return candidate }
        }
        return nil
    }

    /// The directory of the `swift` driver found on PATH, symlinks resolved.
    static func swiftToolchainBin(environment: [String: String]) -> String? {
        guard let swift = onPath("swift", environment: environment) else { return nil }
        guard let resolved = realpath(swift, nil) else { return (swift as NSString).deletingLastPathComponent }
        defer { free(resolved) }
        return (String(cString: resolved) as NSString).deletingLastPathComponent
    }

    /// Candidates in order of preference. An override (explicit path or `HEAPGEN_SYMBOLIZER`)
    /// whose name contains `addr2line` speaks addr2line's protocol, anything else llvm-symbolizer's.
    static func symbolizerCandidates(override: String?, environment: [String: String]) -> [Symbolizer.Backend] {
        var out: [Symbolizer.Backend] = []
        if let override, !override.isEmpty {
            out.append(((override as NSString).lastPathComponent.contains("addr2line"))
                       ? .addr2line(override) : .llvmSymbolizer(override))
        }
        if let bin = swiftToolchainBin(environment: environment) {
            out.append(.llvmSymbolizer("\(bin)/llvm-symbolizer"))
        }
        out.append(.llvmSymbolizer("\(toolchainBin)/llvm-symbolizer"))
        if let p = onPath("llvm-symbolizer", environment: environment) { out.append(.llvmSymbolizer(p)) }
        if let p = onPath("addr2line", environment: environment) { out.append(.addr2line(p)) }
        return out
    }

    static func swiftDemangle(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        var candidates: [String] = []
        if let bin = swiftToolchainBin(environment: environment) { candidates.append("\(bin)/swift-demangle") }
        candidates.append("\(toolchainBin)/swift-demangle")
        if let p = onPath("swift-demangle", environment: environment) { candidates.append(p) }
        return candidates.first(where: isExecutable)
    }
}
