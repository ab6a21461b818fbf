// A trace file written by a test with HeapGenTrace's writer: known allocations, frees and
// marks, for the diff and export unit tests.

import HeapGenTrace

/// A trace file written by the test; stacks have no module (frames are named by address).
public final class SyntheticTrace {
    public let path: String
    public let writer: TraceWriter
    private var time: UInt64 = 1

    public init() throws {
        path = try TestPaths.freshDirectory("synthetic") + "/s.trace"
        writer = try TraceWriter(path: path, process: ProcessRecord(
            pid: 7, ppid: 1, origin: .root, executable: "/bin/none", arguments: ["none"], startUnixNanoseconds: 1))
        writer.defineStack(id: 1, frames: [0x1000, 0x2000])
        writer.defineStack(id: 2, frames: [0x1100, 0x2000])
        writer.defineType(id: 1, metadata: 0x9000, name: "App.Model")
    }

    public func alloc(_ address: UInt64, _ size: UInt64, stack: UInt32 = 1, type: UInt32 = 0, _ f: AllocationFunction = .malloc) {
        writer.appendAllocation(f, address: address, size: size, stack: stack, type: type)
    }
    public func free(_ address: UInt64, _ f: FreeFunction = .free) { writer.appendFree(f, address: address) }
    public func mark(_ label: String) {
        writer.mark(label: label, timeNanoseconds: time, origin: .program)
        time += 1
    }
    public func finish() throws -> String {
        try writer.finish(EndRecord(reason: .exited))
        return path
    }
}
