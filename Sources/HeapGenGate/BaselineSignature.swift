// What identifies a finding from one run to the next.

import HeapGenReport

/// A finding's identity across runs, builds and machines: its kind, its Swift type and up to
/// ``maxFrames`` frames starting at its user frame (none outside the executor or queue entry
/// that ran the job: ``SourceSites/jobFrames(_:)``), each as function, file *base name* and
/// line. Never an address (those move with ASLR and every build), never a directory (checkouts
/// differ between machines).
///
/// Lines move when code above them changes; ``Baseline`` therefore also matches findings whose
/// signatures agree on everything but lines (``withoutLines``).
public struct BaselineSignature: Codable, Hashable, Sendable {
    /// One frame of a signature.
    public struct Frame: Codable, Hashable, Sendable {
        /// The demangled function, `nil` when unknown.
        public var function: String?
        /// The source file's last path component, `nil` without debug info.
        public var file: String?
        /// The line, `nil` when unknown.
        public var line: Int?
        /// The module's last path component, only when the function is unknown.
        public var module: String?

        /// Creates a frame.
        public init(function: String?, file: String?, line: Int?, module: String? = nil) {
            self.function = function
            self.file = file
            self.line = line
            self.module = module
        }

        private enum CodingKeys: String, CodingKey { case function, file, line, module }

        /// Writes `function`, `file` and `line` (as `null` when unknown); `module` only when set.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(function, forKey: .function)
            try c.encode(file, forKey: .file)
            try c.encode(line, forKey: .line)
            try c.encodeIfPresent(module, forKey: .module)
        }
    }

    /// How many frames from the user frame a signature keeps.
    public static let maxFrames = 6

    /// `abandoned` or `leaked` (any ``Report/Finding/Kind`` raw value).
    public var kind: String
    /// The Swift type, `nil` for plain malloc.
    public var typeName: String?
    /// Up to ``maxFrames`` frames from the user frame (from the first frame without one).
    public var frames: [Frame]

    /// Creates a signature from its parts.
    public init(kind: String, typeName: String?, frames: [Frame]) {
        self.kind = kind
        self.typeName = typeName
        self.frames = frames
    }

    /// The signature of `finding`.
    public init(_ finding: Report.Finding) {
        kind = finding.kind.rawValue
        typeName = finding.typeName
        let start = min(finding.userFrame ?? 0, finding.frames.count)
        frames = SourceSites.jobFrames(finding.frames[start...]).prefix(Self.maxFrames).map { f in
            let function = f.function ?? f.shortFunction
            return Frame(function: function, file: f.file.map(SiteText.baseName), line: f.line,
                         module: function == nil ? f.module.map(SiteText.baseName) : nil)
        }
    }

    /// The same signature with every line removed.
    public var withoutLines: BaselineSignature {
        var copy = self
        for i in copy.frames.indices { copy.frames[i].line = nil }
        return copy
    }

    /// One line that names every part: `kind|type|function@file:line|…`.
    public var canonicalText: String {
        ([kind, typeName ?? "-"] + frames.map { f in
            "\(f.function ?? "?")@\(f.file ?? f.module ?? "?"):\(f.line.map(String.init) ?? "?")"
        }).joined(separator: "|")
    }

    /// A stable 64-bit FNV-1a hash of ``canonicalText``, as 16 hex digits (SARIF fingerprints).
    public var fingerprint: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in canonicalText.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
