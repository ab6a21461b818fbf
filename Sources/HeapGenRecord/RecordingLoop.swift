import CHeapGenSupport
import HeapGenReport
import HeapGenTrace
#if canImport(Glibc)
import Glibc
#endif

/// A trace that was completed (or abandoned), for the closing summary.
struct FinishedTrace {
    var path: String
    var pid: Int32
    var origin: ProcessOrigin
    var events: UInt64
    var bytes: UInt64
    var end: EndRecord
    var badStacks: UInt64
    var undefinedTypes: UInt64
    var badRecords: UInt64
    /// Set when the writer failed: the file is incomplete.
    var failure: String?
    /// Order of acceptance, for the summary.
    var sequence: Int = 0
    /// Bytes of the shim's arena in use at the end (stack nodes, names, modules), for `--stats`.
    var arenaBytes: UInt64 = 0
}

/// The collector proper, on one thread: accepts hellos, drains every live
/// ring round-robin, notices processes that are gone (pidfds) and finishes
/// their traces. Idle waits are `ppoll` on the socket and the pidfds with a
/// short timeout (20 µs doubling to 1 ms) for the rings.
final class RecordingLoop {
    /// One pid the collector has heard from (or the root, from the start).
    final class PidEntry {
        let pid: Int32
        let pidfd: Int32
        /// Images (hellos) seen from this pid so far.
        var images = 0
        /// The accepted segment of its current image, if traced.
        var segment: Segment?

        init(pid: Int32, pidfd: Int32) {
            self.pid = pid
            self.pidfd = pidfd
        }
    }

    let socket: Int32
    let rootPid: Int32
    let paths: TracePaths
    let options: RecordOptions
    let rootExecutable: String
    let collectorPid: Int32 = getpid()

    /// After the root exited and no traced process is left, how long to wait
    /// for late hellos (a child forked just before the root exited) unless
    /// every shim socket is closed.
    static let graceNanoseconds: UInt64 = 100_000_000
    /// After catching up with a producer, wait this long before looking
    /// again: reading slots right behind a producer that is still writing
    /// their cache lines makes both cores bounce the lines (measured: the
    /// target's CPU time varied 1.4–2.6 s on the 20 M-event bench). 256 Ki
    /// slots last ~10 ms at 20 M events/s, so the gap costs no waits.
    static let chaseGap: Int = 200_000
    static let minBackoff: Int = 20_000
    static let maxBackoff: Int = 1_000_000

    private(set) var pids: [Int32: PidEntry] = [:]
    private(set) var live: [Segment] = []
    private(set) var finished: [FinishedTrace] = []
    private(set) var rootStatus: ExitStatus?
    private(set) var acceptedCount = 0
    private(set) var helloCount = 0
    /// Slots drained by the loop (not counting final drains) and the time spent on them.
    private(set) var slotsDrained: UInt64 = 0
    private(set) var drainNanoseconds: UInt64 = 0
    private var usedPaths: Set<String> = []
    private var rootImageSeen = false
    private var socketOpen = true
    private var rootExitTime: UInt64 = 0
    private var lastHelloTime: UInt64 = 0
    private var signalsAtRootExit: UInt32 = 0
    private let drainer = SegmentDrainer()
    private var pollSet: [pollfd] = []
    private var pollOwners: [Int32] = [] // pid per pollSet entry; -1 for the socket
    private var pollDirty = true

    init(socket: Int32, rootPid: Int32, rootPidfd: Int32, paths: TracePaths, options: RecordOptions, rootExecutable: String) {
        self.socket = socket
        self.rootPid = rootPid
        self.paths = paths
        self.options = options
        self.rootExecutable = rootExecutable
        let root = PidEntry(pid: rootPid, pidfd: rootPidfd)
        pids[rootPid] = root
    }

    // MARK: - Collector marks

    /// Label of the mark `--settle` puts after the program's last mark; the
    /// analysis takes its final snapshot there.
    public static let settleLabel = "heapgen.settle"
    private var nextTimedMark: UInt64 = 0
    private var timedMarks = 0

