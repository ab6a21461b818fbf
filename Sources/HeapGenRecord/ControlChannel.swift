import CHeapGenCollector
import HeapGenAnalysis
import HeapGenReport
import HeapGenSymbolication
import HeapGenTrace
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Answers the traced program's control requests (`heapgen_control()` in the
/// shim, used by HeapGenTesting). See "Control channel" in heapgen_protocol.h
/// for the transport.
///
/// A request is an `HG_K_CONTROL` ring record: the drainer calls ``handle(_:_:)``
/// when it reaches it, so every allocation, free and mark the program made
/// before the request has been consumed, and the answer sees them.
///
/// ## Requests (one flat JSON object, at most 16 KiB) and answers
///
/// Every answer is a JSON object with `"ok"`: `{"ok":false,"error":"…"}` for a
/// request the collector cannot honour (malformed JSON, unknown op, bad
/// argument, nothing to answer with). Extra keys are ignored.
///
/// - `{"op":"ping"}` → `{"ok":true,"op":"ping","tracking":false}`.
/// - `{"op":"track"}` → starts live tracking of this process image (idempotent):
///   `{"ok":true,"op":"track","tracking":true,"since":<ring position>,"already":false}`.
///   From then on the collector keeps every live block (address, size, stack, type,
///   generation). HeapGenTesting sends this from a constructor at start-up.
/// - `{"op":"untrack"}` → stops tracking (and ends a growth session).
/// - `{"op":"status"}` → `{"ok":true,"op":"status","tracking":…,"liveBlocks":…,"marks":…,
///   "session":true|false,"answered":…,"rejected":…,"ignored":…}`.
/// - `{"op":"object","address":"0x55d0c0a1b2c0"}` (needs tracking) →
///   `{"ok":true,"op":"object","address":"0x…","live":true,"allocation":<ring position of
///   its allocation>,"typeName":"Mod.Type"|null,"size":48,"generation":3,
///   "generationLabel":"cycle 4"|null,"previousMark":"cycle 3"|null,"frames":[Frame…],
///   "userFrame":2|null}` or `{"ok":true,"op":"object","address":"0x…","live":false}`.
///   `generation` counts the marks seen between `track` and the allocation;
///   `generationLabel` names the generation by its closing mark (as Instruments does),
///   null while it is still open; `previousMark` is the mark that opened it. `allocation`
///   identifies the block: a different value for the same address later means the first
///   block was freed and the address reused. Frames are heapgen-report/1 frames
///   (`function`, `shortFunction`, `file`, `line`, `column`, `module`, `address`,
///   `inlined`), innermost first.
/// - `{"op":"begin","label":"…","warmUp":1,"toleratedMisses":1,"minBytesPerCycle":0,
///   "minObjectsPerCycle":0}` → starts a growth session (and tracking): a fresh
///   generation analysis of the events from this request on, with these options
///   (all optional; defaults as shown). A session already running is replaced.
///   `{"ok":true,"op":"begin","since":<ring position>}`.
///   (Restricting the analysis to "the marks after label L" is done this way, with a
///   fresh analyzer started by a request that is itself ordered with the marks, rather
///   than by re-slicing one long analysis: the cycles before are simply not in it.)
/// - `{"op":"growth","keep":false}` → the analysis of the session so far, then ends the
///   session unless `keep` is true. Analysis options may be repeated; they must equal the
///   session's. `{"ok":true,"op":"growth","label":…,"marks":11,"cycles":10,"judgedCycles":8,
///   "warmUp":2,"toleratedMisses":1,"findings":[Finding…],"notes":[…]}` where each finding is
///   a heapgen-report/1 finding (`kind`, `typeName`, `frames`, `userFrame`, `cycles`,
///   `cyclesWithGrowth`, `objectsPerCycle`, `bytesPerCycle`, `averageBytesPerCycle`,
///   `survivingObjects`, `survivingBytes`) with symbolicated frames.
/// - `{"op":"end"}` → ends the growth session.
/// - `{"op":"scan","sp":"0x7ffd…"}` (needs tracking; the shim sends it from its atexit handler
///   under `heapgen record --leaks`, in every traced image, forked children included) → a
///   conservative reachability scan of the program's memory (`hg_leak_scan`): the threads are
///   stopped with ptrace, their registers are roots and their stacks count from the stack
///   pointer up; `sp` (optional) is the requester's stack pointer, used when ptrace is not
///   permitted. `lsan` (optional) is the address of the text the program's
///   `__lsan_default_suppressions()` returned; it goes into the trace as a
///   `programSuppressions` record. In a forked child the live set includes the blocks it inherited. The live
///   blocks nothing references any more are written to the trace
///   as an `unreachable` record, the indirect ones among them (reached only from another
///   unreachable block) with their owners as an `indirectLeaks` record.
///   `{"ok":true,"op":"scan","unreachable":3,"indirect":1,"live":120,
///   "scannedBytes":…,"rootBytes":…,"rootRegions":…,"threads":2,"threadsStopped":2,
///   "deadStackBytes":…,"microseconds":…}`. A scan that cannot
///   read the program or hits its caps (1 GiB, 20 s) answers `{"ok":false,"error":…}`, writes
///   nothing and says why on standard error: never a partial verdict, which would call
///   reachable blocks leaked.
///
/// Cost: while nothing asked, one nil check per ring record. While tracking, one hash
/// table update per allocation and free; during a session, one analyzer step more.
/// Answers that symbolicate (object, growth) hold the collector's one thread for the
/// symbolizer's time (milliseconds once warm); the program is waiting anyway.
final class ControlChannel {
    private let request = UnsafeMutablePointer<UInt8>.allocate(capacity: ControlJSON.maxRequestBytes)
    private static let maxFrames = 1024
    private let frames = UnsafeMutablePointer<UInt64>.allocate(capacity: maxFrames)
    /// Created on the first answer that needs frames.
    private var symbolizerStorage: Symbolizer?
    /// Off while a gone process's ring is drained: nobody waits for those answers.
    var answering = true

