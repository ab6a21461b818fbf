// The collector's end of the control channel: reads requests from the rings and answers
// them in ring order. The protocol (ops, members, errors, caps, ordering) is described in
// docs/control-protocol.md; its types are in HeapGenControlProtocol.

import CHeapGenCollector
import HeapGenControlProtocol
import HeapGenTrace
#if canImport(Glibc)
import Glibc
#endif

/// Answers the traced program's control requests (`heapgen_control()` in the
/// shim, used by HeapGenTesting). See docs/control-protocol.md for the protocol and
/// "Control channel" in heapgen_protocol.h for the transport.
///
/// A request is an `HG_K_CONTROL` ring record: the drainer calls ``handle(_:_:)``
/// when it reaches it, so every allocation, free and mark the program made
/// before the request has been consumed, and the answer sees them.
///
/// The answers that need analysis, symbolication or report types (`object`, `growth`)
/// come from the injected ``ControlResponder``: the collector sits below those modules.
///
/// Cost: while nothing asked, one nil check per ring record. While tracking, one hash
/// table update per allocation and free; during a session, one analyzer step more.
/// Answers that symbolicate (object, growth) hold the collector's one thread for the
/// symbolizer's time (milliseconds once warm); the program is waiting anyway.
final class ControlChannel {
    private let request = UnsafeMutablePointer<UInt8>.allocate(capacity: ControlLimits.maxRequestBytes)
    private static let maxFrames = 1024
    private let frames = UnsafeMutablePointer<UInt64>.allocate(capacity: maxFrames)
    /// Off while a gone process's ring is drained: nobody waits for those answers.
    var answering = true
    /// Answers `begin`, `object` and `growth` (set by the recorder; nil: those ops are refused).
    var responder: (any ControlResponder)?

    init() {}

    deinit {
        request.deallocate()
        frames.deallocate()
    }

