import Foundation
import HeapGen
import CHeapGenTestingStart
import HeapGenControlProtocol

extension HeapGen {
    /// Fails the test when `object` is still alive `within` after the call: the
    /// MLeaksFinder check for "this should be gone once the screen is torn down".
    ///
    /// ```swift
    /// var screen: ProfileScreen? = ProfileScreen()
    /// screen!.show()
    /// try HeapGen.expectDeallocation(screen.take()!)      // hands over the last reference
    ///
    /// let model = makeModel()
    /// try HeapGen.expectDeallocation(consume model)       // ends `model`'s lifetime here
    /// ```
    ///
    /// The object is watched by address in heapgen's collector: this function takes its
    /// address, checks with the collector that the block is live, **drops its own
    /// reference**, and then only asks the collector (every ~20 ms) whether that block has
    /// been freed. The caller must not keep a strong reference either: pass the last one
    /// (`optional.take()!`, `consume variable`), or the object can never go away during the
    /// call. A reference kept by a retain cycle, a registry, an observer or a pending
    /// closure is what this finds. While it waits on the main thread the main run loop
    /// runs, so teardown work queued there still happens.
    ///
    /// On failure the message gives the object's type, size, generation (marks seen since
    /// tracking began, with the closing mark's label), what holds it (`held by:` the shortest
    /// path from a root such as a static, through stored properties, to the object; `cycle:`
    /// when it sits in a reference cycle) and its allocation stack from the first frame in
    /// your code. The path comes from a scan of the heap with the program's threads stopped
    /// (the collector's `retention` op); when that fails the message says why in one line.
    ///
    /// Needs heapgen (`heapgen run -- .build/debug/<Package>PackageTests.xctest`); the
    /// collector tracks the test binary from start-up (a constructor in HeapGenTesting asks
    /// for it). Without heapgen the test is **skipped** with a message saying so.
    ///
    /// - Throws: `XCTSkip` (XCTest) or a cancellation (Swift Testing) when not running under
    ///   heapgen or when the object was allocated before tracking began.
    public static func expectDeallocation(_ object: consuming AnyObject, within timeout: Duration = .seconds(2),
                                          fileID: String = #fileID, file: StaticString = #filePath,
                                          line: UInt = #line, column: UInt = #column) throws {
        let site = CallSite(fileID: fileID, file: file, line: line, column: column)
        let watch = try DeallocationWatch.start(copy object, site: site)
        _ = consume object
        while let wait = watch.nextWait(timeout: timeout) {
            if Thread.isMainThread {
                _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: wait))
            } else {
                usleep(UInt32(wait * 1_000_000))
            }
            if try watch.isGone() { return }
        }
        watch.reportAlive(timeout: timeout)
    }

    /// The `async` form of ``expectDeallocation(_:within:fileID:file:line:column:)``: waits
    /// with `Task.sleep`, so work on other tasks and actors (the main actor included) goes on.
    public static func expectDeallocation(_ object: consuming AnyObject, within timeout: Duration = .seconds(2),
                                          fileID: String = #fileID, file: StaticString = #filePath,
                                          line: UInt = #line, column: UInt = #column) async throws {
        let site = CallSite(fileID: fileID, file: file, line: line, column: column)
        let watch = try DeallocationWatch.start(copy object, site: site)
        _ = consume object
        while let wait = watch.nextWait(timeout: timeout) {
            try await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000))
            if try watch.isGone() { return }
        }
        watch.reportAlive(timeout: timeout)
    }
}

/// One object being watched: its address and the identity of its allocation.
final class DeallocationWatch {
    static let pollInterval = 0.020

    /// The object's address, bits inverted: the collector's reachability scan reads this
    /// watch's memory conservatively, and a plain copy would look like a reference to the
    /// object (then the retention path would name the watch itself).
    private let hiddenAddress: UInt
    var address: UInt { ~hiddenAddress }
    let site: CallSite
    let clock = ContinuousClock()
    let start: ContinuousClock.Instant
    /// The answer while the object was certainly alive (we held it).
    let first: ControlObjectAnswer
    var last: ControlObjectAnswer

    private init(address: UInt, site: CallSite, first: ControlObjectAnswer) {
        self.hiddenAddress = ~address
        self.site = site
        self.start = clock.now
        self.first = first
        self.last = first
    }

