import CHeapGenCollector
import HeapGenTrace
import HeapGenUnits
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
    /// Why the recording of this process stopped early, for the closing lines (the program
    /// wrote over its segment).
    var stoppedEarly: String?
    /// Some shim counter was out of range and was dropped before it was written.
    var droppedCounters = false
    /// The image exited without asking for the exit scan it was recorded for.
    var missedExitScan = false
    /// The image installed a seccomp filter (see ``ShimCounters/sandboxed``).
    var sandboxed = false
    /// The errno of each fork whose child ran untraced (the shim could not connect for it).
    var untracedForks: [Int32] = []
    /// Bytes of the shim's arena in use at the end (stack nodes, names, modules), for `--stats`.
    var arenaBytes: UInt64 = 0
    /// With ``RecordOptions/storeSymbols``: the trace's distinct frame addresses and its
    /// modules, symbolicated once the recording is over (``RecordServices/storeSymbols(in:)``).
    var frameAddresses: Set<UInt64> = []
    var modules: [ModuleRecord] = []
}

/// The collector proper, on one thread: accepts connections and their
/// hellos, drains every live ring round-robin, notices processes that are
/// gone (pidfds) and finishes their traces. Idle waits are `ppoll` on the
/// listening socket, the connections still owing a hello and the pidfds,
/// with a short timeout (20 µs doubling to 1 ms) for the rings.
final class RecordingLoop {
    /// One pid the collector has heard from (or the root, from the start).
    final class PidEntry {
        let pid: Int32
        let pidfd: Int32
        /// Images (hellos) seen from this pid so far.
        var images = 0
        /// The accepted segment of its current image, if traced.
        var segment: Segment?
        /// The memfd of its current segment (st_dev, st_ino): no longer mapped
        /// while the process lives means the image exec'd.
        var segmentFile: (dev: UInt64, ino: UInt64) = (0, 0)
        /// When ``checkExec(_:now:)`` last read its mappings.
        var execCheckTime: UInt64 = 0

        init(pid: Int32, pidfd: Int32) {
            self.pid = pid
            self.pidfd = pidfd
        }
    }

    /// The listening socket (heapgen_protocol.h, "Transport").
    let listener: Int32
    let rootPid: Int32
    let paths: TracePaths
    let options: RecordOptions
    let rootExecutable: String
    let collectorPid: Int32 = getpid()

    /// After the root exited and no traced process is left, how long to wait
    /// for late connections (a program a leftover vfork child exec'd) while
    /// a process started with our socket's path is still around. A forked
    /// child's connection is made before fork() returns in its parent, so
    /// it is never late.
    static let graceNanoseconds: UInt64 = 100_000_000
    /// After the root exited, how long traced processes it left running may keep
    /// recording going before heapgen says what it waits for (a detached child, a daemon
    /// the program started): a silent wait looks like a hang.
    static let waitingNoticeNanoseconds: UInt64 = 2_000_000_000

