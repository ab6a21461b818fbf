// The one escaper of text put into XML and HTML (the HTML pages, the JUnit file), so their
// escaping rules are written once; here because every module that writes markup may import it.

/// Escapes text for element content and quoted attribute values of XML and HTML.
///
/// `& < > "` and `'` are always escaped, so the result is safe between tags and inside
/// either kind of quotes. The two dialects differ only where their readers do:
///
/// | | `'` | characters XML 1.0 cannot carry (C0 controls but tab, LF, CR; U+FFFE, U+FFFF) |
/// | --- | --- | --- |
/// | ``Dialect/html`` | `&#39;` (HTML 4 has no `&apos;`) | kept: browsers read them |
/// | ``Dialect/xml`` | `&apos;` | `?`: a JUnit file holding one would not parse at all |
public enum MarkupEscaper {
    /// Who reads the text.
    public enum Dialect: Sendable {
        /// HTML pages.
        case html
        /// XML 1.0 documents (JUnit).
        case xml
    }

    /// `text` escaped for `dialect`.
    public static func escape(_ text: String, for dialect: Dialect) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += dialect == .html ? "&#39;" : "&apos;"
            default:
                if dialect == .xml && !isXML10Character(scalar) {
                    out += "?"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// XML 1.0's `Char` production: tab, LF, CR and U+0020 upwards, without U+FFFE and
    /// U+FFFF (surrogates are no Unicode scalars, so never seen here).
    static func isXML10Character(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        return v == 0x9 || v == 0xA || v == 0xD || (v >= 0x20 && v <= 0xD7FF)
            || (v >= 0xE000 && v <= 0xFFFD) || v >= 0x10000
    }
}