    init() {}

    deinit {
        request.deallocate()
        frames.deallocate()
    }

    private var symbolizer: Symbolizer {
        if let symbolizerStorage { return symbolizerStorage }
        let made = Symbolizer()
        symbolizerStorage = made
        return made
    }

    /// Handles the control record `slot` of `seg` (its `seq` is its ring position).
    func handle(_ seg: Segment, _ slot: hg_slot) {
        let control = seg.control
        guard answering else {
            control.ignored &+= 1
            return
        }
        let id = slot.addr
        var length = 0
        let rc = hg_control_request(seg.raw, id, request, ControlJSON.maxRequestBytes, &length)
        let answer: String
        switch rc {
        case 0:
            answer = respond(seg, UnsafeBufferPointer(start: request, count: length), position: slot.seq)
        case -E2BIG:
            control.rejected &+= 1
            answer = Self.error("request longer than \(ControlJSON.maxRequestBytes) bytes")
        default:
            // Stale or forged id (the program moved on, or scribbled): nobody waits for it.
            control.ignored &+= 1
            return
        }
        control.answered &+= 1
        var bytes = Array(answer.utf8)
        if hg_control_respond(seg.raw, id, &bytes, bytes.count) == -E2BIG {
            var small = Array(Self.error("answer of \(bytes.count) bytes does not fit the response region of \(hg_control_response_room(seg.raw)) bytes").utf8)
            _ = hg_control_respond(seg.raw, id, &small, small.count)
        }
    }

    static func error(_ text: String) -> String {
        "{\"ok\":false,\"error\":\(ControlJSON.quote(text))}"
    }

    private func respond(_ seg: Segment, _ bytes: UnsafeBufferPointer<UInt8>, position: UInt64) -> String {
        let fields: [String: ControlValue]
        do {
            fields = try ControlJSON.parseObject(bytes)
        } catch {
            seg.control.rejected &+= 1
            return Self.error("malformed request: \(error)")
        }
        guard let op = fields["op"]?.string else {
            seg.control.rejected &+= 1
            return Self.error("the request has no \"op\" string")
        }
        let answer: Result<String, ControlJSONError>
        switch op {
        case "ping": answer = .success("{\"ok\":true,\"op\":\"ping\",\"tracking\":\(seg.control.tracker != nil)}")
        case "track": answer = track(seg, position: position)
        case "untrack":
            seg.control.tracker = nil
            answer = .success("{\"ok\":true,\"op\":\"untrack\",\"tracking\":false}")
        case "status": answer = status(seg)
        case "scan": answer = scan(seg, fields)
        case "object": answer = object(seg, fields)
        case "begin": answer = begin(seg, fields, position: position)
        case "growth": answer = growth(seg, fields)
        case "end":
            let had = seg.control.tracker?.session != nil
            seg.control.tracker?.session = nil
            answer = .success("{\"ok\":true,\"op\":\"end\",\"ended\":\(had)}")
        default: answer = .failure(ControlJSONError(description: "unknown op \(ControlJSON.quote(String(op.prefix(64))))"))
        }
        switch answer {
        case .success(let text): return text
        case .failure(let error):
            seg.control.rejected &+= 1
            return Self.error(error.description)
        }
    }

