import Foundation
import HeapGen
import HeapGenControlProtocol

/// How much per-cycle growth ``HeapGen/expectNoGrowth(cycles:warmUp:tolerance:function:fileID:file:line:column:_:)``
/// lets pass.
///
/// A site *grows* in a cycle when its live objects or bytes at the cycle's closing
/// mark exceed those at its opening mark; with thresholds, the rise must reach them.
/// A site fails the expectation when it grew in every judged cycle but
/// ``misses``, and in more than half of them ("a staircase"), and is still above its level
/// at the end.
public struct GrowthTolerance: Sendable, Equatable {
    /// A cycle counts as growth only if the site's live bytes rose by at least this much (0: any rise).
    public var bytesPerCycle: Int
    /// A cycle counts as growth only if the site's live objects rose by at least this much (0: any rise).
    public var objectsPerCycle: Int
    /// Judged cycles in which a failing site may show no growth (default 1): a site that
    /// grows in all but one cycle (a GC-like batch release, a resize) still fails.
    public var misses: Int

    public init(bytesPerCycle: Int = 0, objectsPerCycle: Int = 0, misses: Int = 1) {
        self.bytesPerCycle = max(0, bytesPerCycle)
        self.objectsPerCycle = max(0, objectsPerCycle)
        self.misses = max(0, misses)
    }

    /// Any growth in every judged cycle but one fails.
    public static let none = GrowthTolerance()
    /// Growth below `bytes` per cycle is tolerated.
    public static func bytes(_ bytes: Int) -> GrowthTolerance { GrowthTolerance(bytesPerCycle: bytes) }
    /// Growth below `objects` objects per cycle is tolerated.
    public static func objects(_ objects: Int) -> GrowthTolerance { GrowthTolerance(objectsPerCycle: objects) }
}

extension HeapGen {
    /// Runs `body` `cycles` times, marking a generation around each run, and fails the
    /// test where it is called when some allocation site grew in every cycle after the
    /// warm-up: memory the body leaves behind (a retain cycle, an observer never removed,
    /// a registry that only grows).
    ///
    /// ```swift
    /// func testProfileScreenDoesNotLeak() throws {
    ///     try HeapGen.expectNoGrowth(cycles: 10, warmUp: 2) {
    ///         let screen = ProfileScreen()
    ///         screen.show()
    ///         screen.close()
    ///     }
    /// }
    /// ```
    ///
    /// The failure lists every growing site: its Swift type (or "malloc" for plain
    /// blocks), `+N objects / +B bytes per cycle`, the per-cycle staircase, and five
    /// frames of its allocation stack from the first frame in your code, with file:line.
    /// Caches that fill in the warm-up and then stay flat pass.
    ///
    /// Needs the test binary to run under heapgen
    /// (`heapgen run -- .build/debug/<Package>PackageTests.xctest`): the verdict comes from
    /// the collector, asked through the control channel after the last cycle. Without
    /// heapgen the test is **skipped** with a message saying so (XCTSkip under XCTest,
    /// `Test.cancel` under Swift Testing), never passed.
    ///
    /// Everything the process allocates during the cycles counts, on every thread: run
    /// such tests serially (Swift Testing: `.serialized`), and keep other threads quiet.
    /// Calls are serialised within the process.
    ///
    /// - Parameters:
    ///   - cycles: runs of `body`; at least `warmUp + 2`.
    ///   - warmUp: leading runs whose growth is ignored (caches, lazy singletons fill there).
    ///   - tolerance: growth that does not count (see ``GrowthTolerance``).
    ///   - body: one push/pop cycle. An error it throws ends the check and is rethrown.
    /// - Throws: `XCTSkip` (XCTest) or a cancellation (Swift Testing) when not running under
    ///   heapgen; whatever `body` throws.
    public static func expectNoGrowth(cycles: Int = 10, warmUp: Int = 1, tolerance: GrowthTolerance = .none,
                                      function: String = #function,
                                      fileID: String = #fileID, file: StaticString = #filePath,
                                      line: UInt = #line, column: UInt = #column,
                                      _ body: () throws -> Void) throws {
        let site = CallSite(fileID: fileID, file: file, line: line, column: column)
        let warmUp = max(0, warmUp)
        guard cycles - warmUp >= 2 else {
            TestOutcome.fail("heapgen: expectNoGrowth needs at least 2 cycles after the warm-up to judge growth (cycles: \(cycles), warmUp: \(warmUp))", at: site)
            return
        }
        try TestOutcome.requireHeapgen("expectNoGrowth", at: site)

        ControlClient.lock.lock()
        defer { ControlClient.lock.unlock() }

        // Everything a cycle needs is made before the first mark: labels, the request.
        // The labels make the marks one scope that names the test (`expectNoGrowth
        // testLeaky() (LeakTests.swift:31) cycle 3/10`): a gate over the whole test binary
        // judges each call on its own cycles.
        let labels = HeapGen.scopeLabels("expectNoGrowth",
                                         name: HeapGen.scopeName(function: function, fileID: fileID, line: line),
                                         cycles: cycles, warmUp: warmUp)
        let begin = ControlRequestText.begin(
            label: "\(fileID):\(line)",
            options: GrowthOptions(warmUp: warmUp, toleratedMisses: tolerance.misses,
                                   minBytesPerCycle: tolerance.bytesPerCycle, minObjectsPerCycle: tolerance.objectsPerCycle))
        do {
            _ = try ControlClient.ask(ControlRequestText.simple(.track), as: ControlStatusAnswer.self)
            _ = try ControlClient.ask(begin, as: ControlStatusAnswer.self)
        } catch ControlError.notTraced {
            try TestOutcome.skip("heapgen: expectNoGrowth needs the program to run under heapgen: \(TestOutcome.heapgenCommand)", at: site)
        } catch {
            TestOutcome.fail("heapgen: expectNoGrowth could not start: \(error)", at: site)
            return
        }

        var finished = false
        defer {
            if !finished { _ = ControlClient.send(ControlRequestText.simple(.end)) }
        }
        // Native strings: mark() hands their bytes to the shim without copying.
        HeapGen.mark(labels[0])
        for i in 1...cycles {
            try body()
            HeapGen.mark(labels[i])
        }
        finished = true

        let answer: ControlGrowthAnswer
        do {
            answer = try ControlClient.ask(ControlRequestText.simple(.growth), as: ControlGrowthAnswer.self)
        } catch {
            TestOutcome.fail("heapgen: expectNoGrowth got no verdict: \(error)", at: site)
            return
        }
        let failing = answer.findings.filter { $0.kind == "abandoned" || $0.kind == "leaked" }
        guard !failing.isEmpty else { return }
        TestOutcome.fail(GrowthMessage.render(failing, answer: answer), at: site)
    }
}

