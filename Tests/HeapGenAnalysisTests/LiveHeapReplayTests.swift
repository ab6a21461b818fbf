// A replay that keeps no frames, and the second pass that reads the needed ones again.

import HeapGenAnalysis
import HeapGenTrace
import XCTest

final class LiveHeapReplayTests: XCTestCase {
    /// Stacks defined among marks and module loads (which move the positions the module map
    /// is asked at): the frames and positions ``TraceContext/withStacks(_:)`` reads again
    /// are the ones a replay that kept every frame has, for the stacks named and no others;
    /// the live counts are the same.
    func testSecondPassGivesTheFramesAReplayKeeps() throws {
        let trace = try TraceBuilder()
        var live: [UInt64] = []
        for stack in UInt32(1)...300 {
            if stack % 50 == 0 {
                trace.moduleLoad(ModuleRecord(loadBias: 0x7f00_0000_0000 + UInt64(stack) << 20, path: "/lib/l\(stack).so",
                                              buildID: [UInt8(stack & 0xff)],
                                              segments: [.init(vaddr: 0, memsz: 0x1000, flags: 5)]))
            }
            let a = trace.alloc(size: UInt64(stack), stack: stack)
            if stack % 3 == 0 { live.append(a) } else { trace.free(a) }
            if stack % 40 == 0 { trace.mark() }
        }
        try trace.finish()

        func replay(keepingFrames: Bool) throws -> (LiveHeapReplay, TraceContext) {
            var reader = try TraceReader(path: trace.path)
            var replay = LiveHeapReplay(keepingFrames: keepingFrames)
            try reader.forEach { replay.consume($0) }
            return (replay, replay.finish(trace: trace.path))
        }
        let (full, kept) = try replay(keepingFrames: true)
        let (lean, dropped) = try replay(keepingFrames: false)
        XCTAssertEqual(kept.stacks.count, 300)
        XCTAssertTrue(dropped.stacks.isEmpty)
        XCTAssertEqual(full.liveObjects, lean.liveObjects)
        XCTAssertEqual(full.liveBytes, lean.liveBytes)
        XCTAssertEqual(full.liveBlockCount, live.count)

        let named: [UInt32] = [3, 50, 51, 150, 299, 300]
        let read = try dropped.withStacks(named)
        XCTAssertEqual(Set(read.stacks.keys), Set(named))
        for id in named {
            XCTAssertEqual(read.stacks[id], kept.stacks[id], "frames of stack \(id)")
            XCTAssertEqual(read.stackPositions[id], kept.stackPositions[id], "position of stack \(id)")
        }
        // A context that kept its frames is handed back as it is.
        XCTAssertEqual(try kept.withStacks(named).stacks.count, 300)

        // One at a time, in trace order, from the file or from the kept frames alike.
        var ids = IdSet()
        for id in named { ids.insert(id) }
        for context in [dropped, kept] {
            var seen: [UInt32] = []
            try context.forEachStack(in: ids) { id, frames, position in
                seen.append(id)
                XCTAssertEqual(frames, kept.stacks[id], "frames of stack \(id)")
                XCTAssertEqual(position, kept.stackPositions[id], "position of stack \(id)")
            }
            XCTAssertEqual(seen, named, "framesKept: \(context.stacks.count > 0)")
        }
    }
}