    // MARK: - Ops

    private func track(_ seg: Segment, position: UInt64) -> Result<String, ControlJSONError> {
        let already = seg.control.tracker != nil
        if !already { seg.control.tracker = LiveTracker(since: position) }
        let since = seg.control.tracker!.since
        return .success("{\"ok\":true,\"op\":\"track\",\"tracking\":true,\"since\":\(since),\"already\":\(already)}")
    }

    private func status(_ seg: Segment) -> Result<String, ControlJSONError> {
        let c = seg.control
        let t = c.tracker
        return .success("""
            {"ok":true,"op":"status","tracking":\(t != nil),"liveBlocks":\(t?.count ?? 0),\
            "marks":\(t.map { Int($0.generation) } ?? 0),"session":\(t?.session != nil),\
            "untrackedFrees":\(t?.untrackedFrees ?? 0),"answered":\(c.answered),"rejected":\(c.rejected),\
            "ignored":\(c.ignored)}
            """)
    }

    /// Caps of one leak scan: bytes read from the program, and time.
    static let scanMaxBytes: UInt64 = 1 << 30
    static let scanMaxNanoseconds: UInt64 = 20_000_000_000

    private func scan(_ seg: Segment, _ fields: [String: ControlValue]) -> Result<String, ControlJSONError> {
        guard var tracker = seg.control.tracker else {
            return .failure(ControlJSONError(description: "not tracking this process: record with --leaks"))
        }
        if seg.origin == .fork {
            // A forked child's own tracker does not know the blocks it inherited;
            // the collector's live heap of the child does (InheritedHeap).
            guard let heap = seg.liveHeap else {
                return .failure(ControlJSONError(description: "no leak scan in a forked child that is not followed"))
            }
            // A raw clone() announces no fork: what it inherited is unknown, and a block
            // referenced only from an unknown one would be called leaked.
            guard seg.raw.pointee.parent_fork_id != 0 else {
                return .failure(ControlJSONError(description: "no leak scan in a child started by a raw clone(): the blocks it inherited are unknown"))
            }
            tracker = heap
        }
        let blocks = tracker.liveBlocks()
        let addresses = blocks.map(\.address)
        let sizes = blocks.map(\.size)
        var marked = [UInt8](repeating: 0, count: blocks.count)
        var owners = [UInt64](repeating: 0, count: blocks.count)
        var result = hg_scan_result()
        // The requester's stack pointer bounds its stack when the threads cannot be stopped.
        let requesterSP = Self.address(fields["sp"]) ?? 0
        _ = hg_leak_scan(seg.pid, addresses, sizes, blocks.count, &marked, &owners, Self.scanMaxBytes,
                         Self.scanMaxNanoseconds, requesterSP, &result)
        if result.ptrace_error != 0 && result.error == 0 && result.aborted == 0 {
            printDiagnostic("note: the leak scan could not stop the threads of process \(seg.pid) (\(errorString(result.ptrace_error)): another tracer, or a ptrace restriction such as /proc/sys/kernel/yama/ptrace_scope): their registers were not read and whole stacks of other threads counted as roots, so a leak may be missed")
        }
        if result.error != 0 || result.aborted != 0 {
            let why: String
            if result.error == EPERM || result.error == EACCES {
                why = "cannot read the memory of process \(seg.pid): \(errorString(result.error)) (ptrace access: see /proc/sys/kernel/yama/ptrace_scope)"
            } else if result.error != 0 {
                why = "cannot read the memory of process \(seg.pid): \(errorString(result.error))"
            } else if result.aborted == 1 {
                why = "the leak scan of process \(seg.pid) stopped after reading \(result.scanned_bytes) bytes (cap \(Self.scanMaxBytes))"
            } else {
                why = "the leak scan of process \(seg.pid) stopped after \(Self.scanMaxNanoseconds / 1_000_000_000) s"
            }
            printDiagnostic("warning: \(why); no block is reported as leaked")
            return .failure(ControlJSONError(description: why))
        }
        var unreachable: [UInt64] = []
        var indirect: [IndirectLeak] = []
        for i in marked.indices where marked[i] != 1 {
            unreachable.append(addresses[i])
            if marked[i] == 2 { indirect.append(IndirectLeak(address: addresses[i], owner: addresses[Int(owners[i])])) }
        }
        seg.writer.unreachable(unreachable)
        seg.writer.indirectLeaks(indirect)
        // The program's __lsan_default_suppressions() text: its thread waits for this answer.
        if let at = Self.address(fields["lsan"]), at != 0 {
            var text = [CChar](repeating: 0, count: 65_536)
            let n = hg_read_remote_string(seg.pid, at, &text, text.count)
            if n >= 0 {
                seg.writer.programSuppressions(String(decoding: text.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self))
            } else {
                printDiagnostic("warning: cannot read the text of __lsan_default_suppressions() in process \(seg.pid) (unreadable, or longer than 64 KiB): ignored")
            }
        }
        return .success("""
            {"ok":true,"op":"scan","unreachable":\(unreachable.count),"indirect":\(indirect.count),"live":\(blocks.count),\
            "scannedBytes":\(result.scanned_bytes),"rootBytes":\(result.root_bytes),\
            "rootRegions":\(result.root_regions),"threads":\(result.threads),\
            "threadsStopped":\(result.threads_stopped),"deadStackBytes":\(result.dead_stack_bytes),\
            "microseconds":\(result.elapsed_ns / 1000)}
            """)
    }