/// The failure text of expectNoGrowth.
enum GrowthMessage {
    static func render(_ findings: [ControlFinding], answer: ControlGrowthAnswer) -> String {
        let sites = findings.count == 1 ? "1 site" : "\(findings.count) sites"
        // Words that match the numbers: "every judged cycle" only when no site missed one.
        let misses = findings.map { max(0, $0.cycles - $0.cyclesWithGrowth) }.max() ?? 0
        let claim = misses == 0 ? "grew in every judged cycle" : "grew in every judged cycle, missing at most \(misses)"
        var out = "heapgen: \(sites) \(claim) (\(answer.cycles) cycles, \(answer.warmUp) warm-up, \(answer.judgedCycles) judged):"
        for f in findings {
            let judgedObjects = f.objectsPerCycle.suffix(max(0, f.cycles))
            let judgedBytes = f.bytesPerCycle.suffix(max(0, f.cycles))
            let objects = judgedObjects.isEmpty ? 0 : Int((Double(judgedObjects.reduce(0, +)) / Double(judgedObjects.count)).rounded())
            let bytes = judgedBytes.isEmpty ? f.averageBytesPerCycle : Int((Double(judgedBytes.reduce(0, +)) / Double(judgedBytes.count)).rounded())
            out += "\n  \(name(of: f)): +\(objects) objects / +\(bytes) bytes per cycle"
            out += " (\(f.cyclesWithGrowth) of \(f.cycles) judged cycles grew; \(f.survivingObjects) objects, \(f.survivingBytes) bytes left behind)"
            out += "\n    objects per cycle: " + staircase(f.objectsPerCycle, warmUp: answer.warmUp)
            out += "\n    bytes per cycle:   " + staircase(f.bytesPerCycle, warmUp: answer.warmUp)
            out += "\n    allocated at:"
            out += FrameText.lines(f.frames, from: f.userFrame, count: 5, indent: "      ")
        }
        return out
    }

    /// "[+1] +1 +1 +1": warm-up cycles in brackets.
    static func staircase(_ deltas: [Int], warmUp: Int) -> String {
        deltas.enumerated().map { i, d in
            let text = d > 0 ? "+\(d)" : "\(d)"
            return i < warmUp ? "[\(text)]" : text
        }.joined(separator: " ")
    }

    static func name(of f: ControlFinding) -> String {
        if let type = f.typeName { return type }
        let frame = f.userFrame.flatMap { f.frames.indices.contains($0) ? f.frames[$0] : nil }
        if let function = frame?.shortFunction ?? frame?.function { return "malloc in \(function)" }
        return "malloc (no Swift type)"
    }
}

enum FrameText {
    /// Up to `count` frames from `start` (the first own-code frame), one per line.
    static func lines(_ frames: [ControlFrame], from start: Int?, count: Int, indent: String) -> String {
        guard !frames.isEmpty else { return "\n\(indent)(no stack recorded)" }
        let first = start.map { min(max(0, $0), frames.count - 1) } ?? 0
        var out = ""
        for frame in frames[first...].prefix(count) {
            out += "\n\(indent)" + line(frame)
        }
        return out
    }

    static func line(_ frame: ControlFrame) -> String {
        let function = frame.shortFunction ?? frame.function ?? frame.address
        var place = ""
        if let file = frame.file {
            let base = file.split(separator: "/").last.map(String.init) ?? file
            place = frame.line.map { " (\(base):\($0))" } ?? " (\(base))"
        } else if let module = frame.module {
            place = " (\(module.split(separator: "/").last.map(String.init) ?? module))"
        }
        return function + place + (frame.inlined == true ? " [inlined]" : "")
    }
}
