// Builds small synthetic traces with TraceWriter for the analysis tests.

import Foundation
import HeapGenAnalysis
import HeapGenTrace
import XCTest

/// Writes a trace to a temporary file; defines stacks and types on first use.
final class TraceBuilder {
    let path: String
    private let writer: TraceWriter
    private var stacks = Set<UInt32>()
    private var types = Set<UInt32>()
    private var time: UInt64 = 1_000
    private var nextAddress: UInt64 = 0x10_0000
    private var finished = false

    init(name: String = #function) throws {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        path = NSTemporaryDirectory() + "heapgen-analysis-\(safe)-\(UUID().uuidString).hgtrace"
        writer = try TraceWriter(path: path, process: ProcessRecord(
            pid: 42, ppid: 1, origin: .root, executable: "/usr/bin/test", arguments: ["test"],
            startUnixNanoseconds: 1_700_000_000_000_000_000))
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    static func typeName(_ id: UInt32) -> String { "App.Type\(id)" }

    private func define(stack: UInt32, type: UInt32) {
        if stack != 0 && stacks.insert(stack).inserted {
            writer.defineStack(id: stack, frames: [0x40_0000 + UInt64(stack) * 0x10, 0x40_1000])
        }
        if type != 0 && types.insert(type).inserted {
            writer.defineType(id: type, metadata: 0x7000_0000 + UInt64(type), name: Self.typeName(type))
        }
    }

    /// A fresh address never used before.
    func freshAddress() -> UInt64 {
        nextAddress += 0x40
        return nextAddress
    }

    @discardableResult
    func alloc(_ address: UInt64? = nil, size: UInt64, stack: UInt32 = 1, type: UInt32 = 0,
               function: AllocationFunction = .malloc) -> UInt64 {
        let address = address ?? freshAddress()
        define(stack: stack, type: type)
        writer.appendAllocation(function, address: address, size: size, stack: stack, type: type)
        return address
    }

    func free(_ address: UInt64, function: FreeFunction = .free) {
        writer.appendFree(function, address: address)
    }

    /// A successful realloc of `old` to `size` bytes at `new` (fresh address if nil).
    @discardableResult
    func realloc(_ old: UInt64, to new: UInt64? = nil, size: UInt64, stack: UInt32) -> UInt64 {
        free(old, function: .realloc)
        return alloc(new, size: size, stack: stack, function: .realloc)
    }

    func undo(_ address: UInt64) {
        writer.appendReallocUndo(address: address)
    }

    func mark(_ label: String = "cycle", origin: MarkOrigin = .program) {
        time += 1_000_000
        writer.mark(label: label, timeNanoseconds: time, origin: origin)
    }

    func settle() {
        mark(AnalysisOptions.settleLabel, origin: .timer)
    }

    func moduleLoad(_ module: ModuleRecord) { writer.moduleLoad(module) }
    func moduleUnload(loadBias: UInt64) { writer.moduleUnload(loadBias: loadBias) }
    func lost(_ count: UInt64) { writer.lost(count: count) }

    func finish(_ end: EndRecord = EndRecord(reason: .exited)) throws {
        guard !finished else { return }
        finished = true
        try writer.finish(end)
    }

    func analyze(_ options: AnalysisOptions = AnalysisOptions()) throws -> Analysis {
        try finish()
        return try GenerationAnalyzer.analyze(path: path, options: options)
    }

    /// All records of the finished trace.
    func records() throws -> [TraceRecord] {
        try finish()
        var reader = try TraceReader(path: path)
        var all: [TraceRecord] = []
        try reader.forEach { all.append($0) }
        return all
    }
}

extension Analysis {
    func findings(_ kind: Finding.Kind) -> [Finding] { findings.filter { $0.kind == kind } }

    func finding(stack: UInt32, type: UInt32 = 0) -> Finding? {
        findings.first { $0.stackID == stack && $0.typeID == type }
    }
}