    /// Time-based generations and settle marks go into the root image's ring
    /// as one more producer, so they are ordered with its allocations.
    private func produceTimedMarks() {
        guard options.markEveryNanoseconds > 0 || options.settleNanoseconds > 0,
              let seg = live.first(where: { $0.origin == .root }) else { return }
        let now = monotonicNanoseconds()
        if let pending = seg.pendingMark {
            guard hg_produce_mark(seg.raw, pending.label, pending.origin) == 0 else { return }
            seg.pendingMark = nil
        }
        if options.markEveryNanoseconds > 0 {
            if nextTimedMark == 0 { nextTimedMark = now + options.markEveryNanoseconds }
            if now >= nextTimedMark {
                timedMarks += 1
                nextTimedMark += options.markEveryNanoseconds
                let label = "every \(HumanUnits.duration(nanoseconds: options.markEveryNanoseconds)) #\(timedMarks)"
                if hg_produce_mark(seg.raw, label, 1) != 0 { seg.pendingMark = (label, 1) }
            }
        }
        if options.settleNanoseconds > 0, let due = seg.settleDue, now >= due + options.settleNanoseconds {
            seg.settleDue = nil
            if hg_produce_mark(seg.raw, Self.settleLabel, 1) != 0 { seg.pendingMark = (Self.settleLabel, 1) }
        }
    }

    // MARK: - The loop

    func run() {
        var backoff = Self.minBackoff
        var busy = false
        while true {
            // 1. Wait (or just look) for hellos and exits.
            let timeout: Int // nanoseconds, -1 forever
            if busy {
                timeout = 0
            } else if rootStatus != nil && live.isEmpty {
                let since = max(rootExitTime, lastHelloTime)
                let now = monotonicNanoseconds()
                timeout = now >= since + Self.graceNanoseconds ? 0 : Int(since + Self.graceNanoseconds - now)
            } else if live.isEmpty {
                timeout = -1
            } else {
                timeout = backoff
            }
            waitForEvents(timeoutNanoseconds: timeout)

            // 2. Hellos first, so that a child's hello queued before its parent exited is not missed.
            if socketOpen, let idx = pollOwners.firstIndex(of: -1), pollSet[idx].revents != 0 {
                acceptQueued()
            }
            // 3. Processes that are gone: final drain, finish their traces.
            for (i, owner) in pollOwners.enumerated() where owner >= 0 && pollSet[i].revents != 0 {
                // The entry may have been replaced while accepting (a reused pid): check again.
                if let entry = pids[owner], entry.pidfd == pollSet[i].fd, hg_pidfd_exited(entry.pidfd) == 1 {
                    processGone(entry)
                }
            }
            // 4. Drain every live ring once.
            var drained = 0
            let t0 = monotonicNanoseconds()
            for seg in live { drained += drainer.drain(seg) }
            if drained > 0 {
                drainNanoseconds &+= monotonicNanoseconds() - t0
                slotsDrained &+= UInt64(drained)
            }
            // Only a full batch means more is waiting right now.
            busy = drained >= SegmentDrainer.batchSize * live.count && drained > 0
            if busy {
                backoff = Self.minBackoff
            } else if drained > 0 {
                backoff = Self.chaseGap
            } else {
                backoff = min(backoff * 2, Self.maxBackoff)
            }

            // 5. Collector marks (--mark-every, --settle) into the program's ring.
            produceTimedMarks()

            // 6. Done?
            if rootStatus != nil {
                if hg_signal_count() != signalsAtRootExit {
                    stopAll()
                    break
                }
                if live.isEmpty {
                    let since = max(rootExitTime, lastHelloTime)
                    if !socketOpen || monotonicNanoseconds() >= since + Self.graceNanoseconds { break }
                }
            }
        }
        declineQueued()
        close(socket)
        for (_, entry) in pids { close(entry.pidfd) }
        pids.removeAll()
    }

    /// At most this many warnings about bad hellos are printed.
    static let maxWarnings = 10
    private var warnings = 0

    private func warn(_ text: String) {
        warnings += 1
        if warnings <= Self.maxWarnings {
            printDiagnostic("warning: " + text)
        } else if warnings == Self.maxWarnings + 1 {
            printDiagnostic("warning: more bad messages from traced processes; not reporting them any more")
        }
    }

    /// ppoll on the socket and every pidfd; fills revents.
    private func waitForEvents(timeoutNanoseconds: Int) {
        if pollDirty {
            pollSet.removeAll(keepingCapacity: true)
            pollOwners.removeAll(keepingCapacity: true)
            if socketOpen {
                pollSet.append(pollfd(fd: socket, events: Int16(POLLIN), revents: 0))
                pollOwners.append(-1)
            }
            for (pid, entry) in pids {
                pollSet.append(pollfd(fd: entry.pidfd, events: Int16(POLLIN), revents: 0))
                pollOwners.append(pid)
            }
            pollDirty = false
        }
        for i in pollSet.indices { pollSet[i].revents = 0 }
        let rc = pollSet.withUnsafeMutableBufferPointer { buf in
            hg_poll_ns(buf.baseAddress, UInt(buf.count), Int64(timeoutNanoseconds))
        }
        if rc < 0 {
            for i in pollSet.indices { pollSet[i].revents = 0 }
        }
    }