    private static func address(_ value: ControlValue?) -> UInt64? {
        switch value {
        case .string(let s)?:
            if s.hasPrefix("0x") || s.hasPrefix("0X") { return UInt64(s.dropFirst(2), radix: 16) }
            return UInt64(s)
        case .number?:
            return value!.integer(in: 0...(1 << 53)).map { UInt64($0) }
        default:
            return nil
        }
    }

    private struct ObjectAnswer: Encodable {
        var ok = true
        var op = "object"
        var address: String
        var live: Bool
        var allocation: UInt64?
        var typeName: String?
        var size: UInt64?
        var generation: Int?
        var generationLabel: String?
        var previousMark: String?
        var frames: [Report.Frame]?
        var userFrame: Int?
    }

    private func object(_ seg: Segment, _ fields: [String: ControlValue]) -> Result<String, ControlJSONError> {
        guard let address = Self.address(fields["address"]) else {
            return .failure(ControlJSONError(description: "\"address\" must be a \"0x…\" string"))
        }
        guard let tracker = seg.control.tracker else {
            return .failure(ControlJSONError(description: "not tracking this process: send {\"op\":\"track\"} first"))
        }
        var answer = ObjectAnswer(address: Report.Frame.formatAddress(address), live: false)
        if let entry = tracker.lookup(address) {
            answer.live = true
            answer.allocation = entry.position
            answer.typeName = entry.type == 0 ? nil : seg.control.typeNames[entry.type]
            answer.size = entry.size
            answer.generation = Int(entry.generation)
            answer.generationLabel = tracker.markLabel(Int(entry.generation))
            answer.previousMark = tracker.markLabel(Int(entry.generation) - 1)
            let frames = symbolicate(seg, stack: entry.stack)
            answer.frames = frames
            answer.userFrame = OwnCode.firstUserFrame(frames)
        }
        return Self.encode(answer)
    }

