// Escaping and number formatting shared by the HTML renderers.

import HeapGenJSON
import HeapGenReport
import HeapGenUnits

/// Text helpers for building HTML by hand: escaping, compact numbers, frame names.
enum HTMLText {
    /// `text` with `& < > " '` escaped, safe in element content and quoted attributes (the
    /// one escaper's HTML dialect: `'` as `&#39;`, every other character kept).
    static func escape(_ text: String) -> String {
        MarkupEscaper.escape(text, for: .html)
    }

    /// A coordinate with at most one decimal (SVG stays small).
    static func num(_ v: Double) -> String {
        let r = (v * 10).rounded() / 10
        if r == r.rounded() { return String(Int(r)) }
        return String(r)
    }

    /// The name a frame is shown under: short Swift name, else the function, else
    /// `module+0xOFFSET`, else the address.
    static func frameName(_ frame: Report.Frame) -> String {
        frame.shortFunction ?? frame.function ?? frame.moduleAndOffset ?? Report.Frame.formatAddress(frame.address)
    }

    /// `file.c:12` (file name only), or nil without a file.
    static func location(_ frame: Report.Frame) -> String? {
        guard let file = frame.file else { return nil }
        let name = file.split(separator: "/").last.map(String.init) ?? file
        return frame.line.map { "\(name):\($0)" } ?? name
    }

    /// The last path component of a module, or `?`.
    static func moduleName(_ path: String?) -> String {
        guard let path else { return "?" }
        return path.split(separator: "/").last.map(String.init) ?? path
    }

    /// Characters safe inside a `<script type="application/json">` element: `<` escaped so
    /// no `</script>` can end it early.
    static func scriptSafe(_ json: String) -> String {
        json.replacing("<", with: "\\u003c")
    }

    /// A JSON string literal (the one quoter, HeapGenJSON's).
    static func jsonString(_ s: String) -> String {
        JSONWriter.quote(s)
    }
}