    // MARK: - Hellos

    private func acceptQueued() {
        var hello = hg_hello()
        var fd: Int32 = -1
        var sender: Int32 = 0
        var err = [CChar](repeating: 0, count: 256)
        while true {
            let rc = hg_recv_hello(socket, 0, &hello, &fd, &sender, &err, err.count)
            switch Int(rc) {
            case Int(HG_RECV_OK.rawValue):
                helloCount += 1
                lastHelloTime = monotonicNanoseconds()
                accept(hello: hello, fd: fd)
            case Int(HG_RECV_MALFORMED.rawValue):
                warn("ignored a malformed message from a traced process: \(cString(err))")
            case Int(HG_RECV_EOF.rawValue):
                socketOpen = false
                pollDirty = true
                return
            case Int(HG_RECV_ERROR.rawValue):
                printDiagnostic("warning: \(cString(err))")
                socketOpen = false
                pollDirty = true
                return
            default:
                return
            }
        }
    }

    /// Validates, maps and classifies one segment, and answers the shim.
    private func accept(hello: hg_hello, fd: Int32) {
        var hello = hello
        let raw = UnsafeMutablePointer<hg_segment>.allocate(capacity: 1)
        var err = [CChar](repeating: 0, count: 256)
        guard hg_segment_open(fd, &hello, raw, &err, err.count) == 0 else {
            close(fd)
            raw.deallocate()
            warn("refused the segment of process \(hello.pid): \(cString(err))")
            return
        }
        let pid = raw.pointee.pid

        // A pid we knew, whose process is gone: the pid was reused.
        if let old = pids[pid], hg_pidfd_exited(old.pidfd) == 1 {
            processGone(old)
        }
        let origin: ProcessOrigin
        let traced: Bool
        if hello.origin == HG_ORIGIN_FORK.rawValue {
            origin = .fork
            traced = options.followFork
        } else if pid == rootPid && !rootImageSeen && (pids[pid]?.images ?? 0) == 0 {
            origin = .root
            traced = true
            rootImageSeen = true
        } else {
            origin = .exec
            traced = options.followExec
        }

        let entry: PidEntry
        if let existing = pids[pid] {
            entry = existing
        } else {
            let pidfd = hg_pidfd_open(pid)
            guard pidfd >= 0 else { // gone already: nothing will be written
                decline(raw)
                return
            }
            entry = PidEntry(pid: pid, pidfd: pidfd)
            pids[pid] = entry
            pollDirty = true
        }
        // A new image of a pid we trace: the old image is gone (exec).
        if let old = entry.segment {
            finish(old, entry: entry, status: origin == .fork ? .unknown : .execed, final: true)
        }
        var image = entry.images
        entry.images += 1
        guard traced else {
            decline(raw)
            return
        }
        var path = paths.path(pid: pid, image: image, isRoot: origin == .root)
        while usedPaths.contains(path) { // a reused pid
            image += 1
            path = paths.path(pid: pid, image: image, isRoot: false)
        }

        let identity = ProcessIdentity.read(pid: pid)
        var executable = identity.executable
        if executable.isEmpty && origin == .root { executable = rootExecutable }
        let process = ProcessRecord(pid: pid, ppid: raw.pointee.ppid, origin: origin, executable: executable,
                                    arguments: identity.arguments, startUnixNanoseconds: wallClockNanoseconds())
        let writer: TraceWriter
        do {
            writer = try TraceWriter(path: path, process: process)
        } catch {
            printDiagnostic("cannot write the trace \(path): \(error)")
            finished.append(FinishedTrace(path: path, pid: pid, origin: origin, events: 0, bytes: 0,
                                          end: EndRecord(reason: .unknown), badStacks: 0, undefinedTypes: 0,
                                          badRecords: 0, failure: "\(error)"))
            decline(raw)
            return
        }
        usedPaths.insert(path)
        let seg = Segment(raw: raw, origin: origin, image: image, path: path, writer: writer)
        seg.sequence = acceptedCount
        // --leaks: know every block from the first allocation on, for the scan at exit.
        if options.scanLeaks { seg.control.tracker = LiveTracker(since: 0) }
        hg_segment_answer(raw, collectorPid, UInt32(HG_STATE_ACCEPTED.rawValue))
        entry.segment = seg
        live.append(seg)
        acceptedCount += 1
    }

