// One-line descriptions of findings for verdicts, JUnit, Markdown and SARIF.

import HeapGenReport
import HeapGenUnits

/// How the gate names a finding in one line: `Demo.ProfileViewModel at
/// ProfileScreen.init(user:) (main.swift:47)`, or `blocks at leak_session (sites.c:32)` for
/// plain malloc.
public enum SiteText {
    /// The type (or `blocks`), then `at` and the user frame; for a finding of a scope, then
    /// `in` and the scope (`in expectNoGrowth testLeaky() (LeakTests.swift:31)`), so that a
    /// gate over a test binary names the test.
    public static func site(_ finding: Report.Finding) -> String {
        let text = site(typeName: finding.typeName, frame: finding.userFrameValue ?? finding.frames.first)
        return finding.scope.map { text + " in " + $0 } ?? text
    }

    /// The same for any type and frame.
    public static func site(typeName: String?, frame: Report.Frame?) -> String {
        let what = typeName ?? "blocks"
        guard let frame else { return what + " from an unknown site" }
        return what + " at " + frameText(frame)
    }

    /// `function (file:line)`, else `function (module)`, else `0xADDR (module)`; the file and
    /// module by their last path component.
    public static func frameText(_ frame: Report.Frame) -> String {
        functionName(frame) + place(frame, path: baseName)
    }

    /// ` (file:line)`, else ` (module)`, else nothing: where a frame is, each path as `path`
    /// shows it (the one rule of one-line frames, whole paths or base names, plain or in Markdown).
    static func place(_ frame: Report.Frame, path: (String) -> String) -> String {
        if let file = frame.file { return " (\(path(file))\(frame.line.map { ":\($0)" } ?? ""))" }
        if let module = frame.module { return " (\(path(module)))" }
        return ""
    }

    /// The short function name, else the full one, else `module+0xOFFSET`, else the address.
    public static func functionName(_ frame: Report.Frame) -> String {
        var name = frame.shortFunction ?? frame.function ?? frame.moduleAndOffset ?? Report.Frame.formatAddress(frame.address)
        if name.hasSuffix(" in ") { name += "top-level code" }
        return name
    }

    /// `file:line` of the user frame (full path), if it has a file.
    public static func location(_ finding: Report.Finding) -> (file: String, line: Int?)? {
        guard let frame = finding.userFrameValue ?? finding.frames.first, let file = frame.file else { return nil }
        return (file, frame.line)
    }

    /// The stack from the user frame, one `at …` line per frame, at most `limit` frames.
    public static func stack(_ finding: Report.Finding, limit: Int = 12) -> [String] {
        guard !finding.frames.isEmpty else { return ["(no stack)"] }
        let start = min(finding.userFrame ?? 0, finding.frames.count - 1)
        return finding.frames[start...].prefix(limit).map { frame in
            "at " + functionName(frame) + place(frame) { $0 }
        }
    }

    /// What a finding amounts to in one phrase: its growth (`+1 object / +192 B per cycle`),
    /// or, for a leak found at exit (no cycles), what leaked: `24 B in 1 block leaked`.
    public static func amount(_ finding: Report.Finding) -> String {
        guard finding.kind == .leaked, let bytes = finding.leakedBytes else { return growth(finding) }
        return "\(ByteSize.exact(Int(clamping: bytes))) in \(HumanUnits.plural(finding.leakedBlocks ?? 0, "block")) leaked"
    }

    /// `+1 object / +192 B per cycle`.
    public static func growth(_ finding: Report.Finding) -> String {
        let objects = finding.averageObjectsPerCycle
        let rounded = (objects * 10).rounded() / 10
        let text = rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
        let unit = abs(rounded) == 1 ? "object" : "objects"
        return "\(rounded > 0 ? "+" : "")\(text) \(unit) / \(ByteSize.signed(finding.averageBytesPerCycle)) per cycle"
    }

    /// A free of an address that was not live, in one line: `double free of a 16 B block
    /// allocated at main (strayfree.c:25)`, `free of a pointer 16 bytes into a 64 B block
    /// allocated at …`, `free(0x…) of memory heapgen never saw allocated`.
    public static func strayFree(_ s: Report.StrayFree) -> String {
        let block = (s.blockSize.map { HumanUnits.bytes($0) + " " } ?? "") + (s.typeName ?? "block")
        let allocated = s.allocationFrame.map { " allocated at " + frameText($0) } ?? ""
        let call = s.function == "free" ? "" : " (\(s.function))"
        switch s.cause {
        case .doubleFree:
            return "double free\(call) of a \(block)\(allocated)"
        case .interiorPointer:
            let offset = s.address &- (s.blockAddress ?? s.address)
            return "free\(call) of a pointer \(HumanUnits.plural(offset, "byte")) into a \(block)\(allocated)"
        case .notAllocated:
            return "\(s.function)(\(Report.Frame.formatAddress(s.address))) of memory heapgen never saw allocated"
        }
    }

    static func baseName(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}
