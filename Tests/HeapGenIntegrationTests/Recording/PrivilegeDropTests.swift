// A program started as root that drops its privileges before it starts its
// workers, as servers do: heapgen, run as root, must still be reachable by
// the workers, and by nobody else.

import Foundation
import HeapGenTestSupport
import XCTest

final class PrivilegeDropTests: XCTestCase {
    /// dropprivs.c: 10 × 100 B as root, then as nobody a forked worker (20 × 200 B, exit 5)
    /// and an exec'd one (7 × 70 B). Before, neither worker could connect to heapgen's
    /// socket in its 0700 directory and both ran untraced, without a word. Root's
    /// $XDG_RUNTIME_DIR (0700, as /run/user/0 is) is passed over for the socket.
    func testWorkersStartedAfterDroppingPrivilegesAreTraced() throws {
        guard geteuid() == 0 else { throw XCTSkip("only root can drop its privileges to nobody") }
        let exe = try Fixture.build("dropprivs.c")
        let native = try runProcess(exe, [], timeout: 60)
        XCTAssertStatus(native, 0)
        let runtime = try TestPaths.freshDirectory("runtime")
        XCTAssertEqual(chmod(runtime, 0o700), 0)
        let environment = ProcessInfo.processInfo.environment.merging(["XDG_RUNTIME_DIR": runtime]) { _, new in new }
        let rec = try HeapGenCLI.recording(exe, flags: ["--quiet"], environment: environment)
        XCTAssertStatus(rec.result, 0)
        XCTAssertEqual(rec.result.stdout, native.stdout, "the program's output is its own")
        XCTAssertEqual(rec.result.stderrLines, [], rec.result.transcript)

        let traces = rec.allTraces
        XCTAssertEqual(traces.count, 4, "the program, the forked worker, the exec'd worker's fork and its image: \(traces)")
        let summaries = try traces.filter { $0 != rec.trace }.map { try HeapGenCLI.summary($0) }
        let forked = summaries.filter { $0.calls("malloc") == 20 }
        XCTAssertEqual(forked.count, 1, "\(summaries.map(\.description))")
        XCTAssertEqual(forked.first?.bytes("malloc"), 20 * 200)
        XCTAssertEqual(forked.first?.endStatus, 5)
        let worker = summaries.filter { $0.processOrigin == "exec" }
        XCTAssertEqual(worker.count, 1, "\(summaries.map(\.description))")
        XCTAssertEqual(worker.first?.calls("malloc"), 7)
        XCTAssertEqual(worker.first?.endReason, "exited")
        XCTAssertEqual(worker.first?.endStatus, 0)
    }

    /// As root the socket's directory can be entered by anyone but listed by nobody else,
    /// and the socket has a name of 32 random hex digits: only processes given HEAPGEN_SOCK
    /// can connect. As any other user it is a 0700 directory holding `s`.
    func testTheSocketCanOnlyBeFoundThroughTheEnvironment() throws {
        let exe = try Fixture.build("dropprivs.c")
        var names: [String] = []
        for _ in 0..<2 {
            let rec = try HeapGenCLI.recording(exe, ["rendezvous"], flags: ["--quiet"])
            XCTAssertStatus(rec.result, 0)
            let words = rec.result.stdoutText.split(separator: " ").map(String.init)
            guard words.count >= 4, words[0] == "mode", words[2] == "name" else {
                return XCTFail(rec.result.transcript)
            }
            names.append(words[3])
            if geteuid() == 0 {
                XCTAssertEqual(words[1], "711")
                XCTAssertEqual(words[3].count, 32, rec.result.stdoutText)
                XCTAssertTrue(words[3].allSatisfy { $0.isHexDigit && !$0.isUppercase }, rec.result.stdoutText)
                XCTAssertTrue(rec.result.stdoutText.hasSuffix(" list-as-nobody: Permission denied connect-as-nobody: ok\n"),
                              rec.result.stdoutText)
            } else {
                XCTAssertEqual(rec.result.stdoutText, "mode 700 name s\n")
            }
        }
        if geteuid() == 0 { XCTAssertNotEqual(names[0], names[1], "a new name every time") }
    }
}