    /// The one line that says heapgen waits for processes the program left running.
    static func waitingNotice(root: Int32, left: [Int32]) -> String {
        let pids = left.prefix(5).map(String.init).joined(separator: ", ") + (left.count > 5 ? ", …" : "")
        let which = left.count == 1 ? "the process it left running (pid \(pids)) ends"
                                    : "the \(left.count) processes it left running (pids \(pids)) end"
        return "the program (pid \(root)) exited; recording goes on until \(which) "
            + "(SIGINT or SIGTERM to heapgen stops it now)"
    }
    /// How long a process whose end we saw, but not its status, waits for
    /// its parent's HG_K_CHILD_EXIT record (the parent reaped it at once)
    /// while that parent is traced and alive: it sends the record right
    /// after its wait call returned, unless it is descheduled.
    static let statusWaitNanoseconds: UInt64 = 2_000_000_000
    /// After catching up with a producer, wait this long before looking
    /// again: reading slots right behind a producer that is still writing
    /// their cache lines makes both cores bounce the lines (measured: the
    /// target's CPU time varied 1.4–2.6 s on the 20 M-event bench). 256 Ki
    /// slots last ~10 ms at 20 M events/s, so the gap costs no waits.
    static let chaseGap: Int = 200_000
    /// How often an image's mappings are read for an exec: soon after its HG_K_EXEC
    /// record, and now and then otherwise (reading /proc/PID/maps costs up to a
    /// millisecond on a large program).
    static let execCheckAfterRecord: UInt64 = 2_000_000
    static let execCheckIdle: UInt64 = 1_000_000_000
    /// An untraced exec'd program killed by a signal this soon after its exec is named
    /// as killed before heapgen could start in it, not as one that could not load it.
    static let killedBeforeHelloNanoseconds: UInt64 = 1_000_000_000
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
    /// Accepted connections that have not said hello yet (fd -> when accepted).
    private var pending: [Int32: UInt64] = [:]
    /// Statuses reported by parents that reaped a child (HG_K_CHILD_EXIT), by pid.
    private var reportedStatus: [Int32: ExitStatus] = [:]
    /// Processes gone whose status is not known yet: wait a little for the parent's report.
    private var awaitingStatus: [(entry: PidEntry, deadline: UInt64)] = []
    /// `HEAPGEN_SOCK=<path>` as the program got it, to look for late starters.
    var socketEntry: String?
    private var lateStarterCheck: UInt64 = 0
    private var rootExitTime: UInt64 = 0
    /// The waiting notice was given (``waitingNotice(root:left:)``).
    private var saidWaiting = false
    private var lastHelloTime: UInt64 = 0
    private var signalsAtRootExit: UInt32 = 0
    /// When heapgen first got SIGINT, SIGQUIT, SIGTERM or SIGHUP while the program ran (0: not yet).
    private var firstSignalTime: UInt64 = 0
    private var signalsAtFirst: UInt32 = 0
    /// The signal after which heapgen stopped waiting for a program that did not exit
    /// (``signalGraceNanoseconds``); nil if it did not.
    private(set) var gaveUpAfterSignal: Int32?
    /// With ``gaveUpAfterSignal`` after the program's own process had exited: the traced
    /// processes it left running (a daemon), which run on untraced.
    private(set) var untracedAtStop: [Int32] = []
    /// After heapgen gets SIGINT/SIGQUIT/SIGTERM/SIGHUP (the program got it too, from the
    /// terminal, or forwarded), how long it waits for the program to exit before it stops
    /// recording and lets it run on untraced. A second signal, a second or more after the
    /// first, stops at once.
    static let signalGraceNanoseconds: UInt64 = 10_000_000_000
    static let secondSignalNanoseconds: UInt64 = 1_000_000_000
    private let drainer = SegmentDrainer()
    private var pollSet: [pollfd] = []
    private enum PollOwner { case listener, connection(Int32), process(Int32) }
    private var pollOwners: [PollOwner] = []
    private var pollDirty = true

    init(listener: Int32, rootPid: Int32, rootPidfd: Int32, paths: TracePaths, options: RecordOptions, rootExecutable: String,
         responder: (any ControlResponder)?, moduleMapped: ((ModuleRecord) -> Void)? = nil) {
        drainer.controlChannel.responder = responder
        drainer.moduleMapped = moduleMapped
        self.listener = listener
        self.rootPid = rootPid
        self.paths = paths
        self.options = options
        self.rootExecutable = rootExecutable
        let root = PidEntry(pid: rootPid, pidfd: rootPidfd)
        pids[rootPid] = root
        drainer.childExited = { [unowned self] parent, pid, raw in
            guard let pid = self.collectorPid(pid, reportedBy: parent) else { return }
            let status = ExitStatus.fromWaitStatus(raw)
            self.reportedStatus[pid] = status
            self.noteEarlyKill(pid, status: status)
        }
        drainer.childExec = { [unowned self] parent, pid, name in
            guard parent.namespaceDepth == 0, options.followExec, !self.helloPids.contains(pid) else { return }
            self.untracedExecs[pid] = name
        }
    }

    // MARK: - Collector marks

    /// Label of the mark `--settle` puts after the program's last mark; the
    /// analysis takes its final snapshot there.
    public static let settleLabel = "heapgen.settle"
    private var nextTimedMark: UInt64 = 0
    private var timedMarks = 0

    /// Time-based generations and settle marks go into the ring of every traced image, as
    /// one more producer, so they are ordered with its allocations: the root image, the
    /// program it exec'd (`env PORT=8086 ./server`), forked children and what they exec'd,
    /// as `heapgen mark` and in-program marks reach them. Every image gets the same tick
    /// labels (`every 1s #3`), so the traces of one run line up; an image that starts later
    /// starts at a later tick. A mark that finds a ring full (these, and `heapgen mark`'s
    /// requests) waits in that image's queue (kept in order) and is retried on the next
    /// turn of the loop.
    private func produceCollectorMarks() {
        guard !live.isEmpty else { return }
        let now = monotonicNanoseconds()
        var tick: String?
        if options.markEveryNanoseconds > 0 {
            if nextTimedMark == 0 { nextTimedMark = now + options.markEveryNanoseconds }
            if now >= nextTimedMark {
                timedMarks += 1
                nextTimedMark += options.markEveryNanoseconds
                tick = "every \(HumanUnits.duration(nanoseconds: options.markEveryNanoseconds)) #\(timedMarks)"
            }
        }
        for seg in live {
            // A process that has exited (its status still awaited from its parent) makes no
            // more cycles: a tick there made cycles of a child that lived a few milliseconds.
            if seg.exited { continue }
            if let tick { seg.pendingMarks.append((tick, 1)) }
            if options.settleNanoseconds > 0, let due = seg.settleDue, now >= due + options.settleNanoseconds {
                seg.settleDue = nil
                seg.pendingMarks.append((Self.settleLabel, 1))
            }
            publishPendingMarks(seg)
        }
    }

