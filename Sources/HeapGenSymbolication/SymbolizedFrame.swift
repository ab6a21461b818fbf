// What the symbolizer answered for one address: a lookup record, not a stack frame.

/// One frame of a symbolized address, as ``Symbolizer`` answers one ``SymbolizationRequest``.
/// An address inside inlined code yields several frames: the innermost inlined function first
/// (`inlined == true`), the function that physically contains the address last
/// (`inlined == false`).
///
/// Lookup level: it keeps what the answer needs to be judged (``stale``, ``moduleOffset``).
/// Stacks, reports, diffs and exports hold ``SymbolicatedFrame``s, which
/// ``StackSymbolication`` makes from these.
public struct SymbolizedFrame: Sendable, Equatable, Codable {
    /// Demangled function name (Swift: `Demo.ProfileViewModel.init(name: Swift.String) -> Demo.ProfileViewModel`;
    /// C++: `ns::Foo<int>::bar(int)`), nil when unknown.
    public var function: String?
    /// A shorter form of `function` (Swift: `ProfileViewModel.init(name:)`); equal to `function`
    /// for C and C++; nil when `function` is nil.
    public var shortFunction: String?
    /// Source file as recorded in the debug info (usually absolute), nil when unknown.
    public var file: String?
    /// 1-based line, nil when unknown (the debug info says 0 or there is none).
    public var line: Int?
    /// 1-based column, nil when unknown.
    public var column: Int?
    /// Path of the module the address belongs to (the recorded path, even when a separate
    /// debug file was used).
    public var module: String
    /// The runtime address as given (a return address is reported unchanged, not minus one).
    public var address: UInt64
    /// `address - loadBias`: the module's own virtual address (what `nm` and `objdump` show).
    public var moduleOffset: UInt64
    /// True for frames that were inlined into the next frame of the same address.
    public var inlined: Bool
    /// True when the module file on disk is missing or has a different build ID than the one
    /// recorded (rebuilt since). Names then come only from a matching separate debug file
    /// (`/usr/lib/debug/.build-id/…`), if one was found; otherwise they are nil.
    public var stale: Bool

    public init(function: String? = nil, shortFunction: String? = nil, file: String? = nil,
                line: Int? = nil, column: Int? = nil, module: String, address: UInt64,
                moduleOffset: UInt64, inlined: Bool = false, stale: Bool = false) {
        self.function = function
        self.shortFunction = shortFunction
        self.file = file
        self.line = line
        self.column = column
        self.module = module
        self.address = address
        self.moduleOffset = moduleOffset
        self.inlined = inlined
        self.stale = stale
    }

    /// `function` if known, else `module+0xOFFSET`.
    public var displayName: String {
        if let function { return function }
        return "\(module)+0x\(String(moduleOffset, radix: 16))"
    }

    /// `file:line:column` with the parts that are known, nil without a file.
    public var location: String? {
        guard let file else { return nil }
        guard let line else { return file }
        guard let column else { return "\(file):\(line)" }
        return "\(file):\(line):\(column)"
    }
}
