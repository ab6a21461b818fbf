// One symbolicated stack frame: the frame type of reports, diffs, exports and gates.

/// One frame of an allocation stack, innermost first. A return address inside inlined
/// code gives several frames: the inlined functions (``inlined`` true) before the function
/// that physically contains the address, all with the same ``address``.
///
/// Its JSON is the frame of heapgen-report/1 and heapgen-diff/1 (`Report.Frame` is this type).
/// It is also the frame of the symbolizer's answers: what only a lookup knows (staleness,
/// module offset) travels beside the frames in ``SymbolizationResult``.
public struct SymbolicatedFrame: Codable, Sendable, Equatable {
    /// Demangled function name, `nil` when unknown.
    public var function: String?
    /// Short form of ``function`` (Swift: `ProfileViewModel.init(name:)`), `nil` when unknown.
    public var shortFunction: String?
    /// Source file, `nil` without debug info.
    public var file: String?
    /// 1-based line, `nil` when unknown.
    public var line: Int?
    /// 1-based column, `nil` when unknown.
    public var column: Int?
    /// Path of the module (executable or shared object) the address belongs to; `nil` when
    /// the address was in no module the trace recorded (generated code, for instance).
    public var module: String?
    /// The recorded return address (encoded as a `"0x…"` string).
    public var address: UInt64
    /// True for a frame inlined into the next one.
    public var inlined: Bool
    /// ``address`` in ``module``'s own numbering (its ELF virtual address, what
    /// `addr2line -e MODULE OFFSET` takes), the same in every run; `nil` without a module.
    public var moduleOffset: UInt64?

    /// Creates a frame.
    public init(function: String? = nil, shortFunction: String? = nil, file: String? = nil, line: Int? = nil,
                column: Int? = nil, module: String?, address: UInt64, inlined: Bool = false, moduleOffset: UInt64? = nil) {
        self.function = function
        self.shortFunction = shortFunction
        self.file = file
        self.line = line
        self.column = column
        self.module = module
        self.address = address
        self.inlined = inlined
        self.moduleOffset = moduleOffset
    }

    private enum CodingKeys: String, CodingKey {
        case function, shortFunction, file, line, column, module, address, inlined, moduleOffset
    }

    /// Decodes a frame; `address` must be a `"0x…"` string.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        function = try c.decodeIfPresent(String.self, forKey: .function)
        shortFunction = try c.decodeIfPresent(String.self, forKey: .shortFunction)
        file = try c.decodeIfPresent(String.self, forKey: .file)
        line = try c.decodeIfPresent(Int.self, forKey: .line)
        column = try c.decodeIfPresent(Int.self, forKey: .column)
        module = try c.decodeIfPresent(String.self, forKey: .module)
        let text = try c.decode(String.self, forKey: .address)
        guard let value = Self.parseAddress(text) else {
            throw DecodingError.dataCorruptedError(forKey: .address, in: c,
                                                   debugDescription: "'\(text)' is not a 0x… address")
        }
        address = value
        inlined = try c.decode(Bool.self, forKey: .inlined)
        // Absent in reports written before it existed.
        if let offset = try c.decodeIfPresent(String.self, forKey: .moduleOffset) {
            guard let value = Self.parseAddress(offset) else {
                throw DecodingError.dataCorruptedError(forKey: .moduleOffset, in: c,
                                                       debugDescription: "'\(offset)' is not a 0x… offset")
            }
            moduleOffset = value
        }
    }

    /// Encodes every field; unknown ones as `null`, the address as `"0x…"`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(function, forKey: .function)
        try c.encode(shortFunction, forKey: .shortFunction)
        try c.encode(file, forKey: .file)
        try c.encode(line, forKey: .line)
        try c.encode(column, forKey: .column)
        try c.encode(module, forKey: .module)
        try c.encode(Self.formatAddress(address), forKey: .address)
        try c.encode(inlined, forKey: .inlined)
        try c.encode(moduleOffset.map(Self.formatAddress), forKey: .moduleOffset)
    }

    /// `nginx+0x4b90e`: the module's last path component and the offset, for a frame whose
    /// function is unknown (a stripped binary); `nil` without both.
    public var moduleAndOffset: String? {
        guard module != nil, moduleOffset != nil else { return nil }
        return StackSymbolication.unknownName(module: module, offset: moduleOffset, address: address)
    }

    /// `0x` and lowercase hex digits, no padding.
    public static func formatAddress(_ address: UInt64) -> String {
        "0x" + String(address, radix: 16)
    }

    /// The inverse of ``formatAddress(_:)`` (upper-case digits accepted).
    public static func parseAddress(_ text: String) -> UInt64? {
        guard text.hasPrefix("0x") || text.hasPrefix("0X"), text.count > 2 else { return nil }
        return UInt64(text.dropFirst(2), radix: 16)
    }
}