    private let startNanoseconds = monotonicNanoseconds()
    private var lastProgress: UInt64 = 0

    /// Tells ``RecordOptions/progress`` how far the recording is, at most 4 times a second.
    /// `done`: the last call, once the loop has ended (the line can go).
    private func reportProgress(done: Bool = false) {
        guard let progress = options.progress else { return }
        let now = monotonicNanoseconds()
        guard done || now - lastProgress >= 250_000_000 else { return }
        lastProgress = now
        var status = RecordingStatus(elapsedNanoseconds: now - startNanoseconds, liveProcesses: live.count,
                                     traces: live.count + finished.count, events: 0, bytesWritten: 0, done: done)
        for seg in live {
            status.events &+= seg.writer.eventCount
            status.bytesWritten &+= seg.writer.bytesWritten
        }
        for trace in finished {
            status.events &+= trace.events
            status.bytesWritten &+= trace.bytes
        }
        progress(status)
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
            } else if !awaitingStatus.isEmpty {
                timeout = live.isEmpty ? 1_000_000 : min(backoff, 1_000_000)
            } else if rootStatus != nil && live.isEmpty {
                let since = max(rootExitTime, lastHelloTime)
                let now = monotonicNanoseconds()
                timeout = now >= since + Self.graceNanoseconds ? 0 : Int(since + Self.graceNanoseconds - now)
            } else if live.isEmpty {
                timeout = -1
            } else {
                timeout = backoff
            }
            waitForEvents(timeoutNanoseconds: firstSignalTime == 0 ? timeout : min(timeout < 0 ? Int.max : timeout, 100_000_000))

