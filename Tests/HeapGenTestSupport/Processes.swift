// Running processes for the integration tests: posix_spawn + waitpid, output
// to files (no pipe deadlocks), a kill after a timeout, and a transcript for
// failure messages.

import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How a process ended, and what it printed.
public struct ProcessResult {
    /// Exit code, or 128 + signal when `signaled`.
    public var status: Int32
    public var signaled: Bool
    public var stdout: Data
    public var stderr: Data
    public var seconds: Double
    /// The command line (with the environment variables that differ from ours), shell-quoted.
    public var command: String
    /// True when the process was killed for running past its timeout.
    public var timedOut: Bool

    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
    public var stderrLines: [String] { stderrText.split(separator: "\n", omittingEmptySubsequences: true).map(String.init) }

    /// For failure messages.
    public var transcript: String {
        "$ \(command)\n[status \(status)\(signaled ? " (signal)" : "") after \(String(format: "%.2f", seconds)) s]\n"
            + "--- stdout (\(stdout.count) bytes) ---\n\(String(stdoutText.prefix(3000)))\n"
            + "--- stderr (\(stderr.count) bytes) ---\n\(String(stderrText.prefix(4000)))"
    }
}

/// A started process whose output goes to files (no pipe deadlocks).
///
/// Started with posix_spawn and reaped with waitpid, not Foundation's
/// `Process`: its SIGCHLD monitoring missed a child we SIGKILLed ourselves,
/// and every child gets default signal dispositions and an empty mask.
public final class RunningProcess {
    public let pid: pid_t
    public let outPath: String
    public let errPath: String
    public let started: Date
    public let command: String
    private var finished: (status: Int32, signaled: Bool)?

    /// Starts `executable` with `arguments`; `environment` replaces ours when
    /// given, `stdin` is fed from a file (else /dev/null), and `directory` is the
    /// working directory (else ours).
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                stdin: Data? = nil, directory: String? = nil) throws {
        let dir = try TestPaths.freshDirectory("io")
        outPath = dir + "/stdout"
        errPath = dir + "/stderr"
        var inPath = "/dev/null"
        if let stdin {
            inPath = dir + "/stdin"
            _ = FileManager.default.createFile(atPath: inPath, contents: stdin)
        }
        command = (environment.map { env in
            env.filter { ProcessInfo.processInfo.environment[$0.key] != $0.value }
                .map { "\($0.key)=\(shellQuote($0.value))" }.sorted()
        } ?? []).map { $0 + " " }.joined() + ([executable] + arguments).map(shellQuote).joined(separator: " ")

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var all = sigset_t(), none = sigset_t()
        sigfillset(&all)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attr, &all)
        posix_spawnattr_setsigmask(&attr, &none)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        // A working directory through the shell (glibc's addchdir_np is not in the Glibc module).
        let program = directory == nil ? executable : "/bin/sh"
        let args = directory.map { ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", $0, executable] + arguments }
            ?? [executable] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        started = Date()
        let rc = posix_spawn(&child, program, &actions, &attr, &argv, &envp)
        guard rc == 0 else { throw TestSupportError("cannot start \(command): \(String(cString: strerror(rc)))") }
        pid = child
    }

    /// Reaps the process if it has exited; true when it has.
    public func poll() -> Bool {
        if finished != nil { return true }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        guard r == pid else { return false }
        let termsig = status & 0x7f
        finished = termsig == 0 ? ((status >> 8) & 0xff, false) : (128 + termsig, true)
        return true
    }

    /// Waits (killing the process after `timeout` seconds) and collects the result.
    public func wait(timeout: Double) -> ProcessResult {
        let deadline = Date().addingTimeInterval(timeout)
        var timedOut = false
        while !poll() {
            if !timedOut && Date() > deadline {
                timedOut = true
                kill(pid, SIGKILL)
            }
            usleep(2_000)
        }
        let seconds = Date().timeIntervalSince(started)
        var err = (try? Data(contentsOf: URL(fileURLWithPath: errPath))) ?? Data()
        if timedOut { err.append(Data("\n[test support: killed after the \(timeout) s timeout]\n".utf8)) }
        return ProcessResult(status: finished!.status, signaled: finished!.signaled,
                             stdout: (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data(),
                             stderr: err, seconds: seconds, command: command, timedOut: timedOut)
    }

    /// Kills the process if it is still running (for cleanup after a failed assertion).
    public func killIfRunning() {
        if !poll() { kill(pid, SIGKILL); _ = wait(timeout: 10) }
    }
}

/// `s` quoted for a POSIX shell (unchanged when it needs no quoting).
public func shellQuote(_ s: String) -> String {
    if !s.isEmpty && s.allSatisfy({ $0.isLetter || $0.isNumber || "-_./=:,+@".contains($0) }) { return s }
    return "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
}

/// Runs a program to completion (see `RunningProcess`), killing it after `timeout` seconds.
@discardableResult
public func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                       stdin: Data? = nil, directory: String? = nil, timeout: Double = 300) throws -> ProcessResult {
    try RunningProcess(executable, arguments, environment: environment, stdin: stdin, directory: directory)
        .wait(timeout: timeout)
}

/// Full path of a tool on PATH (or the standard directories), or nil.
public func lookupExecutable(_ name: String) -> String? {
    let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/local/bin:/usr/bin:/bin:/opt/swift/usr/bin"
    for dir in path.split(separator: ":") where !dir.isEmpty {
        let candidate = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// Full path of a tool on PATH (or the standard directories), or an error
/// naming it and, when given, saying how to get it.
public func tool(_ name: String, hint: String? = nil) throws -> String {
    guard let path = lookupExecutable(name) else {
        throw TestSupportError("\(name) not found on PATH" + (hint.map { ": \($0)" } ?? ""))
    }
    return path
}

/// A JSON number read through `JSONSerialization` as an `Int` (it may come back as `Int` or
/// `NSNumber`), or nil: the lenient reading every report, diff and gate test uses.
public func jsonInt(_ any: Any?) -> Int? {
    if let i = any as? Int { return i }
    return (any as? NSNumber)?.intValue
}
