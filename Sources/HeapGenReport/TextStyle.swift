// ANSI styling for the text report.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Bold, red, yellow and dim via ANSI escapes, or nothing at all.
public struct TextStyle: Sendable {
    /// Whether escapes are written.
    public let enabled: Bool

    /// A style that writes escapes only if `enabled`.
    public init(enabled: Bool) {
        self.enabled = enabled
    }

    /// Colour only when `fd` is a terminal and `NO_COLOR` is unset or empty
    /// (see no-color.org), and `TERM` is not `dumb`.
    public static func shouldColor(fileDescriptor fd: Int32 = 1, environment: [String: String]? = nil) -> Bool {
        func variable(_ name: String) -> String? {
            if let environment { return environment[name] }
            return getenv(name).map { String(cString: $0) }
        }
        if let noColor = variable("NO_COLOR"), !noColor.isEmpty { return false }
        if variable("TERM") == "dumb" { return false }
        return isatty(fd) == 1
    }

    func bold(_ s: String) -> String { wrap(s, "1") }
    func red(_ s: String) -> String { wrap(s, "1;31") }
    func yellow(_ s: String) -> String { wrap(s, "33") }
    func green(_ s: String) -> String { wrap(s, "32") }
    func dim(_ s: String) -> String { wrap(s, "2") }

    private func wrap(_ s: String, _ code: String) -> String {
        enabled && !s.isEmpty ? "\u{1B}[\(code)m\(s)\u{1B}[0m" : s
    }
}
