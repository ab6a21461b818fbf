// The verdict as SARIF 2.1.0, for code-scanning views.

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HeapGenReport
import HeapGenUnits
import HeapGenSymbolication

/// Renders a ``GateVerdict`` as a SARIF 2.1.0 log (`--sarif PATH`) that GitHub code scanning
/// and other SARIF viewers accept.
///
/// One run of the tool `heapgen` with five rules: `abandoned`, `leaked`, `cache-growth` (the
/// live heap, caches included, grew more than the limit per cycle: `--fail-on growth`),
/// `live-at-exit` and `invalid-free` (a free of an address that was not live, located where
/// the block it hit was allocated: the trace keeps no stack of frees). One result per *failing* finding or criterion, level `error`, located at the
/// user frame's file and line (paths under `sourceRoot`, and relative paths of files that exist there, relative to
/// `%SRCROOT%`; other absolute paths as `file://` URIs, other relative paths with no base), with the allocation stack in `stacks` and the ``BaselineSignature``
/// fingerprint in `partialFingerprints`, so that viewers track a finding across runs. A
/// `cache-growth` result is placed at the fastest-growing site that has a file; a
/// `live-at-exit` one at the largest live site.
public enum SARIFWriter {
    /// The rule ids, in `rules` order.
    public static let ruleIDs = ["abandoned", "leaked", "cache-growth", "live-at-exit", "invalid-free"]

