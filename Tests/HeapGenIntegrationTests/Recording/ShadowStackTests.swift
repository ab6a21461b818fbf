// The unwinder's per-thread shadow of the last stack (CShim/src/unwind.c):
// a real program whose allocations reuse stack frames in every way that
// could fool it records the same stacks with the shadow on and off.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class ShadowStackTests: XCTestCase {
    /// shadowstack.c: varying depths, one frame under two callers, longjmp, a
    /// coroutine, a signal handler, dlclose/dlopen and threads. Stacks are
    /// compared as (module, offset) frames per allocation size, as multisets
    /// (thread order differs between runs; module-relative offsets survive ASLR).
    func testStacksAreTheSameWithAndWithoutTheShadow() throws {
        let exe = try Fixture.build("shadowstack.c", flags: ["-O2", "-fomit-frame-pointer", "-pthread"])
        let lib = try Fixture.build("dllib.c", flags: ["-O2"], shared: true)
        let on = try stacks(exe, lib, environment: nil)
        let off = try stacks(exe, lib, environment: ["HEAPGEN_UNWIND_SHADOW": "0"])
        XCTAssertEqual(on.values.reduce(0) { $0 + $1.count }, off.values.reduce(0) { $0 + $1.count },
                       "the same allocations")
        // 5 threads x 20,000 x 2 + 5 x 40 x 2 (longjmp) + 20 x 3 (signal) + 100 (coroutine) + 15 (dlopen'd)
        XCTAssertGreaterThanOrEqual(on.values.reduce(0) { $0 + $1.count }, 200_000 + 400 + 60 + 100 + 15)
        for size in Set(on.keys).union(off.keys).sorted() {
            let a = (on[size] ?? []).sorted(), b = (off[size] ?? []).sorted()
            XCTAssertEqual(a.count, b.count, "allocations of \(size) bytes")
            XCTAssertTrue(a == b, "stacks of the \(size)-byte allocations differ with the shadow on: "
                          + "\(Array(Set(a).subtracting(b).prefix(2))) vs \(Array(Set(b).subtracting(a).prefix(2)))")
        }
        // Every site's stack reaches main or a thread start (none cut short by the shadow).
        for size: UInt64 in [1001, 1006, 2000, 2001, 3001, 3002, 4001, 4002, 5001, 5004, 1234] {
            XCTAssertNotNil(on[size], "allocations of \(size) bytes recorded")
        }
    }

    /// Allocation size → one string per allocation: its frames as module path + offset.
    private func stacks(_ exe: String, _ lib: String, environment: [String: String]?) throws -> [UInt64: [String]] {
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment ?? [:] { env[k] = v }
        let rec = try HeapGenCLI.recording(exe, [lib], flags: ["--quiet"], environment: env)
        XCTAssertStatus(rec.result, 0)
        var stacks: [UInt32: [UInt64]] = [:]
        var modules: [ModuleRecord] = []
        var out: [UInt64: [String]] = [:]
        for r in try HeapGenCLI.records(rec.trace) {
            switch r {
            case let .stack(id, frames): stacks[id] = frames
            case let .moduleLoad(m): modules.append(m)
            case let .allocation(_, _, size, stack, _):
                let frames = (stacks[stack] ?? []).map { pc -> String in
                    guard let m = LLVMSymbolizer.module(containing: pc, in: modules) else { return "?+\(pc)" }
                    return "\((m.path as NSString).lastPathComponent)+\(pc &- m.loadBias)"
                }
                out[size, default: []].append(frames.joined(separator: " "))
            default: break
            }
        }
        return out
    }
}
