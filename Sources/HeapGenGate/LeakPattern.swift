// LeakSanitizer's suppression templates.

/// A suppression template with LeakSanitizer's syntax: a substring to look for, with `*`
/// matching any run of characters (including none), `^` at the start anchoring the
/// template to the start of the subject and `$` at the end anchoring it to the end.
///
/// `leak_session` matches `leak_session` and `my_leak_session_2`; `^leak_` matches names
/// that start so; `.c$` file names that end so; `Screen*init` matches
/// `ProfileScreen.init(user:)`. An empty subject never matches (LSan's rule); a `^` or `$`
/// anywhere else is an ordinary character.
///
/// LSan's own matcher searches greedily and can miss a match that exists (`a*b$` against
/// `axbxb`); this one finds every match, and agrees with LSan whenever LSan finds one.
public struct LeakPattern: Sendable, Equatable, CustomStringConvertible {
    /// The template as written.
    public let text: String
    let anchoredStart: Bool
    let anchoredEnd: Bool
    /// The literal pieces between the `*`s (at least one, possibly empty).
    let pieces: [[UInt8]]

    /// Compiles `text`.
    public init(_ text: String) {
        self.text = text
        var body = Substring(text)
        anchoredStart = body.hasPrefix("^")
        if anchoredStart { body = body.dropFirst() }
        anchoredEnd = body.hasSuffix("$")
        if anchoredEnd { body = body.dropLast() }
        pieces = body.split(separator: "*", omittingEmptySubsequences: false).map { Array($0.utf8) }
    }

    public var description: String { text }

    /// True if the template matches `subject`.
    public func matches(_ subject: String) -> Bool {
        let s = Array(subject.utf8)
        guard !s.isEmpty else { return false }
        var position = 0
        var rest = pieces[...]
        if anchoredStart {
            let first = rest.removeFirst()
            guard s.starts(with: first) else { return false }
            position = first.count
            if rest.isEmpty { return !anchoredEnd || position == s.count }
        }
        // With the end anchored, the last piece must be a suffix that does not overlap what
        // the earlier pieces used; leftmost matches for those leave it the most room.
        var last: [UInt8]?
        if anchoredEnd { last = rest.removeLast() }
        for piece in rest {
            guard let found = Self.find(piece, in: s, from: position) else { return false }
            position = found + piece.count
        }
        if let last {
            return s.count - position >= last.count && s.suffix(last.count).elementsEqual(last)
        }
        return true
    }

    /// Index of the first occurrence of `needle` in `haystack` at or after `start`.
    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        if needle.isEmpty { return start <= haystack.count ? start : nil }
        guard haystack.count >= needle.count else { return nil }
        var i = start
        while i + needle.count <= haystack.count {
            if haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
