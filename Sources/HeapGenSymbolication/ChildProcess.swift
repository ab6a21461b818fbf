#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Synchronization

/// A child process with its stdin on a socket (written with MSG_NOSIGNAL, so a dead child can
/// never raise SIGPIPE in the host) and its stdout on a non-blocking socket; stderr goes to
/// /dev/null. All descriptors are close-on-exec so other children don't inherit them.
/// Not thread-safe: its owner serializes access.
final class ChildProcess {
    private(set) var pid: pid_t = 0
    private var input: Int32 = -1
    private var output: Int32 = -1
    private var reaped = false
    private static let scratchSize = 65_536
    private var scratchStorage: UnsafeMutableRawPointer?

    enum IOResult { case progress(Int), wouldBlock, closed }

    /// Children not reaped yet. heapgen often ends with `exit`, which runs no deinit: they
    /// were left as zombies that the init process of a container may never reap (a
    /// defunct llvm-symbolizer under PID 1 after each PostgreSQL recording).
    private static let unreaped = Mutex<Set<pid_t>>([])
    private static let reapAtExit: Void = { atexit { ChildProcess.reapAll() } }()

    /// Kills and reaps the children still running: at exit, their work is of no more use.
    private static func reapAll() {
        for pid in unreaped.withLock({ set in defer { set.removeAll() }; return set }) {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }

    /// Starts `executable` with `arguments` (argv[0] is the executable path). Returns nil if
    /// the process can't be started.
    init?(executable: String, arguments: [String], removingEnvironment removed: Set<String> = []) {
        var sv: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &sv) == 0 else { return nil }
        // stdout on a socket too: socketpair takes SOCK_CLOEXEC atomically (pipe2 isn't imported).
        var pipeFDs: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pipeFDs) == 0 else {
            close(sv[0]); close(sv[1]); return nil
        }
        // Parent: sv[0] (write requests), pipeFDs[0] (read replies). Child: sv[1] -> 0, pipeFDs[1] -> 1.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, sv[1], 0)
        posix_spawn_file_actions_adddup2(&actions, pipeFDs[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attr, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGTERM)
        posix_spawnattr_setsigdefault(&attr, &defaults)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        let env = ProcessInfo.processInfo.environment
            .filter { !removed.contains($0.key) }
            .map { strdup("\($0.key)=\($0.value)") }
        defer { env.forEach { free($0) } }

        var child: pid_t = 0
        let rc = (argv + [nil]).withUnsafeBufferPointer { a in
            (env + [nil]).withUnsafeBufferPointer { e in
                posix_spawn(&child, executable, &actions, &attr,
                            UnsafeMutablePointer(mutating: a.baseAddress!),
                            UnsafeMutablePointer(mutating: e.baseAddress!))
            }
        }
        close(sv[1])
        close(pipeFDs[1])
        guard rc == 0 else {
            close(sv[0]); close(pipeFDs[0])
            return nil
        }
        pid = child
        Self.reapAtExit
        Self.unreaped.withLock { _ = $0.insert(child) }
        input = sv[0]
        output = pipeFDs[0]
        _ = fcntl(output, F_SETFL, fcntl(output, F_GETFL) | O_NONBLOCK)
    }

    deinit {
        terminate()
        scratchStorage?.deallocate()
    }

    /// Sends what it can of `bytes` without blocking.
    func send(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        guard input >= 0 else { return .closed }
        while true {
            let r = sendNoSignal(input, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            if r >= 0 { return .progress(r) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .closed
            }
        }
    }

    /// No more input: the child sees end of file.
    func closeInput() {
        if input >= 0 { close(input); input = -1 }
    }

    /// Reads what is available into `buffer`.
    func receive(into buffer: inout [UInt8]) -> IOResult {
        guard output >= 0 else { return .closed }
        let scratch = scratchStorage ?? UnsafeMutableRawPointer.allocate(byteCount: Self.scratchSize, alignment: 16)
        scratchStorage = scratch
        while true {
            let r = read(output, scratch, Self.scratchSize)
            if r > 0 {
                buffer.append(contentsOf: UnsafeRawBufferPointer(start: scratch, count: r))
                return .progress(r)
            }
            if r == 0 { return .closed }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .closed
            }
        }
    }

    /// Waits until stdout is readable (or closed) or, when `wantWrite`, stdin is writable.
    /// Returns (readable, writable); both false on timeout.
    func wait(wantWrite: Bool, timeoutMilliseconds: Int32) -> (readable: Bool, writable: Bool) {
        var fds: [pollfd] = [pollfd(fd: output, events: Int16(POLLIN), revents: 0)]
        if wantWrite && input >= 0 { fds.append(pollfd(fd: input, events: Int16(POLLOUT), revents: 0)) }
        while true {
            let r = poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
            if r < 0 && errno == EINTR { continue }
            if r <= 0 { return (false, false) }
            let readable = fds[0].revents != 0
            let writable = fds.count > 1 && fds[1].revents != 0
            return (readable, writable)
        }
    }

    /// True once the child has exited (it is then reaped).
    func hasExited() -> Bool {
        guard pid > 0, !reaped else { return true }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid || (r < 0 && errno == ECHILD) {
            noteReaped()
            return true
        }
        return false
    }

    /// The child is reaped (or about to be, by ``terminate()``): nothing is left for exit.
    private func noteReaped() {
        reaped = true
        Self.unreaped.withLock { _ = $0.remove(pid) }
    }

    /// Closes the pipes, kills the child if it doesn't leave on its own within a moment, reaps it.
    func terminate() {
        closeInput()
        if output >= 0 { close(output); output = -1 }
        guard pid > 0, !reaped else { return }
        defer { noteReaped() }
        var status: Int32 = 0
        // Given EOF on stdin, llvm-symbolizer and addr2line exit at once.
        for _ in 0..<20 {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid || (r < 0 && errno == ECHILD) { return }
            usleep(5_000)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}

#if canImport(Glibc)
private func sendNoSignal(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int, _ flags: Int32) -> Int { Glibc.send(fd, p, n, flags) }
#elseif canImport(Musl)
private func sendNoSignal(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int, _ flags: Int32) -> Int { Musl.send(fd, p, n, flags) }
#endif

extension ChildProcess {
    /// Runs a program with empty stdin and returns its stdout, nil if it can't start, or
    /// prints nothing for `idleTimeout` seconds (then it is killed).
    static func runToCompletion(executable: String, arguments: [String], idleTimeout: Double) -> String? {
        guard let child = ChildProcess(executable: executable, arguments: arguments) else { return nil }
        defer { child.terminate() }
        child.closeInput()
        var output: [UInt8] = []
        let timeoutNanos = UInt64(max(0.001, idleTimeout) * 1e9)
        var last = MonotonicClock.now()
        while true {
            let now = MonotonicClock.now()
            if now - last >= timeoutNanos { return nil }
            let ms = Int32(clamping: (timeoutNanos - (now - last)) / 1_000_000 + 1)
            let ready = child.wait(wantWrite: false, timeoutMilliseconds: ms)
            guard ready.readable else { continue }
            switch child.receive(into: &output) {
            case .progress: last = MonotonicClock.now()
            case .wouldBlock: break
            case .closed: return String(decoding: output, as: UTF8.self)
            }
        }
    }
}
