// Debian's OpenSSH server, a real program whose pre-authentication child locks itself
// into a seccomp allowlist (sandbox-seccomp-filter.c) that kills on anything else.

import Foundation
import HeapGenTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class SSHServerTests: XCTestCase {
    /// Under `heapgen record --leaks`, a login used to fail: the sandboxed child died of
    /// SIGSYS (process_vm_readv, as the audit log showed). It must log in, run the
    /// command, pass its output and status through, and every traced image end cleanly.
    func testALoginThroughSandboxedSSHDWorks() throws {
        guard geteuid() == 0 else { throw XCTSkip("sshd's privilege separation needs root") }
        let sshd = "/usr/sbin/sshd"
        guard FileManager.default.isExecutableFile(atPath: sshd) else {
            throw TestSupportError("\(sshd) not found: apt-get install -y openssh-server (.ci/run does)")
        }
        let ssh = try tool("ssh", hint: "apt-get install -y openssh-client")
        let keygen = try tool("ssh-keygen", hint: "apt-get install -y openssh-client")
        let dir = try TestPaths.freshDirectory("sshd")
        for key in ["host", "client"] {
            let made = try runProcess(keygen, ["-q", "-t", "ed25519", "-N", "", "-f", "\(dir)/\(key)"], timeout: 60)
            XCTAssertStatus(made, 0, made.transcript)
        }
        try FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        let port = try LocalPort.free()
        let config = """
            Port \(port)
            ListenAddress 127.0.0.1
            HostKey \(dir)/host
            PidFile \(dir)/sshd.pid
            AuthorizedKeysFile \(dir)/client.pub
            PermitRootLogin yes
            StrictModes no
            UsePAM no
            """
        try config.write(toFile: "\(dir)/sshd_config", atomically: true, encoding: .utf8)
        let trace = dir + "/sshd.trace"
        let server = try RunningProcess(try TestPaths.heapgen(), [
            "record", "--quiet", "--leaks", "--output", trace, "--", sshd, "-D", "-e", "-f", "\(dir)/sshd_config",
        ])
        defer { server.killIfRunning() }
        let deadline = Date().addingTimeInterval(60)
        while !LocalPort.accepts(port) {
            if server.poll() { throw TestSupportError("sshd ended early:\n\(server.wait(timeout: 1).transcript)") }
            if Date() > deadline { throw TestSupportError("sshd did not listen within 60 s") }
            usleep(50_000)
        }
        for _ in 0..<2 {   // two sandboxed children, one note
            let login = try runProcess(ssh, [
                "-p", "\(port)", "-i", "\(dir)/client", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "root@127.0.0.1", "echo logged-in; exit 7",
            ], timeout: 60)
            XCTAssertStatus(login, 7, login.transcript)
            XCTAssertEqual(login.stdoutText, "logged-in\n", login.transcript)
        }

        let pid = try XCTUnwrap(Int32(String(contentsOfFile: "\(dir)/sshd.pid", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        kill(pid, SIGTERM)
        let result = server.wait(timeout: 60)
        XCTAssertFalse(result.signaled, result.transcript)
        XCTAssertNoCrashText(result.stderrText)
        XCTAssertFalse(result.stderrText.contains("SIGSYS"), result.transcript)
        // One note for both pre-auth children (it was one a connection), saying what heapgen
        // does not do there rather than that something was lost.
        // (sshd's log lines end in \r\n, one Character: split on the scalars.)
        let notes = result.stderrText.unicodeScalars.split(separator: "\n").map { String(String.UnicodeScalarView($0)) }
            .filter { $0.contains("seccomp sandbox") }
        XCTAssertEqual(notes.count, 1, result.transcript)
        XCTAssertTrue(notes.first?.hasPrefix("heapgen: note: 2 processes locked themselves into a seccomp sandbox (") ?? false,
                      "\(notes)")
        // Every image that exited (the sandboxed child among them) did so on its own.
        let traces = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("sshd.trace") }
        XCTAssertGreaterThanOrEqual(traces.count, 3, "\(traces)")
        for name in traces {
            let s = try HeapGenCLI.summary(dir + "/" + name)
            if s.endReason == "signaled" {
                XCTAssertEqual(s.endStatus, Int(SIGTERM), "\(name): only the listener is stopped, by us\n\(s)")
            }
        }
    }
}