    private func decline(_ raw: UnsafeMutablePointer<hg_segment>) {
        hg_segment_answer(raw, collectorPid, UInt32(HG_STATE_DECLINED.rawValue))
        hg_segment_close(raw)
        raw.deallocate()
    }

    /// Answers DECLINED to hellos still queued when the recording ends, so
    /// their shims do not wait for an answer.
    private func declineQueued() {
        guard socketOpen else { return }
        var hello = hg_hello()
        var fd: Int32 = -1
        var sender: Int32 = 0
        var err = [CChar](repeating: 0, count: 256)
        while hg_recv_hello(socket, 0, &hello, &fd, &sender, &err, err.count) == HG_RECV_OK.rawValue {
            let raw = UnsafeMutablePointer<hg_segment>.allocate(capacity: 1)
            if hg_segment_open(fd, &hello, raw, &err, err.count) == 0 {
                decline(raw)
            } else {
                close(fd)
                raw.deallocate()
            }
        }
    }

    // MARK: - Process ends

    /// The process behind `entry` is gone: finish its trace, reap the root.
    private func processGone(_ entry: PidEntry) {
        var status = ExitStatus.unknown
        if entry.pid == rootPid {
            status = reapRoot()
        } else {
            // Not our child: its parent reaps it. Until then /proc shows its status.
            var signaled: Int32 = 0
            var code: Int32 = 0
            if hg_pidfd_exited(entry.pidfd) == 1, hg_zombie_status(entry.pid, &signaled, &code) == 1 {
                status = signaled != 0 ? .signaled(code) : .exited(code)
            }
        }
        if let seg = entry.segment {
            finish(seg, entry: entry, status: status, final: true)
        }
        close(entry.pidfd)
        pids[entry.pid] = nil
        pollDirty = true
    }

    private func reapRoot() -> ExitStatus {
        if let rootStatus { return rootStatus }
        var signaled: Int32 = 0
        var code: Int32 = 0
        let rc = hg_reap(rootPid, 1, &signaled, &code)
        let status: ExitStatus = rc == 1 ? (signaled != 0 ? .signaled(code) : .exited(code)) : .unknown
        rootStatus = status
        rootExitTime = monotonicNanoseconds()
        signalsAtRootExit = hg_signal_count()
        return status
    }

    /// Drains what is left and writes the end record.
    private func finish(_ seg: Segment, entry: PidEntry, status: ExitStatus, final: Bool) {
        if final {
            drainer.drainFinal(seg)
        } else {
            while drainer.drain(seg) > 0 {}
        }
        let c = seg.counters()
        let end = EndRecord(reason: status.reason, status: status.status,
                            producerWaits: c.wait_count, producerWaitNanoseconds: c.wait_ns,
                            lostEvents: c.lost_events, tornEvents: seg.torn, arenaFull: c.arena_full,
                            freeNullCalls: c.free_null, unwindFallbacks: c.unwind_fallbacks,
                            stacksLost: c.stacks_lost)
        var failure: String?
        do {
            try seg.writer.finish(end)
        } catch {
            failure = "\(error)"
        }
        if failure == nil, let f = seg.writer.failure { failure = f.description }
        finished.append(FinishedTrace(path: seg.path, pid: seg.pid, origin: seg.origin,
                                      events: seg.writer.eventCount, bytes: seg.writer.bytesWritten, end: end,
                                      badStacks: seg.badStacks, undefinedTypes: seg.undefinedTypes,
                                      badRecords: seg.badRecords, failure: failure, sequence: seg.sequence,
                                      arenaBytes: min(c.arena_used, seg.raw.pointee.arena_size)))
        entry.segment = nil
        live.removeAll { $0 === seg }
    }

    /// heapgen was asked to stop after the program exited: finish every trace
    /// now and let the remaining processes run on untraced.
    private func stopAll() {
        for seg in live {
            hg_segment_detach(seg.raw)
            if let entry = pids[seg.pid] {
                finish(seg, entry: entry, status: .stopped, final: false)
            }
        }
    }
}
