// Debian's redis-server, a real program whose every allocation goes through
// zmalloc.c's wrappers and which is started through a symbolic link
// (/usr/bin/redis-server -> redis-check-rdb): live-at-exit sites are named after
// zmalloc's callers, the program after the link, and libstdc++'s pool is apart.

import Foundation
import HeapGenTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class RedisWrapperReportTests: XCTestCase {
    func testRedisSitesAreNamedPastZmalloc() throws {
        let server = try tool("redis-server", hint: "apt-get install -y redis-server (.ci/run does)")
        let cli = try tool("redis-cli", hint: "apt-get install -y redis-tools")
        let dir = try TestPaths.freshDirectory("redis")
        let trace = dir + "/redis.trace"
        let port = try LocalPort.free()
        let process = try RunningProcess(try TestPaths.heapgen(), [
            "record", "-q", "--output", trace, "--", server, "--port", "\(port)", "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no",
        ])
        defer { process.killIfRunning() }
        let base = ["-h", "127.0.0.1", "-p", "\(port)"]
        let deadline = Date().addingTimeInterval(60)
        while try runProcess(cli, base + ["PING"], timeout: 10).stdoutText != "PONG\n" {
            if process.poll() { throw TestSupportError("redis-server ended early:\n\(process.wait(timeout: 1).transcript)") }
            if Date() > deadline { throw TestSupportError("redis-server did not answer PING within 60 s") }
            usleep(50_000)
        }
        var commands = ""
        for i in 0..<300 { commands += "SET key:\(i) value-\(i)-\(String(repeating: "x", count: 40))\n" }
        let batch = try runProcess(cli, base, stdin: Data(commands.utf8), timeout: 60)
        XCTAssertEqual(batch.status, 0, batch.transcript)
        _ = try runProcess(cli, base + ["SHUTDOWN", "NOSAVE"], timeout: 10)
        let result = process.wait(timeout: 60)
        XCTAssertEqual(result.status, 0, result.transcript)

        let text = try HeapGenCLI.succeed(["report", trace]).stdoutText
        XCTAssertTrue(text.hasPrefix("heapgen: redis-server (pid "), text)
        let live = text.components(separatedBy: "\n").drop { !$0.hasPrefix("Live at exit") }
        // "    526.7 kB in 3 blocks  at aeCreateEventLoop (redis-check-rdb)"
        let siteLines = live.filter { $0.hasPrefix("    ") && $0.contains(" in ") && $0.contains("  at ") }
        XCTAssertGreaterThanOrEqual(siteLines.count, 3, text)
        for line in siteLines {
            for wrapper in ["at zmalloc", "at zcalloc", "at zrealloc", "at ztry", "at 0x"] {
                XCTAssertFalse(line.contains(wrapper), "\(line)\n\(text)")
            }
        }
        XCTAssertTrue(live.contains { $0.contains(" at createObject (") }, text)
        XCTAssertTrue(live.contains {
            $0 == "    start-up runtime blocks: 1 block, 72,704 bytes (libstdc++ emergency exception-handling pool, allocated as their libraries loaded; not listed)"
        }, text)
    }
}
