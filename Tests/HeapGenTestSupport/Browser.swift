// Headless Chromium for the HTML report tests: the DOM after the page's script ran,
// screenshots, and a pixel check of a screenshot done by Chromium itself (a canvas
// reading a data: URL), so no image library is needed.
//
// Nothing here skips: without Debian's `chromium` the test fails with the command to run.

import Foundation

public enum Browser {
    /// The flags every run uses (root needs --no-sandbox; no GPU in CI).
    public static let flags = ["--headless=new", "--disable-gpu", "--no-sandbox", "--virtual-time-budget=2000",
                        "--no-first-run", "--disable-extensions", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync"]

    public static func chromium() throws -> String {
        try tool("chromium", hint: "apt-get install -y chromium (.ci/run installs it)")
    }

    /// An empty profile directory per run: parallel runs do not share a profile lock.
    private static func profile() throws -> String {
        try TestPaths.freshDirectory("chromium-profile")
    }

    /// The DOM of `file` after its script ran (`--dump-dom`).
    public static func dom(_ file: String) throws -> String {
        let r = try runProcess(try chromium(), flags + ["--user-data-dir=\(try profile())", "--dump-dom",
                                                        URL(fileURLWithPath: file).absoluteString], timeout: 120)
        guard r.status == 0, r.stdoutText.contains("</html>") else {
            throw TestSupportError("chromium --dump-dom \(file) failed:\n\(r.transcript)")
        }
        return r.stdoutText
    }

    /// A PNG screenshot of `file` at `width`×`height`: its path.
    public static func screenshot(_ file: String, width: Int = 1200, height: Int = 1600) throws -> String {
        let png = file + ".png"
        try? FileManager.default.removeItem(atPath: png)
        let r = try runProcess(try chromium(), flags + ["--user-data-dir=\(try profile())", "--hide-scrollbars",
                                                        "--window-size=\(width),\(height)", "--screenshot=\(png)",
                                                        URL(fileURLWithPath: file).absoluteString], timeout: 120)
        guard FileManager.default.fileExists(atPath: png) else {
            throw TestSupportError("chromium --screenshot wrote no \(png):\n\(r.transcript)")
        }
        return png
    }

    /// What a PNG holds: its size, the number of distinct colours (6 bits per channel) and
    /// the share of its most common colour. Chromium decodes it onto a canvas.
    public struct Pixels {
        public var width: Int
        public var height: Int
        public var colors: Int
        public var dominantShare: Double
    }

    public static func pixels(_ png: String) throws -> Pixels {
        guard let data = FileManager.default.contents(atPath: png) else { throw TestSupportError("cannot read \(png)") }
        let page = png + ".check.html"
        let html = """
            <!DOCTYPE html><html><body><img id="shot" src="data:image/png;base64,\(data.base64EncodedString())">
            <script>
            var img=document.getElementById('shot');
            function check(){
              var c=document.createElement('canvas');c.width=img.naturalWidth;c.height=img.naturalHeight;
              var g=c.getContext('2d');g.drawImage(img,0,0);
              var d=g.getImageData(0,0,c.width,c.height).data,counts=new Map(),best=0;
              for(var i=0;i<d.length;i+=4){var k=((d[i]>>2)<<12)|((d[i+1]>>2)<<6)|(d[i+2]>>2);var n=(counts.get(k)||0)+1;counts.set(k,n);if(n>best)best=n;}
              var b=document.body;b.dataset.w=c.width;b.dataset.h=c.height;b.dataset.colors=counts.size;b.dataset.dominant=(best/(c.width*c.height)).toFixed(4);
            }
            if(img.complete)check();else img.onload=check;
            </script></body></html>
            """
        try html.write(toFile: page, atomically: true, encoding: .utf8)
        let dom = try dom(page)
        func attribute(_ name: String) -> String? {
            guard let r = dom.range(of: "data-\(name)=\"") else { return nil }
            return String(dom[r.upperBound...].prefix { $0 != "\"" })
        }
        guard let w = attribute("w").flatMap(Int.init), let h = attribute("h").flatMap(Int.init),
              let colors = attribute("colors").flatMap(Int.init), let dominant = attribute("dominant").flatMap(Double.init) else {
            throw TestSupportError("the pixel check did not run on \(png):\n\(dom.prefix(400))")
        }
        return Pixels(width: w, height: h, colors: colors, dominantShare: dominant)
    }
}

/// Reading the serialized DOM.
public enum DOM {
    /// Every match of `pattern`'s first capture group (or whole match) in `text`.
    public static func captures(_ pattern: String, in text: String, group: Int = 1) -> [String] {
        guard let re = try? NSRegularExpression(pattern: pattern, options: [.dotMatchesLineSeparators]) else { return [] }
        let ns = text as NSString
        return re.matches(in: text, range: NSRange(location: 0, length: ns.length)).map {
            let r = $0.range(at: min(group, $0.numberOfRanges - 1))
            return r.location == NSNotFound ? "" : ns.substring(with: r)
        }
    }

    /// `&amp;` and friends back to characters.
    public static func unescape(_ s: String) -> String {
        s.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// The `<svg id="ID">…</svg>` element.
    public static func element(id: String, tag: String, in text: String) -> String? {
        guard let start = text.range(of: "<\(tag) [^>]*id=\"\(id)\"", options: .regularExpression),
              let end = text.range(of: "</\(tag)>", range: start.upperBound..<text.endIndex) else { return nil }
        return String(text[start.lowerBound..<end.upperBound])
    }

    /// URLs the page would load: `src`/`href`/`url(`/`@import` pointing at a network or
    /// protocol-relative address (an SVG's `xmlns` is a name, not a load).
    public static func externalReferences(_ text: String) -> [String] {
        let loading: Set<String> = ["src", "href", "xlink:href", "action", "poster", "data", "srcset", "formaction"]
        var found: [String] = []
        // Attributes tag by tag: a quoted value is consumed whole, so text inside it is never an attribute.
        for tag in captures(#"(<[a-zA-Z][^>]*>)"#, in: text) {
            let names = captures(#"\s([a-zA-Z:-]+)\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+)"#, in: tag)
            let values = captures(#"\s[a-zA-Z:-]+\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)"#, in: tag)
            for (name, value) in zip(names, values) where loading.contains(name.lowercased()) {
                let v = value.trimmingCharacters(in: CharacterSet(charactersIn: "\"' ")).lowercased()
                if v.hasPrefix("http:") || v.hasPrefix("https:") || v.hasPrefix("//") || v.hasPrefix("ftp:") || v.hasPrefix("ws:") || v.hasPrefix("wss:") {
                    found.append("\(name)=\(value)")
                }
            }
        }
        return found + captures(#"(url\(\s*["']?\s*(?:https?:|//)[^)]*\)|@import\s[^;]*)"#, in: text)
    }
}