    private static func encode<T: Encodable>(_ value: T) -> Result<String, ControlJSONError> {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return .success(String(decoding: try encoder.encode(value), as: UTF8.self))
        } catch {
            return .failure(ControlJSONError(description: "cannot encode the answer: \(error)"))
        }
    }

    /// The frames of stack blob `stack`, read from the segment's arena now and
    /// symbolicated against the modules loaded now.
    private func symbolicate(_ seg: Segment, stack: UInt32) -> [Report.Frame] {
        guard stack != 0 else { return [] }
        let n = Int(hg_read_stack(seg.raw, stack, frames, UInt32(Self.maxFrames)))
        guard n > 0 else { return [] }
        let loaded = seg.control.loadedModules()
        var requests: [SymbolizationRequest] = []
        var plan: [(request: Int?, address: UInt64)] = []
        for k in 0..<n {
            let address = frames[k]
            var found: ModuleRecord?
            search: for module in loaded.reversed() {
                for segment in module.segments {
                    let start = module.loadBias &+ segment.vaddr
                    if address >= start && address - start < segment.memsz {
                        found = module
                        break search
                    }
                }
            }
            guard let m = found else {
                plan.append((nil, address))
                continue
            }
            plan.append((requests.count, address))
            requests.append(SymbolizationRequest(module: Module(path: m.path, buildID: m.buildID, loadBias: m.loadBias),
                                                 address: address, isReturnAddress: true))
        }
        let answers = requests.isEmpty ? [] : symbolizer.symbolize(requests)
        var out: [Report.Frame] = []
        for step in plan {
            guard let r = step.request, r < answers.count else {
                out.append(Report.Frame(module: nil, address: step.address))
                continue
            }
            for s in answers[r] {
                out.append(Report.Frame(function: s.function, shortFunction: s.shortFunction, file: s.file,
                                        line: s.line, column: s.column, module: s.module, address: s.address,
                                        inlined: s.inlined))
            }
        }
        return out
    }

    /// Analysis options from a request; nil values keep `base`'s.
    private static func options(_ fields: [String: ControlValue], base: AnalysisOptions)
        -> Result<AnalysisOptions, ControlJSONError> {
        var o = base
        let limit = 0...1_000_000
        for (key, path) in [("warmUp", \AnalysisOptions.warmUp), ("toleratedMisses", \.toleratedMisses),
                            ("minBytesPerCycle", \.minBytesPerCycle), ("minObjectsPerCycle", \.minObjectsPerCycle)] {
            guard let value = fields[key], value != .null else { continue }
            guard let n = value.integer(in: key.hasPrefix("min") ? 0...Int(Int32.max) : limit) else {
                return .failure(ControlJSONError(description: "\"\(key)\" must be a non-negative integer"))
            }
            o[keyPath: path] = n
        }
        return .success(o)
    }

    private func begin(_ seg: Segment, _ fields: [String: ControlValue], position: UInt64)
        -> Result<String, ControlJSONError> {
        let options: AnalysisOptions
        switch Self.options(fields, base: AnalysisOptions()) {
        case .success(let o): options = o
        case .failure(let e): return .failure(e)
        }
        let label = fields["label"]?.string.map { String($0.prefix(256)) }
        if seg.control.tracker == nil { seg.control.tracker = LiveTracker(since: position) }
        seg.control.tracker!.session = GrowthSession(options: options, label: label, since: position)
        return .success("{\"ok\":true,\"op\":\"begin\",\"since\":\(position)}")
    }

    private struct GrowthAnswer: Encodable {
        var ok = true
        var op = "growth"
        var label: String?
        var marks: Int
        var cycles: Int
        var judgedCycles: Int
        var warmUp: Int
        var toleratedMisses: Int
        var findings: [Report.Finding]
        var notes: [String]
    }

    private func growth(_ seg: Segment, _ fields: [String: ControlValue]) -> Result<String, ControlJSONError> {
        guard let tracker = seg.control.tracker, let session = tracker.session else {
            return .failure(ControlJSONError(description: "no growth session: send {\"op\":\"begin\"} before the cycles"))
        }
        let base = session.analyzer.options
        switch Self.options(fields, base: base) {
        case .success(let o) where o != base:
            return .failure(ControlJSONError(description: "analysis options are fixed by \"begin\" (warmUp \(base.warmUp), toleratedMisses \(base.toleratedMisses), minBytesPerCycle \(base.minBytesPerCycle), minObjectsPerCycle \(base.minObjectsPerCycle))"))
        case .failure(let e): return .failure(e)
        default: break
        }
        if fields["keep"] != .bool(true) { tracker.session = nil }

        var analysis = session.analyzer.finish()
        // The session's analyzer saw heap events and marks only: give it the
        // definitions it needs for the findings (stacks from the arena, names,
        // the module map as it is now).
        var stacks: [UInt32: [UInt64]] = [:]
        var positions: [UInt32: UInt64] = [:]
        for finding in analysis.findings where finding.stackID != 0 && stacks[finding.stackID] == nil {
            let n = Int(hg_read_stack(seg.raw, finding.stackID, frames, UInt32(Self.maxFrames)))
            stacks[finding.stackID] = Array(UnsafeBufferPointer(start: frames, count: n))
            positions[finding.stackID] = UInt64.max
        }
        analysis.stacks = stacks
        analysis.stackRecordIndices = positions
        analysis.modules = seg.control.modules
        for i in analysis.findings.indices where analysis.findings[i].typeID != 0 {
            analysis.findings[i].typeName = seg.control.typeNames[analysis.findings[i].typeID]
        }
        analysis.sites = []   // only the findings are symbolicated
        analysis.notes.removeAll { $0.hasPrefix("No process record") || $0.hasPrefix("No end record") }
        let report = ReportBuilder(symbolizer: symbolizer).build(analysis, trace: seg.path)
        let notes = report.notes.filter { !$0.hasPrefix("How the program ended") }
        return Self.encode(GrowthAnswer(label: session.label, marks: session.marks, cycles: report.cycles,
                                        judgedCycles: report.judgedCycles, warmUp: base.warmUp,
                                        toleratedMisses: base.toleratedMisses, findings: report.findings,
                                        notes: notes))
    }
}