    /// The JSON text, with a final newline. `sourceRoot` is usually the current directory.
    public static func render(_ v: GateVerdict, report: Report, sourceRoot: String?) throws -> String {
        let root = sourceRoot.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        var results: [Result] = []
        for r in v.failingFindings {
            let f = r.finding
            let ruleIndex = f.kind == .leaked ? 1 : 0
            var text = f.isLeakWithoutCycles
                ? "\(SiteText.site(f)): \(SiteText.amount(f))"
                : "\(SiteText.site(f)): \(SiteText.growth(f)), grew in \(f.cyclesWithGrowth) of \(f.cycles) judged cycles; "
                    + "\(ByteSize.exact(f.survivingBytes)) left behind"
            if f.kind == .abandoned { text += " (limit \(ByteSize.exact(v.policy.maxBytesPerCycle)) per cycle)" }
            results.append(Result(
                ruleId: ruleIDs[ruleIndex], ruleIndex: ruleIndex, message: Message(text: text + "."),
                locations: location(f.userFrameValue ?? f.frames.first, root).map { [$0] },
                stacks: [stack(f.frames, from: f.userFrame ?? 0, root)],
                partialFingerprints: ["heapgenSignature/v1": r.signature.fingerprint],
                properties: Properties(typeName: f.typeName, averageBytesPerCycle: f.averageBytesPerCycle,
                                       survivingBytes: f.survivingBytes)))
        }
        if let g = v.growth, g.failed {
            let grower = report.findings.filter { $0.kind != .leaked }
                .sorted { $0.averageBytesPerCycle > $1.averageBytesPerCycle }
                .first { location($0.userFrameValue ?? $0.frames.first, root) != nil }
            var text = "The " + GateMessages.growthPhrase(g) + "."
            if let grower { text += " Fastest-growing site: \(SiteText.site(grower)), \(SiteText.growth(grower))." }
            results.append(Result(ruleId: ruleIDs[2], ruleIndex: 2, message: Message(text: text),
                                  locations: grower.flatMap { location($0.userFrameValue ?? $0.frames.first, root) }.map { [$0] },
                                  stacks: nil, partialFingerprints: nil, properties: nil))
        }
        if let live = v.liveAtExit, live.failed {
            let site = report.liveAtExit.sites.first { s in
                (OwnCode.firstUserFrame(s.frames)).map { location(s.frames[$0], root) != nil } ?? false
            }
            var text = GateMessages.livePhrase(live) + "."
            var loc: Location?
            if let site, let u = OwnCode.firstUserFrame(site.frames) {
                text += " Largest site: \(SiteText.site(typeName: site.typeName, frame: site.frames[u])), \(ByteSize.exact(site.bytes))."
                loc = location(site.frames[u], root)
            }
            results.append(Result(ruleId: ruleIDs[3], ruleIndex: 3, message: Message(text: text),
                                  locations: loc.map { [$0] }, stacks: nil, partialFingerprints: nil, properties: nil))
        }
        if let frees = v.invalidFrees {
            for stray in frees.failingExplained {
                results.append(Result(
                    ruleId: ruleIDs[4], ruleIndex: 4, message: Message(text: SiteText.strayFree(stray) + "; \(stray.function)(\(Report.Frame.formatAddress(stray.address))) at event \(stray.event)."),
                    locations: location(stray.allocationFrame, root).map { [$0] },
                    stacks: stray.frames.isEmpty ? nil : [stack(stray.frames, from: stray.userFrame ?? 0, root, message: "allocation stack of the block")],
                    partialFingerprints: nil, properties: nil))
            }
            if frees.unexplained > 0 {
                results.append(Result(
                    ruleId: ruleIDs[4], ruleIndex: 4,
                    message: Message(text: "\(HumanUnits.plural(frees.unexplained, "more free")) of addresses that were not live, not explained (heapgen info TRACE lists their events)."),
                    locations: nil, stacks: nil, partialFingerprints: nil, properties: nil))
            }
        }
        let log = Log(runs: [Run(
            tool: Tool(driver: Driver(rules: rules)),
            originalUriBaseIds: root.map { ["%SRCROOT%": ArtifactLocation(uri: fileURI($0 + "/"), uriBaseId: nil)] },
            results: results)])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(log), as: UTF8.self) + "\n"
    }

    // MARK: - Pieces

    static let rules: [Rule] = [
        Rule(id: "abandoned", name: "AbandonedMemory",
             shortDescription: Message(text: "Memory that grows in every cycle"),
             fullDescription: Message(text: "An allocation site whose live memory grew in every judged push/pop cycle and was still held at the final snapshot: referenced, never used again (a retain cycle, an observer never removed, a registry that only grows).")),
        Rule(id: "leaked", name: "LeakedMemory",
             shortDescription: Message(text: "Memory unreachable at exit"),
             fullDescription: Message(text: "An allocation site whose blocks live at exit were all unreachable.")),
        Rule(id: "cache-growth", name: "HeapGrowth",
             shortDescription: Message(text: "The live heap grows every cycle"),
             fullDescription: Message(text: "The whole live heap, caches included, grew more than the allowed bytes per judged cycle between the first judged mark and the final snapshot.")),
        Rule(id: "live-at-exit", name: "LiveAtExit",
             shortDescription: Message(text: "Too much memory live at exit"),
             fullDescription: Message(text: "More bytes were still allocated at exit than allowed (after suppressions).")),
        Rule(id: "invalid-free", name: "InvalidFree",
             shortDescription: Message(text: "A free of an address that was not live"),
             fullDescription: Message(text: "free or realloc was called on an address that was not a live block: a block freed before (a double free), a pointer into a block rather than its start, or memory never allocated by malloc. Located where the block was allocated.")),
    ]

    static func location(_ frame: Report.Frame?, _ root: String?) -> Location? {
        guard let frame, let file = frame.file else { return nil }
        return Location(physicalLocation: PhysicalLocation(
            artifactLocation: artifact(file, root),
            region: frame.line.flatMap { $0 >= 1 ? Region(startLine: $0, startColumn: frame.column.flatMap { $0 >= 1 ? $0 : nil }) : nil }),
            message: Message(text: SiteText.functionName(frame)))
    }

    static func stack(_ frames: [Report.Frame], from start: Int, _ root: String?,
                      message: String = "allocation stack") -> Stack {
        let first = min(max(0, start), frames.count)
        let list = frames[first...].prefix(32).map { f in
            StackFrame(location: location(f, root) ?? Location(physicalLocation: nil, message: Message(text: SiteText.frameText(f))))
        }
        return Stack(message: Message(text: message), frames: Array(list))
    }

    static func artifact(_ file: String, _ root: String?) -> ArtifactLocation {
        if let root, file.hasPrefix(root + "/") {
            return ArtifactLocation(uri: percentEncode(String(file.dropFirst(root.count + 1))), uriBaseId: "%SRCROOT%")
        }
        if file.hasPrefix("/") { return ArtifactLocation(uri: fileURI(file), uriBaseId: nil) }
        // A relative path is the source root's only if the file is there: glibc's
        // `./nptl/pthread_create.c` is relative to a build directory on another machine.
        var relative = Substring(file)
        while relative.hasPrefix("./") { relative = relative.dropFirst(2) }
        if let root, !relative.hasPrefix("../"), FileManager.default.fileExists(atPath: root + "/" + relative) {
            return ArtifactLocation(uri: percentEncode(String(relative)), uriBaseId: "%SRCROOT%")
        }
        return ArtifactLocation(uri: percentEncode(file), uriBaseId: nil)
    }

    static func fileURI(_ path: String) -> String { "file://" + percentEncode(path) }

    /// Percent-encodes everything but unreserved characters and `/`.
    static func percentEncode(_ s: String) -> String {
        var out = ""
        for byte in s.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if byte < 0x80 && (c.isLetter || c.isNumber || "-._~/".contains(c)) {
                out.append(c)
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return out
    }

    // MARK: - The SARIF shapes used

    struct Log: Encodable {
        var version = "2.1.0"
        var schema = "https://json.schemastore.org/sarif-2.1.0.json"
        var runs: [Run]
        enum CodingKeys: String, CodingKey { case version, schema = "$schema", runs }
    }
    struct Run: Encodable {
        var tool: Tool
        var originalUriBaseIds: [String: ArtifactLocation]?
        var results: [Result]
    }
    struct Tool: Encodable { var driver: Driver }
    struct Driver: Encodable {
        var name = "heapgen"
        var rules: [Rule]
    }
    struct Rule: Encodable {
        var id: String
        var name: String
        var shortDescription: Message
        var fullDescription: Message
        var defaultConfiguration = Configuration()
    }
    struct Configuration: Encodable { var level = "error" }
    struct Message: Encodable { var text: String }
    struct Result: Encodable {
        var ruleId: String
        var ruleIndex: Int
        var level = "error"
        var message: Message
        var locations: [Location]?
        var stacks: [Stack]?
        var partialFingerprints: [String: String]?
        var properties: Properties?
        init(ruleId: String, ruleIndex: Int, message: Message, locations: [Location]?, stacks: [Stack]?,
             partialFingerprints: [String: String]?, properties: Properties?) {
            self.ruleId = ruleId
            self.ruleIndex = ruleIndex
            self.message = message
            self.locations = locations
            self.stacks = stacks
            self.partialFingerprints = partialFingerprints
            self.properties = properties
        }
    }
    struct Properties: Encodable {
        var typeName: String?
        var averageBytesPerCycle: Int
        var survivingBytes: UInt64
    }
    struct Location: Encodable {
        var physicalLocation: PhysicalLocation?
        var message: Message?
    }
    struct PhysicalLocation: Encodable {
        var artifactLocation: ArtifactLocation
        var region: Region?
    }
    struct ArtifactLocation: Encodable {
        var uri: String
        var uriBaseId: String?
    }
    struct Region: Encodable {
        var startLine: Int
        var startColumn: Int?
    }
    struct Stack: Encodable {
        var message: Message
        var frames: [StackFrame]
    }
    struct StackFrame: Encodable { var location: Location }
}
