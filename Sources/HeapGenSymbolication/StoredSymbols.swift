// The symbols a trace stored when it was recorded, as symbolizer answers.

import HeapGenTrace

/// The symbols a trace stored when it was recorded (its `symbols` records): per module (path,
/// build ID, load bias) and recorded return address, the frames the address symbolicated to.
///
/// ``Symbolizer/symbolize(_:stored:)`` answers from it before it looks at any file, so a trace
/// names its frames the same after its binaries were rebuilt, removed, or on another machine.
///
/// ```swift
/// let stored = StoredSymbols(tracePath: path)      // empty for a trace without symbols
/// let answers = symbolizer.symbolize(requests, stored: stored)
/// ```
public struct StoredSymbols: Sendable {
    private struct Key: Hashable {
        var module: Module
        var offset: UInt64
    }
    private var table: [Key: [StoredFrame]] = [:]

    /// Addresses held.
    public var count: Int { table.count }
    public var isEmpty: Bool { table.isEmpty }

    /// The symbols of `records` (a trace's `symbols` records).
    public init(_ records: [SymbolsRecord] = []) {
        for record in records {
            let module = Module(path: record.path, buildID: record.buildID, loadBias: record.loadBias)
            for entry in record.entries where !entry.frames.isEmpty {
                table[Key(module: module, offset: entry.offset)] = entry.frames
            }
        }
    }

    /// The symbols stored in the trace at `path`; empty when it has none or they cannot be
    /// read (symbolication then falls back to the module files, as for older traces).
    public init(tracePath path: String) {
        guard let reader = try? TraceReader(path: path), let records = try? reader.storedSymbols() else {
            self.init()
            return
        }
        self.init(records)
    }

    /// The stored answer for `request` (its frames innermost inlined frame first), nil when not
    /// stored. Never stale: only what the files answered for this very build was stored.
    public func answer(for request: SymbolizationRequest) -> SymbolizationResult? {
        guard let stored = table[Key(module: request.module, offset: request.moduleOffset)] else { return nil }
        let frames = stored.enumerated().map { i, f in
            SymbolicatedFrame(function: f.function, shortFunction: f.shortFunction ?? f.function, file: f.file,
                              line: f.line, column: f.column, module: request.module.path, address: request.address,
                              inlined: i < stored.count - 1, moduleOffset: request.moduleOffset)
        }
        return SymbolizationResult(frames: frames, moduleOffset: request.moduleOffset, stale: false)
    }
}