            // 2. Connections and hellos first, so that a child's hello queued before its parent exited is not missed.
            var gone: [PidEntry] = []
            for (i, owner) in pollOwners.enumerated() where pollSet[i].revents != 0 {
                switch owner {
                case .listener: acceptConnections()
                case .connection(let fd): if pending[fd] != nil { readHello(fd) }
                case .process(let pid):
                    if let entry = pids[pid], entry.pidfd == pollSet[i].fd { gone.append(entry) }
                }
            }
            // 3. Processes that are gone: final drain, finish their traces.
            for entry in gone {
                // The entry may have been replaced while accepting (a reused pid): check again.
                if pids[entry.pid] === entry, hg_pidfd_exited(entry.pidfd) == 1 {
                    processGone(entry)
                }
            }
            finishAwaited(force: false)
            // 4. Drain every live ring once.
            var drained = 0
            let t0 = monotonicNanoseconds()
            for seg in live { drained += drainer.drain(seg) }
            let t1 = monotonicNanoseconds()
            if drained > 0 {
                drainNanoseconds &+= t1 - t0
                slotsDrained &+= UInt64(drained)
            }
            // 4a. Images that exec'd a program which did not say hello.
            for seg in live {
                if let entry = pids[seg.pid], entry.segment === seg { checkExec(entry, now: t1) }
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

            // 4b. A program that wrote over its own segment: stop recording it.
            if live.contains(where: { $0.watch.corruption != nil }) {
                for seg in live where seg.watch.corruption != nil { abandonCorrupt(seg) }
            }

            // 5. Collector marks (--mark-every, --settle, queued `heapgen mark`) into the program's ring.
            produceCollectorMarks()
            reportProgress()

            // 5b. Signalled while the program runs: give it time to exit, then stop waiting.
            if rootStatus == nil, hg_signal_count() != 0 {
                let now = monotonicNanoseconds()
                if firstSignalTime == 0 {
                    firstSignalTime = now
                    signalsAtFirst = hg_signal_count()
                } else if now - firstSignalTime >= Self.signalGraceNanoseconds
                            || (hg_signal_count() != signalsAtFirst && now - firstSignalTime >= Self.secondSignalNanoseconds) {
                    gaveUpAfterSignal = hg_last_signal()
                    stopAll()
                    break
                }
            }

            // 6. Done?
            if rootStatus != nil {
                if hg_signal_count() != signalsAtRootExit {
                    // The program's own process is gone (a daemon's launcher): what it
                    // started stops being recorded, and heapgen says so.
                    if !live.isEmpty {
                        gaveUpAfterSignal = hg_last_signal()
                        untracedAtStop = live.map(\.pid)
                    }
                    stopAll()
                    break
                }
                if !live.isEmpty && !saidWaiting && monotonicNanoseconds() - rootExitTime >= Self.waitingNoticeNanoseconds {
                    saidWaiting = true
                    printDiagnostic(Self.waitingNotice(root: rootPid, left: live.map(\.pid)))
                }
                if live.isEmpty && awaitingStatus.isEmpty && pending.isEmpty {
                    let since = max(rootExitTime, lastHelloTime)
                    if monotonicNanoseconds() >= since + Self.graceNanoseconds { break }
                    // No process left that was started with our socket's path: nobody can come.
                    if since != lateStarterCheck {
                        lateStarterCheck = since
                        if let entry = socketEntry, hg_any_process_has_env(entry) == 0 { break }
                    }
                }
            }
        }
        finishAwaited(force: true)
        reportProgress(done: true)
        declineQueued()
        for (_, entry) in pids {
            close(entry.pidfd)
        }
        pids.removeAll()
    }

    /// Traced images that exec'd a program which never said hello, by pid: that program
    /// (its name when the exec was seen, else the one the exec record gave). Its process
    /// ran untraced from the exec on; a hello from the pid later takes it off.
    private(set) var untracedExecs: [Int32: Segment.ExecedProgram] = [:]
    /// Every pid that said hello in this recording (a record of a child's exec may be read
    /// after the program it exec'd said hello, or even ended).
    private var helloPids = Set<Int32>()

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
            pollSet.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0))
            pollOwners.append(.listener)
            for (fd, _) in pending {
                pollSet.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0))
                pollOwners.append(.connection(fd))
            }
            for (pid, entry) in pids {
                pollSet.append(pollfd(fd: entry.pidfd, events: Int16(POLLIN), revents: 0))
                pollOwners.append(.process(pid))
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

    /// Accepts every queued connection and reads the hellos already there.
    private func acceptConnections() {
        while true {
            var fd: Int32 = -1
            var peer: Int32 = 0
            let rc = hg_rendezvous_accept(listener, &fd, &peer)
            if rc == 0 { return }
            if rc == -EPERM {
                warn("refused a connection from process \(peer): it runs as another user")
                continue
            }
            if rc < 0 {
                if rc != -EMFILE && rc != -ENFILE { printDiagnostic("warning: accept: \(errorString(-rc))") }
                return
            }
            pending[fd] = monotonicNanoseconds()
            pollDirty = true
            readHello(fd)
        }
    }

    /// Reads the hello (or `heapgen mark`'s request) on a pending connection, if it came.
    private func readHello(_ conn: Int32) {
        var hello = hg_hello()
        var fd: Int32 = -1
        var sender: Int32 = 0
        var mark = hg_mark_request()
        var askerUID: UInt32 = 0
        var err = [CChar](repeating: 0, count: 256)
        let rc = hg_recv_message(conn, 0, &hello, &fd, &sender, &mark, &askerUID, &err, err.count)
        switch Int(rc) {
        case Int(HG_RECV_MARK.rawValue):
            answerMark(mark, askerUID: askerUID, on: conn)
        case Int(HG_RECV_OK.rawValue):
            pending[conn] = nil
            pollDirty = true
            helloCount += 1
            lastHelloTime = monotonicNanoseconds()
            accept(hello: hello, sender: sender, fd: fd, connection: conn)
        case Int(HG_RECV_AGAIN.rawValue):
            return
        case Int(HG_RECV_MALFORMED.rawValue):
            warn("ignored a malformed message from a traced process: \(cString(err))")
            dropPending(conn)
        case Int(HG_RECV_ERROR.rawValue):
            printDiagnostic("warning: \(cString(err))")
            dropPending(conn)
        default:
            // Closed without a hello: a liveness probe, or a child that went untraced.
            dropPending(conn)
        }
    }

    /// Whether `entry`'s traced image exec'd into a program that did not say hello (not
    /// followed, or untraced): its segment's memfd is no longer mapped in the living
    /// process. Looked for every ``execCheckAfterRecord`` after the image's HG_K_EXEC
    /// record, and every ``execCheckIdle`` otherwise (an exec by raw system call); a
    /// traced program's hello tells sooner (``accept``).
    private func checkExec(_ entry: PidEntry, now: UInt64) {
        guard let seg = entry.segment else { return }
        let interval = seg.execing != nil ? Self.execCheckAfterRecord : Self.execCheckIdle
        guard now &- entry.execCheckTime >= interval else { return }
        entry.execCheckTime = now
        guard hg_pidfd_exited(entry.pidfd) == 0,
              hg_maps_contain(entry.pid, entry.segmentFile.dev, entry.segmentFile.ino) == 0 else { return }
        imageExeced(seg, entry: entry)
    }

    /// `seg`'s image exec'd: its trace ends so. The new image says hello before it runs
    /// anything, unless it is not preloaded: it is noted as untraced until it does.
    private func imageExeced(_ seg: Segment, entry: PidEntry) {
        finish(seg, entry: entry, status: .execed, final: true)
        guard options.followExec else { return }
        let name = Self.commandName(entry.pid)
        untracedExecs[entry.pid] = Segment.ExecedProgram(name: name.isEmpty ? (seg.execing?.name ?? "") : name,
                                                         environmentDropped: seg.execing?.environmentDropped ?? false,
                                                         execNanoseconds: monotonicNanoseconds())
    }

    /// /proc/PID/comm without its newline; "" when unreadable.
    static func commandName(_ pid: Int32) -> String {
        var buf = [CChar](repeating: 0, count: 64)
        let n = hg_read_proc_file(pid, "comm", &buf, buf.count - 1)
        guard n > 0 else { return "" }
        var name = cString(buf)
        while name.last == "\n" { name.removeLast() }
        return name
    }

    /// Publishes `seg`'s queued marks, in order, while its ring has room.
    private func publishPendingMarks(_ seg: Segment) {
        while let next = seg.pendingMarks.first, hg_produce_mark(seg.raw, next.label, next.origin) == 0 {
            seg.pendingMarks.removeFirst()
        }
    }

    /// `heapgen mark PID` asked for a mark: queued into that process's traced image, as
    /// one more producer of its ring, if the asker may (root, or the process's user).
    private func answerMark(_ request: hg_mark_request, askerUID: UInt32, on conn: Int32) {
        var answer: Int32 = -ESRCH
        if let entry = pids[request.pid], let seg = entry.segment, hg_pidfd_exited(entry.pidfd) == 0 {
            var st = stat()
            if stat("/proc/\(request.pid)", &st) == 0, askerUID == 0 || askerUID == st.st_uid {
                let label = withUnsafeBytes(of: request.label) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                seg.pendingMarks.append((label, 2))
                publishPendingMarks(seg)
                answer = 0
            } else {
                answer = -EPERM
            }
        }
        _ = hg_answer_mark(conn, answer)
        dropPending(conn)
    }

    private func dropPending(_ conn: Int32) {
        pending[conn] = nil
        pollDirty = true
        close(conn)
    }

    /// Validates, maps and classifies one segment, and answers the shim.
    private func accept(hello: hg_hello, sender: Int32, fd: Int32, connection: Int32) {
        var hello = hello
        var file = stat()
        let segmentFile = fstat(fd, &file) == 0 ? (UInt64(file.st_dev), UInt64(file.st_ino)) : (UInt64(0), UInt64(0))
        let raw = UnsafeMutablePointer<hg_segment>.allocate(capacity: 1)
        var err = [CChar](repeating: 0, count: 256)
        guard hg_segment_open(fd, &hello, raw, &err, err.count) == 0 else {
            close(fd)
            close(connection)
            raw.deallocate()
            warn("refused the segment of process \(hello.pid): \(cString(err))")
            return
        }
        // An image in a PID namespace below ours (unshare, bwrap, a container) gave its pid
        // there; the kernel's (SCM_CREDENTIALS) is the one /proc, pidfds and ptrace know.
        var namespacePids: [Int32]?
        if sender > 0 && raw.pointee.pid != sender {
            var list = [pid_t](repeating: 0, count: Int(HG_MAX_PID_NAMESPACES))
            var ppid: pid_t = 0
            let n = Int(hg_namespace_pids(sender, &list, Int32(list.count), &ppid))
            guard n > 1 else {
                // Gone since its hello was checked: its own number must not be watched
                // as ours (pid 1 there is our init).
                decline(raw)
                close(connection)
                return
            }
            namespacePids = Array(list.prefix(n))
            raw.pointee.pid = sender
            raw.pointee.ppid = Self.forkParent(hello: hello, kernelParent: ppid, namespacePids: list.prefix(n),
                                               among: pids.values.compactMap(\.segment))
        }
        let pid = raw.pointee.pid
        untracedExecs[pid] = nil
        helloPids.insert(pid)

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
                close(connection)
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
            close(connection)
            return
        }
        // Allocations the shim cannot follow (CShim/src/nextalloc.c): one line per program image.
        // Kept in the trace too, for a report or gate read from it later.
        var allocNote = [CChar](repeating: 0, count: 512)
        var allocatorWarning: String?
        if origin != .fork && hg_segment_allocator_warning(raw, &allocNote, allocNote.count) == 1 {
            allocatorWarning = cString(allocNote)
            printDiagnostic("warning: " + allocatorWarning!)
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
            close(connection)
            return
        }
        usedPaths.insert(path)
        if let allocatorWarning { writer.recordingWarning(allocatorWarning) }
        writer.keepsSymbolInputs = options.storeSymbols
        let seg = Segment(raw: raw, origin: origin, image: image, path: path, writer: writer)
        seg.namespacePids = namespacePids
        if options.aggregate {
            do {
                try writer.markAggregated()
            } catch {
                printDiagnostic("cannot write the trace \(path): \(error)")
            }
            seg.aggregator = Aggregator()
        }
        seg.sequence = acceptedCount
        // Followed forks: a child starts with the live heap it inherits (InheritedHeap).
        // Made at the first fork from the trace (Segment.materializedLiveHeap), so a program
        // that never forks costs no live map; from the start when a scan or the aggregator
        // needs every block anyway, or when the trace holds no events to replay.
        if options.followFork {
            if options.tracksLiveBlocks || seg.aggregator != nil {
                seg.liveHeap = LiveTracker(since: 0)
            } else {
                seg.replaysLiveHeap = true
            }
        }
        // --leaks: know every block from the first allocation on, for the scan at exit. That
        // is the collector's own live heap when there is one, tracked once for both (an
        // `untrack` only drops the control channel's reference to it) — but not in a forked
        // child, whose own heap starts with the inherited blocks its tracker never counted.
        if options.tracksLiveBlocks {
            seg.control.tracker = origin == .fork ? LiveTracker(since: 0) : seg.liveHeap ?? LiveTracker(since: 0)
        }
        if origin == .fork { inherit(seg, forkID: raw.pointee.parent_fork_id) }
        hg_segment_answer(raw, collectorPid, UInt32(HG_STATE_ACCEPTED.rawValue))
        // Answered: the shim closes its end and keeps no descriptor; so do we.
        close(connection)
        entry.segment = seg
        entry.segmentFile = segmentFile
        entry.execCheckTime = monotonicNanoseconds()
        pollDirty = true
        live.append(seg)
        acceptedCount += 1
    }

    /// The parent (by our pid) of a forked image in a PID namespace below ours whose hello
    /// named its parent by that namespace's pid: the kernel's parent while it is one of ours,
    /// else the traced image with that pid at the child's depth (a daemon's parent, gone
    /// right after the fork, left the child to init, as the kernel now says).
    static func forkParent(hello: hg_hello, kernelParent: pid_t, namespacePids: ArraySlice<pid_t>,
                           among segments: [Segment]) -> pid_t {
        guard hello.origin == HG_ORIGIN_FORK.rawValue,
              !segments.contains(where: { $0.pid == kernelParent }) else { return kernelParent }
        let depth = namespacePids.count - 1
        return segments.first { $0.namespaceDepth == depth && $0.pid(atDepth: depth) == hello.ppid }?.pid ?? kernelParent
    }

    /// Starts a forked child's trace with its parent's live heap at fork `forkID`.
    /// The parent's HG_K_FORK record was published before the fork, so if its
    /// snapshot is not taken yet, it is in the parent's ring: drain up to it.
    private func inherit(_ child: Segment, forkID: UInt64) {
        guard forkID != 0 else { return }
        var heap = drainer.forks.take(pid: child.ppid, forkID: forkID)
        if heap == nil, let parent = pids[child.ppid]?.segment {
            while heap == nil && drainer.drain(parent) > 0 {
                heap = drainer.forks.take(pid: child.ppid, forkID: forkID)
            }
        }
        heap?.start(child)
    }

    private func decline(_ raw: UnsafeMutablePointer<hg_segment>) {
        hg_segment_answer(raw, collectorPid, UInt32(HG_STATE_DECLINED.rawValue))
        hg_segment_close(raw)
        raw.deallocate()
    }

    /// Answers DECLINED to hellos still queued when the recording ends, so
    /// their shims do not wait for an answer.
    private func declineQueued() {
        while true {
            var conn: Int32 = -1
            var peer: Int32 = 0
            let rc = hg_rendezvous_accept(listener, &conn, &peer)
            if rc == 0 || (rc < 0 && rc != -EPERM) { break }
            if rc == 1 { pending[conn] = monotonicNanoseconds() }
        }
        var hello = hg_hello()
        var fd: Int32 = -1
        var sender: Int32 = 0
        var err = [CChar](repeating: 0, count: 256)
        for (conn, _) in pending {
            if hg_recv_hello(conn, 0, &hello, &fd, &sender, &err, err.count) == HG_RECV_OK.rawValue {
                let raw = UnsafeMutablePointer<hg_segment>.allocate(capacity: 1)
                if hg_segment_open(fd, &hello, raw, &err, err.count) == 0 {
                    decline(raw)
                } else {
                    close(fd)
                    raw.deallocate()
                }
            }
            close(conn)
        }
        pending.removeAll()
    }

    // MARK: - Process ends

    /// The collector's pid of a child that `parent` reaped, which the parent's `wait` gave
    /// in the parent's own PID namespace: the traced child known by that number there (the
    /// child may live in a namespace below the parent's). nil for a child heapgen does not
    /// trace, or one another process adopted.
    private func collectorPid(_ pid: Int32, reportedBy parent: Segment) -> Int32? {
        let depth = parent.namespaceDepth
        guard depth > 0 else { return pid }
        let children = pids.values.compactMap(\.segment) + awaitingStatus.compactMap(\.entry.segment)
        return children.first { $0.ppid == parent.pid && $0.pid(atDepth: depth) == pid }?.pid
    }

    /// The process behind `entry` is gone: finish its trace, reap the root.
    private func processGone(_ entry: PidEntry) {
        var status = ExitStatus.unknown
        if entry.pid == rootPid {
            status = reapRoot()
        } else {
            // Not our child: its parent reaps it. Until then /proc shows its
            // status; after, the parent's shim reports it (HG_K_CHILD_EXIT).
            var signaled: Int32 = 0
            var code: Int32 = 0
            if hg_pidfd_exited(entry.pidfd) == 1, hg_zombie_status(entry.pid, &signaled, &code) == 1 {
                status = signaled != 0 ? .signaled(code) : .exited(code)
            } else if let reported = reportedStatus.removeValue(forKey: entry.pid) {
                status = reported
            } else if entry.segment != nil {
                // Reaped already: its parent's report may still be in a ring.
                entry.segment?.exited = true
                pids[entry.pid] = nil
                pollDirty = true
                awaitingStatus.append((entry, monotonicNanoseconds() + Self.statusWaitNanoseconds))
                return
            }
        }
        ended(entry, status: status)
    }

    /// An untraced exec'd program `pid` that a signal ended soon after its exec: named
    /// as killed before heapgen could start in it.
    private func noteEarlyKill(_ pid: Int32, status: ExitStatus) {
        guard status.reason == .signaled, var program = untracedExecs[pid], program.execNanoseconds != 0,
              monotonicNanoseconds() &- program.execNanoseconds < Self.killedBeforeHelloNanoseconds else { return }
        program.killedEarlyBy = status.status
        untracedExecs[pid] = program
    }

    private func ended(_ entry: PidEntry, status: ExitStatus) {
        if entry.segment == nil { noteEarlyKill(entry.pid, status: status) }
        if let seg = entry.segment {
            // Gone before an exec was seen: the status is that of a program it exec'd
            // (untraced) if its last record says it was exec'ing. Not a changed command
            // name: programs name themselves (prctl PR_SET_NAME: Chromium's children,
            // worker processes), and that lost their exit status to a false exec.
            drainer.drainFinal(seg)
            if seg.execing != nil {
                imageExeced(seg, entry: entry)
            } else {
                // Nobody reported how it ended (a parent that ignores SIGCHLD, a raw wait4):
                // the status it gave exit() is the one it exited with.
                let known = status == .unknown ? seg.exitAnnounced.map(ExitStatus.exited) ?? status : status
                finish(seg, entry: entry, status: known, final: true)
            }
        }
        close(entry.pidfd)
        if pids[entry.pid] === entry { pids[entry.pid] = nil }
        reportedStatus[entry.pid] = nil
        pollDirty = true
    }

    /// Finishes the processes waiting for their parent's report once it came
    /// (the rings were drained since), or when their time is up or `force`.
    private func finishAwaited(force: Bool) {
        guard !awaitingStatus.isEmpty else { return }
        let now = monotonicNanoseconds()
        var still: [(entry: PidEntry, deadline: UInt64)] = []
        for item in awaitingStatus {
            // Only a traced parent reports (its trace's final drain is done when it is gone).
            let parent = item.entry.segment?.ppid
            let parentTraced = live.contains { $0.pid == parent && $0 !== item.entry.segment }
            if let reported = reportedStatus.removeValue(forKey: item.entry.pid) {
                ended(item.entry, status: reported)
            } else if force || now >= item.deadline || !parentTraced {
                ended(item.entry, status: .unknown)
            } else {
                still.append(item)
            }
        }
        awaitingStatus = still
    }

    private func reapRoot() -> ExitStatus {
        if let rootStatus { return rootStatus }
        var signaled: Int32 = 0
        var code: Int32 = 0
        let rc = hg_reap(rootPid, 1, &signaled, &code)
        let status: ExitStatus = rc == 1 ? (signaled != 0 ? .signaled(code) : .exited(code)) : .unknown
        rootStatus = status
        rootExitTime = monotonicNanoseconds()
        // Reaped: its pid may be reused, so signals are no longer passed to it.
        hg_set_forward_target(0)
        signalsAtRootExit = hg_signal_count()
        return status
    }

    /// How ``finish`` empties a ring before the end record.
    private enum Drain {
        /// The process image is gone: everything, torn slots skipped.
        case final
        /// It runs on: what is published now.
        case published
        /// It wrote over its segment: what is published after our tail, up to one ring.
        case rescue
    }

    /// Drains what is left and writes the end record.
    private func finish(_ seg: Segment, entry: PidEntry, status: ExitStatus, final: Bool) {
        finish(seg, entry: entry, status: status, drain: final ? .final : .published)
    }

    private func finish(_ seg: Segment, entry: PidEntry, status: ExitStatus, drain: Drain) {
        switch drain {
        case .final:
            drainer.drainFinal(seg)
        case .published:
            // Bounded: a program still producing could keep this going.
            var budget = Int(seg.raw.pointee.ring_slots) * 2
            while budget > 0 {
                let n = drainer.drain(seg)
                if n == 0 { break }
                budget -= n
            }
        case .rescue:
            drainer.drainRescue(seg)
        }
        let c = seg.plausibleCounters()
        let end = EndRecord(reason: status.reason, status: status.status,
                            producerWaits: c.waits, producerWaitNanoseconds: c.waitNanoseconds,
                            lostEvents: max(c.lostEvents, seg.lostReported), tornEvents: seg.torn, arenaFull: c.arenaFull,
                            freeNullCalls: c.freeNullCalls, unwindFallbacks: c.unwindFallbacks,
                            stacksLost: c.stacksLost &+ seg.staleStacks)
        var failure: String?
        seg.aggregator?.flush(seg.writer, closing: false)
        // An image with nothing of its own live at exit (a helper child that only made
        // system calls, as strace's probes do) had nothing for a scan to judge.
        let missedExitScan = status.reason == .exited && (options.scanLeaks || options.retention)
            && !seg.exitScanRequested && seg.watch.corruption == nil && seg.mayHaveOwnLiveBlocks()
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
                                      stoppedEarly: seg.watch.corruption.map {
                                          "process \(seg.pid) wrote over its recording segment (\($0)): recording stopped "
                                              + "after \(HumanUnits.count(seg.writer.eventCount)) events; the program ran on untraced"
                                      },
                                      droppedCounters: seg.droppedCounters,
                                      missedExitScan: missedExitScan,
                                      sandboxed: c.sandboxed && seg.watch.corruption == nil,
                                      untracedForks: seg.untracedForks,
                                      arenaBytes: c.arenaBytes,
                                      frameAddresses: seg.writer.frameAddresses, modules: seg.writer.modules))
        entry.segment = nil
        live.removeAll { $0 === seg }
    }

    /// The program behind `seg` wrote nonsense into its segment: detach it (the shim then
    /// passes through, and stops waiting for room), keep what was published in order, and
    /// end its trace with reason `corrupt`. The program runs on; its exit is still awaited.
    private func abandonCorrupt(_ seg: Segment) {
        hg_segment_detach(seg.raw)
        guard let entry = pids[seg.pid], entry.segment === seg else {
            live.removeAll { $0 === seg }
            return
        }
        finish(seg, entry: entry, status: ExitStatus(reason: .corrupt, status: 0), drain: .rescue)
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