    /// Takes the address and asks the collector about the block while `object` is
    /// held; skips the test when that is impossible (not traced, or the block is
    /// unknown to the collector). A factory rather than an initializer: the skips
    /// never return, and an initializer would leave unreachable cleanup behind.
    static func start(_ object: AnyObject, site: CallSite) throws -> DeallocationWatch {
        try TestOutcome.requireHeapgen("expectDeallocation", at: site)
        let address = UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque())
        var answer: ControlObjectAnswer?
        var failure: String?
        withExtendedLifetime(object) {
            do {
                _ = try ControlClient.ask(ControlRequestText.simple(.track), as: ControlStatusAnswer.self)
                answer = try ControlClient.ask(Self.request(address), as: ControlObjectAnswer.self)
            } catch ControlError.notTraced {
                failure = nil
            } catch {
                failure = "\(error)"
            }
        }
        guard let answer else {
            if let failure {
                TestOutcome.fail("heapgen: expectDeallocation could not watch the object: \(failure)", at: site)
                throw ControlError.failed(failure)
            }
            try TestOutcome.skip("heapgen: expectDeallocation needs the program to run under heapgen: \(TestOutcome.heapgenCommand)", at: site)
        }
        guard answer.live else {
            let type = String(reflecting: Swift.type(of: object))
            try TestOutcome.skip("heapgen: expectDeallocation cannot watch this \(type): heapgen has no live block at 0x\(String(address, radix: 16)) (allocated before tracking began, or not allocated with malloc)", at: site)
        }
        return DeallocationWatch(address: address, site: site, first: answer)
    }

    static func request(_ address: UInt) -> String {
        ControlRequestText.object(address: address)
    }

    /// The `retention` request, built in a frame of its own that has returned before the
    /// request is sent: the asking thread's stack (from its stack pointer up) holds no plain
    /// copy of the address then. `tid` makes the collector prefer any other root over this
    /// thread's (the caller's frames may still hold stale copies of the object).
    @inline(never)
    static func retentionRequest(hidden: UInt) -> String {
        var text = ControlRequestText.retention(address: ~hidden)
        text.removeLast()
        return text + ",\"tid\":\(hg_testing_thread_id())}"
    }

    /// The lines the failure adds about what holds the object (`held by: …`, `cycle: …`), or
    /// one line saying why the collector could not tell.
    func retentionLines() -> String {
        let answer: ControlRetentionAnswer
        do {
            answer = try ControlClient.ask(Self.retentionRequest(hidden: hiddenAddress), as: ControlRetentionAnswer.self)
        } catch {
            return "\n  held by: unknown (\(error))"
        }
        return Self.retentionText(answer)
    }

    /// `held by:` and `cycle:` lines of a `retention` answer.
    static func retentionText(_ answer: ControlRetentionAnswer) -> String {
        var out = ""
        if !answer.live {
            out += "\n  held by: unknown (the collector found no live block there when it looked)"
        } else if let path = answer.path, !path.isEmpty, answer.askingThreadOnly == true {
            // Only this test's own thread reaches it: a variable the caller still has, or a
            // stale copy of the address in a frame (the scan is conservative).
            let why = answer.cycle != nil ? "its reference cycle, and " : ""
            out += "\n  held by: \(why)only the test's own thread (a variable of the caller, or a stale copy of its address): "
                + ControlRetentionAnswer.text(path)
        } else if let path = answer.path, !path.isEmpty {
            out += "\n  held by: " + ControlRetentionAnswer.text(path)
        } else if answer.cycle != nil {
            out += "\n  held by: its reference cycle only (no root reaches it)"
        } else {
            out += "\n  held by: nothing the scan could see (no root reaches it: a reference the scan cannot read, or one dropped since)"
        }
        if let cycle = answer.cycle, let first = cycle.first {
            // The cycle's last block holds the first: name it again to close the loop.
            out += "\n  cycle: " + ControlRetentionAnswer.text(cycle) + " → " + first.name
        }
        return out
    }

    /// Seconds to wait before the next question, or nil once the deadline has passed.
    func nextWait(timeout: Duration) -> Double? {
        let elapsed = clock.now - start
        guard elapsed < timeout else { return nil }
        let left = timeout - elapsed
        let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) * 1e-18
        return min(Self.pollInterval, max(0.001, seconds))
    }

    /// True once the watched block is freed (or its address holds another block).
    func isGone() throws -> Bool {
        let answer: ControlObjectAnswer
        do {
            answer = try ControlClient.ask(Self.request(address), as: ControlObjectAnswer.self)
        } catch {
            TestOutcome.fail("heapgen: expectDeallocation lost the collector: \(error)", at: site)
            throw error
        }
        if !answer.live || answer.allocation != first.allocation { return true }
        last = answer
        return false
    }

    func reportAlive(timeout: Duration) {
        // Asked first, while this frame has not yet formatted the raw address (a stale copy
        // on the asking thread's stack would look like a holder).
        let held = retentionLines()
        let a = last
        let type = a.typeName ?? "object"
        var out = "heapgen: \(type) at 0x\(String(address, radix: 16)) is still alive \(timeout) after expectDeallocation"
        if let size = a.size { out += " (\(size) bytes)" }
        if let g = a.generation {
            out += "\n  allocated in generation \(g)"
            if let label = a.generationLabel { out += " (closed by mark \"\(label)\")" }
            else if let previous = a.previousMark { out += " (after mark \"\(previous)\")" }
            else { out += " (before any mark)" }
        }
        out += held
        out += "\n  allocated at:"
        out += FrameText.lines(a.frames ?? [], from: a.userFrame, count: 5, indent: "    ")
        out += "\n  Something still holds a strong reference: a closure capturing it, an observer, a registry, or the caller."
        TestOutcome.fail(out, at: site)
    }
}
