// heapgen-diff/1 as one self-contained HTML page.

import HeapGenDiff
import HeapGenReport
import HeapGenUnits

/// Renders a ``HeapDiff`` as a single HTML file: the totals, an icicle of what grew (and
/// one of what shrank), and the sortable table of sites with their stacks. Nothing is
/// loaded from the network; the script only adds sorting and zoom.
public enum HTMLDiff {
    /// Sites written to the table and the icicles (largest changes first).
    public static let maxEntries = 1000

    /// The page for `diff`.
    public static func render(_ diff: HeapDiff) -> String {
        var out = HTMLReport.head(title: "heapgen diff")
        out += "<main><header><h1>heapgen diff</h1>"
        switch diff.mode {
        case .marks:
            out += "<p class=\"sub mono\">\(HTMLText.escape(diff.base.trace)): \(HTMLText.escape(diff.base.point.description)) → \(HTMLText.escape(diff.new.point.description))</p>"
        case .traces:
            out += "<p class=\"sub mono\">\(HTMLText.escape(diff.base.trace)) (\(HTMLText.escape(diff.base.point.description))) → \(HTMLText.escape(diff.new.trace)) (\(HTMLText.escape(diff.new.point.description)))</p>"
        }
        let c = diff.totals.change
        out += "<p class=\"verdict \(c.bytesDelta > 0 ? "bad" : "ok")\">live heap \(HumanUnits.bytes(c.bytesBefore)) → \(HumanUnits.bytes(c.bytesAfter)) (\(HumanUnits.signedBytes(c.bytesDelta)), \(c.objectsDelta >= 0 ? "+" : "")\(c.objectsDelta) objects)</p>"
        var stats: [(String, String)] = [("\(diff.totals.changedEntries)", "sites changed"), ("\(diff.totals.entries)", "sites compared")]
        if let a = c.added, let r = c.removed {
            stats.append((HumanUnits.bytes(a.bytes), "added (\(HumanUnits.count(a.objects)) objects)"))
            stats.append((HumanUnits.bytes(r.bytes), "removed (\(HumanUnits.count(r.objects)) objects)"))
        }
        if diff.mode == .traces {
            stats.append(("\(diff.totals.addedEntries) / \(diff.totals.removedEntries)", "sites only in new / only in base"))
        }
        out += "<div class=\"stats\">" + stats.map { "<div class=\"stat\"><b>\(HTMLText.escape($0.0))</b><span>\(HTMLText.escape($0.1))</span></div>" }.joined() + "</div></header>"

        let entries = Array(diff.entries.filter { !$0.change.isUnchanged }.prefix(maxEntries))
        var grew = Icicle(rootName: "grew"), shrank = Icicle(rootName: "shrank")
        for (i, e) in entries.enumerated() {
            let d = e.change.bytesDelta
            if d > 0 { grew.add(frames: e.frames, bytes: UInt64(d), anchor: "site-\(i + 1)") }
            if d < 0 { shrank.add(frames: e.frames, bytes: UInt64(-d), anchor: "site-\(i + 1)") }
        }
        out += "<section class=\"card\" id=\"flame\"><h2>What grew: \(HumanUnits.bytes(grew.root.value))</h2><p class=\"loc\">Sites by bytes gained, outermost frame at the top. Click a bar to zoom in, the top bar to zoom out.</p>"
        out += "<div class=\"flame\" data-src=\"grew-data\" data-root=\"grew\">\(grew.svg(id: "grew-svg"))<div class=\"flame-info\"></div></div>"
        out += "<script type=\"application/json\" id=\"grew-data\">\(grew.json())</script></section>"
        if shrank.root.value > 0 {
            out += "<section class=\"card\" id=\"flame-shrank\"><h2>What shrank: \(HumanUnits.bytes(shrank.root.value))</h2>"
            out += "<div class=\"flame shrink-box\" data-src=\"shrank-data\" data-root=\"shrank\">\(shrank.svg(id: "shrank-svg").replacing("class=\"icicle\"", with: "class=\"icicle shrink\""))<div class=\"flame-info\"></div></div>"
            out += "<script type=\"application/json\" id=\"shrank-data\">\(shrank.json())</script></section>"
        }

        out += "<section class=\"card\" id=\"sites\"><h2>Sites</h2>"
        if entries.isEmpty {
            out += "<p class=\"empty\">No site changed (\(HumanUnits.plural(diff.entries.count, "site")) compared).</p>"
        } else {
            out += "<div class=\"scroll\"><table class=\"sortable\"><thead><tr><th>Δ bytes</th><th>Δ objects</th><th>bytes before</th><th>bytes after</th><th class=\"l\">status</th><th class=\"l\">site</th><th class=\"l\">type</th></tr></thead><tbody>"
            for (i, e) in entries.enumerated() {
                let id = "site-\(i + 1)"
                let x = e.change
                let user = e.userFrame.flatMap { e.frames.indices.contains($0) ? $0 : nil } ?? (e.frames.isEmpty ? nil : 0)
                let frame = user.map { e.frames[$0] }
                let name = frame.map(HTMLText.frameName) ?? "?"
                let loc = frame.flatMap(HTMLText.location).map { " <span class=\"loc\">\(HTMLText.escape($0))</span>" } ?? ""
                out += "<tr id=\"\(id)\"><td data-v=\"\(x.bytesDelta)\" class=\"\(x.bytesDelta > 0 ? "pos" : (x.bytesDelta < 0 ? "neg" : ""))\">\(HumanUnits.signedBytes(x.bytesDelta))</td>"
                out += "<td data-v=\"\(x.objectsDelta)\">\(x.objectsDelta >= 0 ? "+" : "")\(x.objectsDelta)</td>"
                out += "<td data-v=\"\(x.bytesBefore)\">\(HumanUnits.bytes(x.bytesBefore))</td><td data-v=\"\(x.bytesAfter)\">\(HumanUnits.bytes(x.bytesAfter))</td>"
                out += "<td class=\"l status-\(e.status.rawValue)\">\(e.status.rawValue)</td>"
                out += "<td class=\"l mono\"><details><summary>\(HTMLText.escape(name))\(loc)</summary>\(HTMLReport.stack(e.frames, user: user, id: id))</details></td>"
                out += "<td class=\"l mono\">\(HTMLText.escape(e.typeName ?? ""))</td></tr>"
            }
            out += "</tbody></table></div>"
            let more = diff.entries.filter { !$0.change.isUnchanged }.count - entries.count
            if more > 0 { out += "<p class=\"empty\">\(more) more changed sites are not shown (heapgen diff --format json lists them all).</p>" }
        }
        out += "</section>"
        if !diff.notes.isEmpty {
            out += "<section class=\"card\" id=\"notes\"><h2>Notes</h2><ul class=\"notes\">" + diff.notes.map { "<li>\(HTMLText.escape($0))</li>" }.joined() + "</ul></section>"
        }
        out += "<footer>heapgen-diff/1 · this page is self-contained: it loads nothing from the network.</footer></main>"
        return out + HTMLReport.tail()
    }
}
