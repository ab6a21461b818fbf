// Suppression files: parsing and matching.

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HeapGenReport

/// The rules of one or more suppression files.
///
/// One rule a line, `KIND:PATTERN`; blank lines and lines starting with `#` are ignored,
/// as are spaces around the line. The kinds:
///
/// | kind | matches any frame's / the finding's |
/// |---|---|
/// | `leak:` | function, file or module (LeakSanitizer's, accepted as is) |
/// | `function:` | function (full demangled name or short form) |
/// | `file:` | source file path |
/// | `module:` | executable or shared-object path |
/// | `type:` | Swift type name (of the finding, not of a frame) |
/// | `free:` | function, file or module of any frame of the freed block's allocation stack (`--fail-on invalid-free` only) |
///
/// Patterns are ``LeakPattern``s (substring, `*`, `^`, `$`). A finding or live-at-exit site
/// is suppressed by the first rule, in file order, that matches; `free:` rules are only for
/// frees of addresses that were not live (a double free, an interior pointer), which no
/// other kind suppresses: a rule written for a cache must not hide a double free.
public struct Suppressions: Sendable, Equatable {
    /// One `KIND:PATTERN` line.
    public struct Rule: Sendable, Equatable, CustomStringConvertible {
        /// What a rule's pattern is matched against.
        public enum Kind: String, Sendable, CaseIterable {
            case leak, function, file, module, type, free
        }

        /// What the pattern is matched against.
        public var kind: Kind
        /// The template.
        public var pattern: LeakPattern
        /// The file the rule came from.
        public var source: String
        /// Its 1-based line in that file.
        public var line: Int

        /// Creates a rule.
        public init(kind: Kind, pattern: String, source: String = "", line: Int = 0) {
            self.kind = kind
            self.pattern = LeakPattern(pattern)
            self.source = source
            self.line = line
        }

        /// `kind:pattern`, as written.
        public var description: String { "\(kind.rawValue):\(pattern.text)" }

        /// True if the rule matches a stack (any frame) or its Swift type: a finding's or a
        /// live-at-exit site's (never for a `free:` rule).
        public func matches(frames: [Report.Frame], typeName: String?) -> Bool {
            switch kind {
            case .type:
                return typeName.map(pattern.matches) ?? false
            case .free:
                return false
            case .leak:
                return matchesAnything(frames)
            case .function:
                return frames.contains(where: matchesFunction)
            case .file:
                return frames.contains { $0.file.map(pattern.matches) ?? false }
            case .module:
                return frames.contains { $0.module.map(pattern.matches) ?? false }
            }
        }

        /// True if this is a `free:` rule and it matches a frame of `frames`, the allocation
        /// stack of a block freed again or freed through a pointer into it.
        public func matches(freedBlockFrames frames: [Report.Frame]) -> Bool {
            kind == .free && matchesAnything(frames)
        }

        /// Function, file or module of any frame (as LeakSanitizer's `leak:`).
        private func matchesAnything(_ frames: [Report.Frame]) -> Bool {
            frames.contains { f in
                matchesFunction(f) || (f.file.map(pattern.matches) ?? false) || (f.module.map(pattern.matches) ?? false)
            }
        }

        private func matchesFunction(_ frame: Report.Frame) -> Bool {
            (frame.function.map(pattern.matches) ?? false) || (frame.shortFunction.map(pattern.matches) ?? false)
        }
    }

    /// The rules, in file order.
    public var rules: [Rule]

    /// A set of rules (none by default).
    public init(rules: [Rule] = []) {
        self.rules = rules
    }

    /// True if there are no rules.
    public var isEmpty: Bool { rules.isEmpty }

    /// Largest suppression file read (a suppression file is a few lines; this is a typo guard).
    public static let maxFileSize = 1 << 20

    /// Parses the text of a suppression file; `source` names it in errors.
    ///
    /// - Throws: ``SuppressionError`` naming the first bad line.
    public static func parse(_ text: String, source: String) throws -> Suppressions {
        var rules: [Rule] = []
        var number = 0
        // "\r\n" is one Character: split on both, so files from Windows editors parse too.
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            number += 1
            let line = trimmed(raw)
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":") else {
                throw SuppressionError(source: source, line: number,
                                       message: "'\(line)' is not KIND:PATTERN (kinds: \(kindList))")
            }
            let kindText = trimmed(line[..<colon])
            let pattern = trimmed(line[line.index(after: colon)...])
            guard let kind = Rule.Kind(rawValue: kindText) else {
                throw SuppressionError(source: source, line: number,
                                       message: "unknown kind '\(kindText)' in '\(line)' (kinds: \(kindList))")
            }
            guard !pattern.isEmpty, pattern != "^", pattern != "$", pattern != "^$" else {
                throw SuppressionError(source: source, line: number, message: "empty pattern in '\(line)'")
            }
            rules.append(Rule(kind: kind, pattern: pattern, source: source, line: number))
        }
        return Suppressions(rules: rules)
    }

    /// Reads and parses the files at `paths`, in order, into one set of rules.
    ///
    /// - Throws: ``SuppressionError`` when a file cannot be read or has a bad line.
    public static func load(paths: [String]) throws -> Suppressions {
        var all = Suppressions()
        for path in paths {
            let data: Data
            do {
                data = try GateFile.read(path, limit: maxFileSize)
            } catch let failure as GateFile.Failure {
                // The failure names the path itself: keep only its reason, so the path shows once.
                throw SuppressionError(source: path, line: nil, message: failure.reason)
            } catch {
                throw SuppressionError(source: path, line: nil, message: "\(error)")
            }
            guard let text = String(validating: data, as: UTF8.self) else {
                throw SuppressionError(source: path, line: nil, message: "not UTF-8 text")
            }
            all.rules += try parse(text, source: path).rules
        }
        return all
    }

    /// Index in ``rules`` of the first rule matching the stack or type, else `nil`.
    public func firstMatch(frames: [Report.Frame], typeName: String?) -> Int? {
        rules.firstIndex { $0.matches(frames: frames, typeName: typeName) }
    }

    /// Index in ``rules`` of the first `free:` rule matching the allocation stack of a block
    /// that a stray free hit (``Report/StrayFree``), else `nil`.
    public func firstMatch(_ stray: Report.StrayFree) -> Int? {
        rules.firstIndex { $0.matches(freedBlockFrames: stray.frames) }
    }

    /// Index in ``rules`` of the first rule matching `finding`, else `nil`.
    public func firstMatch(_ finding: Report.Finding) -> Int? {
        firstMatch(frames: finding.frames, typeName: finding.typeName)
    }

    /// `s` without spaces, tabs and carriage returns around it.
    static func trimmed(_ s: Substring) -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        var t = s.drop(while: blank)
        while let last = t.last, blank(last) { t = t.dropLast() }
        return String(t)
    }

    static var kindList: String { Rule.Kind.allCases.map { $0.rawValue + ":" }.joined(separator: ", ") }
}

/// A suppression file that cannot be read, or a line of it that is not a rule.
public struct SuppressionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file.
    public var source: String
    /// The 1-based line, `nil` when the whole file is the problem.
    public var line: Int?
    /// What is wrong.
    public var message: String

    /// `FILE:LINE: message`.
    public var description: String {
        "\(source)\(line.map { ":\($0)" } ?? ""): \(message)"
    }
}
