// Module loads and unloads, kept in trace order.

/// A `moduleLoad` or `moduleUnload` record and where it lies in the trace, so that
/// a frame address can be mapped to the module mapped at that time
/// (see ``ModuleTimeline``).
public struct ModuleEvent: Codable, Sendable, Equatable {
    /// Load or unload.
    public enum Kind: String, Codable, Sendable {
        case load
        case unload
    }

    /// Load or unload.
    public var kind: Kind
    /// The module's load bias (the key an unload refers to).
    public var loadBias: UInt64
    /// The loaded module; `nil` for an unload.
    public var module: ModuleRecord?
    /// Position of the record in the trace (0 = the process record; every record counts).
    public var recordIndex: UInt64
    /// Generation in which the record lies.
    public var generation: Int

    /// Creates a module event.
    public init(kind: Kind, loadBias: UInt64, module: ModuleRecord?, recordIndex: UInt64, generation: Int) {
        self.kind = kind
        self.loadBias = loadBias
        self.module = module
        self.recordIndex = recordIndex
        self.generation = generation
    }
}
