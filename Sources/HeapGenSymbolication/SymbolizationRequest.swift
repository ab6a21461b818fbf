/// One address to symbolize.
public struct SymbolizationRequest: Sendable, Hashable {
    public var module: Module
    /// Runtime address.
    public var address: UInt64
    /// A return address points after the call instruction, possibly at the next line or even
    /// the next function: it is looked up as `address - 1` (and still reported as `address`).
    /// Pass false for an exact instruction address (a faulting PC, a function's start).
    public var isReturnAddress: Bool

    public init(module: Module, address: UInt64, isReturnAddress: Bool = true) {
        self.module = module
        self.address = address
        self.isReturnAddress = isReturnAddress
    }

    /// `address - loadBias`, the module's virtual address.
    public var moduleOffset: UInt64 { address &- module.loadBias }

    /// The virtual address handed to the symbolizer.
    var lookupAddress: UInt64 {
        let offset = moduleOffset
        return isReturnAddress && offset > 0 ? offset - 1 : offset
    }
}