    /// Handles the control record `slot` of `seg` (`pos` is its ring position).
    func handle(_ seg: Segment, _ slot: hg_record) {
        let control = seg.control
        guard answering else {
            control.ignored &+= 1
            return
        }
        let id = slot.addr
        var length = 0
        let rc = hg_control_request(seg.raw, id, request, ControlLimits.maxRequestBytes, &length)
        let answer: String
        switch rc {
        case 0:
            answer = respond(seg, UnsafeBufferPointer(start: request, count: length), position: slot.pos)
        case -E2BIG:
            control.rejected &+= 1
            answer = Self.error("request longer than \(ControlLimits.maxRequestBytes) bytes")
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
        ControlAnswerText.error(text)
    }

    private func respond(_ seg: Segment, _ bytes: UnsafeBufferPointer<UInt8>, position: UInt64) -> String {
        let request: ControlRequest
        do {
            request = try ControlRequest.parse(bytes)
        } catch {
            seg.control.rejected &+= 1
            return Self.error(error.description)
        }
        let answer: Result<String, ControlProtocolError>
        switch request.op {
        case .ping?: answer = .success(ControlAnswerText.ping(tracking: seg.control.tracker != nil))
        case .track?: answer = track(seg, position: position)
        case .untrack?:
            seg.control.tracker = nil
            answer = .success(ControlAnswerText.untrack)
        case .status?: answer = status(seg)
        case .scan?: answer = scan(seg, request)
        case .object?: answer = object(seg, request)
        case .retention?: answer = retention(seg, request)
        case .begin?: answer = begin(seg, request, position: position)
        case .growth?: answer = growth(seg, request)
        case .end?:
            let had = seg.control.tracker?.session != nil
            seg.control.tracker?.session = nil
            answer = .success(ControlAnswerText.end(ended: had))
        case nil: answer = .failure(.unknownOp(request.opName))
        }
        switch answer {
        case .success(let text): return text
        case .failure(let error):
            seg.control.rejected &+= 1
            return Self.error(error.description)
        }
    }

    // MARK: - Ops

    private func track(_ seg: Segment, position: UInt64) -> Result<String, ControlProtocolError> {
        let already = seg.control.tracker != nil
        if !already { seg.control.tracker = LiveTracker(since: position) }
        let since = seg.control.tracker!.since
        return .success("{\"ok\":true,\"op\":\"track\",\"tracking\":true,\"since\":\(since),\"already\":\(already)}")
    }

    private func status(_ seg: Segment) -> Result<String, ControlProtocolError> {
        let c = seg.control
        let t = c.tracker
        return .success(ControlAnswerText.Status(
            tracking: t != nil, liveBlocks: t?.count ?? 0, marks: t.map { Int($0.generation) } ?? 0,
            session: t?.session != nil, untrackedFrees: t?.untrackedFrees ?? 0, answered: c.answered,
            rejected: c.rejected, ignored: c.ignored).json)
    }

    /// Caps of one leak scan: bytes read from the program, and time.
    static let scanMaxBytes: UInt64 = 1 << 30
    static let scanMaxNanoseconds: UInt64 = 20_000_000_000

    /// What one stop of the program captured: the live blocks (by address), the scan's
    /// verdict arrays and figures, and the reference graph (nil when dropped; `graphNote` says why).
    private struct Capture {
        var blocks: [LiveTracker.Entry]
        var addresses: [UInt64]
        var marked: [UInt8]
        var owners: [UInt64]
        var result: hg_scan_result
        var graph: ReferenceGraphRecord?
        var graphNote: String?
    }

    /// The tracker whose blocks a scan of `seg` covers (a followed fork child's inherited heap).
    private func scanTracker(_ seg: Segment, refusal: String) -> Result<LiveTracker, ControlProtocolError> {
        guard let tracker = seg.control.tracker else {
            return .failure(ControlProtocolError(refusal))
        }
        if seg.origin == .fork {
            // A forked child's own tracker does not know the blocks it inherited;
            // the collector's live heap of the child does (InheritedHeap).
            guard let heap = seg.materializedLiveHeap() else {
                return .failure(ControlProtocolError("no leak scan in a forked child that is not followed"))
            }
            // A raw clone() announces no fork: what it inherited is unknown, and a block
            // referenced only from an unknown one would be called leaked.
            guard seg.raw.pointee.parent_fork_id != 0 else {
                return .failure(ControlProtocolError("no leak scan in a child started by a raw clone(): the blocks it inherited are unknown"))
            }
            return .success(heap)
        }
        return .success(tracker)
    }

    /// Stops the program's threads and takes the reference graph (and the reachability marks)
    /// of `tracker`'s live blocks: the one capture path of `scan` and `retention`. Writes nothing
    /// to the trace; fails (with the diagnostic on standard error) rather than give a partial graph.
    private func capture(_ seg: Segment, tracker: LiveTracker, request: ControlRequest, judge: Bool,
                         trigger: ReferenceGraphRecord.Trigger) -> Result<Capture, ControlProtocolError> {
        // The requester's stack pointer bounds its stack when the threads cannot be stopped;
        // `ra`/`raSlot` (sent by heapgen_mark) say where that stack leaves the shim; `liveFrom`
        // (sent from exit()'s handlers) where its live part begins, above exit's frames.
        let requesterSP = request.address("sp") ?? 0
        var caller = hg_scan_caller(pc: request.address("ra") ?? 0, slot: request.address("raSlot") ?? 0,
                                    live_from: request.address("liveFrom") ?? 0)
        var blocks: [LiveTracker.Entry] = []
        blocks.reserveCapacity(tracker.count)
        tracker.forEachBlock { blocks.append($0) }
        blocks.sort { $0.address < $1.address }
        let addresses = blocks.map(\.address)
        let sizes = blocks.map(\.size)
        var marked = [UInt8](repeating: 0, count: blocks.count)
        var owners = [UInt64](repeating: 0, count: blocks.count)
        var result = hg_scan_result()
        var graph = hg_graph()
        graph.max_edges = Self.graphMaxEdges
        _ = hg_leak_scan_graph(seg.pid, addresses, sizes, blocks.count, &marked, &owners, Self.scanMaxBytes,
                               Self.scanMaxNanoseconds, requesterSP, &caller, seg.origin == .fork ? 1 : 0,
                               &result, &graph)
        defer { hg_graph_free(&graph) }
        if result.ptrace_error != 0 && result.error == 0 && result.aborted == 0 {
            printDiagnostic("note: the leak scan could not stop the threads of process \(seg.pid) (\(errorString(result.ptrace_error)): another tracer, or a ptrace restriction such as /proc/sys/kernel/yama/ptrace_scope): their registers were not read and whole stacks of other threads counted as roots, so a leak may be missed")
        }
        if result.error != 0 || result.aborted != 0 {
            let why: String
            if result.error == EPERM || result.error == EACCES {
                why = "cannot read the memory of process \(seg.pid): " + Self.ptraceRefusal(seg.pid, error: result.error)
            } else if result.error == ESRCH || result.error == ENOENT {
                // Gone from under the scan (its /proc files, then its memory): something killed
                // it while it waited, as a pool terminating its workers does. Nothing is wrong.
                why = "process \(seg.pid) ended during its scan (killed while it waited)"
            } else if result.error != 0 {
                why = "cannot read the memory of process \(seg.pid): \(errorString(result.error))"
            } else if result.aborted == 1 {
                why = "the leak scan of process \(seg.pid) stopped after reading \(result.scanned_bytes) bytes (cap \(Self.scanMaxBytes))"
            } else {
                why = "the leak scan of process \(seg.pid) stopped after \(Self.scanMaxNanoseconds / 1_000_000_000) s"
            }
            printDiagnostic(judge ? "warning: \(why); no block is reported as leaked"
                                  : "warning: \(why); no reference graph is recorded")
            return .failure(ControlProtocolError(why))
        }
        var out = Capture(blocks: blocks, addresses: addresses, marked: marked, owners: owners, result: result)
        if graph.dropped != 0 {
            let why = graph.dropped == 1 ? "more than \(Self.graphMaxEdges) references" : "out of memory"
            out.graphNote = "the reference graph of process \(seg.pid) was dropped: \(why)"
            printDiagnostic("warning: \(out.graphNote!); no retention paths for this scan")
        } else {
            var record = Self.graphRecord(graph, blocks: addresses, trigger: trigger, result: result)
            record.fieldNames = classFields(seg, types: tracker.liveTypes())
            out.graph = record
        }
        return .success(out)
    }

    /// Why the kernel refused to let heapgen read `pid`'s memory, as far as it can tell.
    /// A process that made itself non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`, as agents holding
    /// keys do, or by changing its user or group IDs) has its `/proc` files owned by root, and
    /// only a process with CAP_SYS_PTRACE may read it.
    static func ptraceRefusal(_ pid: Int32, error: Int32) -> String {
        var st = stat()
        if geteuid() != 0 && stat("/proc/\(pid)/mem", &st) == 0 && st.st_uid == 0 && st.st_uid != geteuid() {
            return "it made itself non-dumpable (prctl PR_SET_DUMPABLE 0, or a change of user or group ID) "
                + "and only root may read such a process"
        }
        if access("/proc/sys/kernel/yama/ptrace_scope", F_OK) == 0 {
            return "\(errorString(error)) (ptrace access: see /proc/sys/kernel/yama/ptrace_scope)"
        }
        return "\(errorString(error)) (ptrace access refused by a security module or a container's policy)"
    }

    private func scan(_ seg: Segment, _ request: ControlRequest) -> Result<String, ControlProtocolError> {
        if request.fields["exit"] == .bool(true) { seg.exitScanRequested = true }
        let tracker: LiveTracker
        switch scanTracker(seg, refusal: "not tracking this process: record with --leaks") {
        case .success(let t): tracker = t
        case .failure(let e): return .failure(e)
        }
        // Every scan takes the reference graph too; `"judge":false` (--retention alone,
        // --retention-at) writes only the graph, no verdict on leaks.
        let judge = request.fields["judge"] != .bool(false)
        let trigger: ReferenceGraphRecord.Trigger
        if let label = request.fields["retention"]?.string { trigger = .mark(label) }
        else if request.fields["exit"] == .bool(true) { trigger = .exit }
        else { trigger = .request }
        let captured: Capture
        switch capture(seg, tracker: tracker, request: request, judge: judge, trigger: trigger) {
        case .success(let c): captured = c
        case .failure(let e): return .failure(e)
        }
        // An aggregated trace has no blocks at real addresses for a graph or a leak list to
        // name: the answer goes to the program, nothing to the trace.
        let writesScan = seg.aggregator == nil
        if writesScan, let record = captured.graph { seg.writer.referenceGraph(record) }
        let blocks = captured.blocks, addresses = captured.addresses, marked = captured.marked
        let owners = captured.owners, result = captured.result, graphNote = captured.graphNote
        guard judge else {
            var answer = ControlAnswerText.Scan(
                unreachable: 0, indirect: 0, live: blocks.count,
                scannedBytes: UInt64(result.scanned_bytes), rootBytes: UInt64(result.root_bytes),
                rootRegions: UInt64(result.root_regions), threads: UInt64(result.threads),
                threadsStopped: UInt64(result.threads_stopped), deadStackBytes: UInt64(result.dead_stack_bytes),
                microseconds: UInt64(result.elapsed_ns / 1000))
            answer.graph = graphNote ?? "recorded"
            return .success(answer.json)
        }
        var unreachable: [UInt64] = []
        var indirect: [IndirectLeak] = []
        for i in marked.indices where marked[i] != 1 {
            unreachable.append(addresses[i])
            if marked[i] == 2 { indirect.append(IndirectLeak(address: addresses[i], owner: addresses[Int(owners[i])])) }
        }
        if writesScan {
            seg.writer.unreachable(unreachable)
            seg.writer.indirectLeaks(indirect)
        }
        // The program's __lsan_default_suppressions() text: its thread waits for this answer.
        if let at = request.address("lsan"), at != 0 {
            var text = [CChar](repeating: 0, count: 65_536)
            let n = hg_read_remote_string(seg.pid, at, &text, text.count)
            if n >= 0 && writesScan {
                seg.writer.programSuppressions(String(decoding: text.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self))
            } else {
                printDiagnostic("warning: cannot read the text of __lsan_default_suppressions() in process \(seg.pid) (unreadable, or longer than 64 KiB): ignored")
            }
        }
        var answer = ControlAnswerText.Scan(
            unreachable: unreachable.count, indirect: indirect.count, live: blocks.count,
            scannedBytes: UInt64(result.scanned_bytes), rootBytes: UInt64(result.root_bytes),
            rootRegions: UInt64(result.root_regions), threads: UInt64(result.threads),
            threadsStopped: UInt64(result.threads_stopped), deadStackBytes: UInt64(result.dead_stack_bytes),
            microseconds: UInt64(result.elapsed_ns / 1000))
        answer.graph = graphNote
        return .success(answer.json)
    }

    /// Swift classes whose stored properties a scan reads at most (the rest: no names).
    static let maxClassTypes = 4096

    /// Stored properties of the live blocks' Swift classes, by type id (read once per type
    /// from the program's class metadata; types that are not readable classes have none).
    private func classFields(_ seg: Segment, types: Set<UInt32>) -> [UInt32: [ReferenceGraphRecord.Field]] {
        let control = seg.control
        var out: [UInt32: [ReferenceGraphRecord.Field]] = [:]
        let capacity = 4096
        let fields = UnsafeMutablePointer<hg_swift_field>.allocate(capacity: capacity)
        let names = UnsafeMutablePointer<CChar>.allocate(capacity: 1 << 20)
        defer {
            fields.deallocate()
            names.deallocate()
        }
        for type in types.sorted().prefix(Self.maxClassTypes) {
            if let known = control.classFields[type] {
                if !known.isEmpty { out[type] = known }
                continue
            }
            var found: [ReferenceGraphRecord.Field] = []
            if let metadata = control.typeMetadata[type], metadata != 0 {
                let n = hg_swift_class_fields(seg.pid, metadata, fields, Int32(capacity), names, 1 << 20)
                for k in 0..<max(0, Int(n)) {
                    found.append(.init(offset: fields[k].offset, name: String(cString: names + Int(fields[k].name))))
                }
            }
            found.sort { $0.offset < $1.offset }
            control.classFields[type] = found
            if !found.isEmpty { out[type] = found }
        }
        return out
    }

    /// Cap on the reference graph's edges and root edges (12 and 32 bytes each in the
    /// collector): past it the graph is dropped whole, never kept in part. 64 Mi, or
    /// `HEAPGEN_GRAPH_MAX_EDGES` from heapgen's environment (a lower memory bound; tests).
    static let graphMaxEdges: UInt64 = {
        if let text = getenv("HEAPGEN_GRAPH_MAX_EDGES"), let n = UInt64(String(cString: text)), n > 0 {
            return min(n, 64 << 20)
        }
        return 64 << 20
    }()

    /// The trace record of a scan's graph (the C arrays copied once).
    static func graphRecord(_ g: hg_graph, blocks: [UInt64], trigger: ReferenceGraphRecord.Trigger,
                            result: hg_scan_result) -> ReferenceGraphRecord {
        var record = ReferenceGraphRecord(trigger: trigger, blocks: blocks, bytesRead: UInt64(result.scanned_bytes),
                                          nanoseconds: UInt64(result.elapsed_ns))
        record.edges = (0..<g.edge_count).map {
            let e = g.edges[$0]
            return ReferenceGraphRecord.Edge(from: e.from, to: e.to, offset: e.offset)
        }
        record.roots = (0..<g.region_count).map {
            let r = g.regions[$0]
            return ReferenceGraphRecord.RootRegion(
                kind: ReferenceGraphRecord.RootKind(rawValue: UInt8(truncatingIfNeeded: r.kind)) ?? .other,
                start: r.start, end: r.end, tid: UInt32(bitPattern: r.tid), modulePath: r.path.map { String(cString: $0) })
        }
        record.rootEdges = (0..<g.root_count).map {
            let e = g.roots[$0]
            return ReferenceGraphRecord.RootEdge(region: e.region, slot: e.reg >= 0 ? 0 : e.slot, to: e.to, pc: e.pc,
                                                 register: e.reg >= 0 ? UInt8(e.reg) : nil)
        }
        return record
    }

    /// What the collector and the segment can tell the responder, at this request.
    private func view(_ seg: Segment) -> ControlSegmentView {
        let control = seg.control
        let frames = frames
        return ControlSegmentView(
            tracePath: seg.path, typeNames: control.typeNames, moduleEvents: control.modules,
            readStack: { stack in
                guard stack != 0 else { return [] }
                return seg.frames(ofStack: stack, scratch: frames, scratchCount: Self.maxFrames)
            })
    }

    private func object(_ seg: Segment, _ request: ControlRequest) -> Result<String, ControlProtocolError> {
        guard let address = request.address("address") else {
            return .failure(ControlProtocolError("\"address\" must be a \"0x…\" string"))
        }
        guard let tracker = seg.control.tracker else {
            return .failure(ControlProtocolError("not tracking this process: send {\"op\":\"track\"} first"))
        }
        guard let responder else { return .failure(.unanswerable("object")) }
        var facts = ControlObjectFacts(address: address, block: nil)
        if let entry = tracker.lookup(address) {
            facts.block = ControlObjectFacts.Block(
                allocation: entry.position, typeName: entry.type == 0 ? nil : seg.control.typeNames[entry.type],
                size: entry.size, generation: Int(entry.generation),
                generationLabel: tracker.markLabel(Int(entry.generation)),
                previousMark: tracker.markLabel(Int(entry.generation) - 1), stack: entry.stack)
        }
        return responder.objectAnswer(facts, segment: view(seg))
    }

    /// `retention`: the same stop and capture as a `"judge":false` scan, but the graph is handed
    /// to the responder (the shortest path to the block) instead of written to the trace: a
    /// failing test asks once per object, and a whole-heap graph per question would swell the trace.
    private func retention(_ seg: Segment, _ request: ControlRequest) -> Result<String, ControlProtocolError> {
        guard let address = request.address("address") else {
            return .failure(ControlProtocolError("\"address\" must be a \"0x…\" string"))
        }
        let tracker: LiveTracker
        switch scanTracker(seg, refusal: "not tracking this process: send {\"op\":\"track\"} first") {
        case .success(let t): tracker = t
        case .failure(let e): return .failure(e)
        }
        guard let responder else { return .failure(.unanswerable("retention")) }
        let captured: Capture
        switch capture(seg, tracker: tracker, request: request, judge: false, trigger: .request) {
        case .success(let c): captured = c
        case .failure(let e): return .failure(e)
        }
        guard let graph = captured.graph else {
            return .failure(ControlProtocolError(captured.graphNote ?? "no reference graph"))
        }
        var facts = ControlRetentionFacts(
            address: address, graph: graph,
            blocks: captured.blocks.map { .init(size: $0.size, stack: $0.stack, type: $0.type) })
        facts.requesterTid = request.fields["tid"]?.integer(in: 0...Int(UInt32.max)).map { UInt32($0) } ?? 0
        return responder.retentionAnswer(facts, segment: view(seg))
    }

    private func begin(_ seg: Segment, _ request: ControlRequest, position: UInt64)
        -> Result<String, ControlProtocolError> {
        let options: GrowthOptions
        do {
            options = try request.growthOptions(base: GrowthOptions())
        } catch {
            return .failure(error)
        }
        guard let responder else { return .failure(.unanswerable("begin")) }
        let label = request.label
        if seg.control.tracker == nil { seg.control.tracker = LiveTracker(since: position) }
        seg.control.tracker!.session = GrowthSession(analysis: responder.makeGrowthAnalysis(options: options),
                                                     label: label, since: position)
        return .success(ControlAnswerText.begin(since: position))
    }

    private func growth(_ seg: Segment, _ request: ControlRequest) -> Result<String, ControlProtocolError> {
        guard let tracker = seg.control.tracker, let session = tracker.session else {
            return .failure(ControlProtocolError("no growth session: send {\"op\":\"begin\"} before the cycles"))
        }
        let base = session.analysis.options
        do {
            let o = try request.growthOptions(base: base)
            if o != base {
                return .failure(ControlProtocolError("analysis options are fixed by \"begin\" (warmUp \(base.warmUp), toleratedMisses \(base.toleratedMisses), minBytesPerCycle \(base.minBytesPerCycle), minObjectsPerCycle \(base.minObjectsPerCycle))"))
            }
        } catch {
            return .failure(error)
        }
        guard let responder else { return .failure(.unanswerable("growth")) }
        if !request.keep { tracker.session = nil }
        return responder.growthAnswer(ControlGrowthSession(analysis: session.analysis, label: session.label,
                                                           marks: session.marks),
                                      segment: view(seg))
    }
}
