// SARIF locations of files outside the source root (glibc's relative `./nptl/…` paths)
// carry no %SRCROOT%, and a missing suppressions file is named once.

import Foundation
import HeapGenTestSupport
@testable import HeapGenGate
import XCTest

final class SARIFPathAndSuppressionFileTests: XCTestCase {
    /// The fixture's own file is relative to %SRCROOT%; glibc's frames (relative paths from
    /// its build directory) are not, since no such file is under the root.
    func testRelativePathsOutsideTheSourceRootHaveNoBase() throws {
        let fixture = try GateFixture.c("gate.c")
        let dir = try TestPaths.freshDirectory("sarif")
        let r = try HeapGenCLI.run(["run", "--fail-on", "abandoned", "--sarif", dir + "/h.sarif", "--", fixture, "leaky"],
                                   directory: TestPaths.repoRoot)
        XCTAssertEqual(r.status, 23, r.transcript)
        let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/h.sarif"))
        let sarif = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let results = (sarif["runs"] as? [[String: Any]])?.first?["results"] as? [[String: Any]] ?? []
        XCTAssertFalse(results.isEmpty, String(decoding: data, as: UTF8.self))
        var artifacts: [[String: Any]] = []
        for result in results {
            for stack in result["stacks"] as? [[String: Any]] ?? [] {
                for frame in stack["frames"] as? [[String: Any]] ?? [] {
                    let physical = (frame["location"] as? [String: Any])?["physicalLocation"] as? [String: Any]
                    if let artifact = physical?["artifactLocation"] as? [String: Any] { artifacts.append(artifact) }
                }
            }
        }
        let own = artifacts.filter { ($0["uri"] as? String) == "Tests/HeapGenGateTests/Fixtures/gate.c" }
        XCTAssertFalse(own.isEmpty, "\(artifacts)")
        for a in own { XCTAssertEqual(a["uriBaseId"] as? String, "%SRCROOT%", "\(a)") }
        // glibc's frames (__libc_start_call_main and others): relative, not the root's.
        let foreign = artifacts.filter { a in
            let uri = a["uri"] as? String ?? ""
            return !uri.hasPrefix("file://") && !uri.hasPrefix("Tests/")
        }
        XCTAssertFalse(foreign.isEmpty, "glibc frames with relative paths expected in:\n\(artifacts)")
        for a in foreign { XCTAssertNil(a["uriBaseId"], "\(a)") }
    }

    /// The rule for one path: under the root (absolute, or relative and present there)
    /// gets %SRCROOT%; a relative path not under the root, none.
    func testArtifactLocationsByPath() {
        let root = TestPaths.repoRoot
        let inside = SARIFWriter.artifact(root + "/Sources/HeapGenCLI/Heapgen.swift", root)
        XCTAssertEqual(inside.uri, "Sources/HeapGenCLI/Heapgen.swift")
        XCTAssertEqual(inside.uriBaseId, "%SRCROOT%")
        let relative = SARIFWriter.artifact("./Sources/HeapGenCLI/Heapgen.swift", root)
        XCTAssertEqual(relative.uri, "Sources/HeapGenCLI/Heapgen.swift")
        XCTAssertEqual(relative.uriBaseId, "%SRCROOT%")
        let glibc = SARIFWriter.artifact("./nptl/pthread_create.c", root)
        XCTAssertEqual(glibc.uri, "./nptl/pthread_create.c")
        XCTAssertNil(glibc.uriBaseId)
        let elsewhere = SARIFWriter.artifact("/usr/include/stdio.h", root)
        XCTAssertEqual(elsewhere.uri, "file:///usr/include/stdio.h")
        XCTAssertNil(elsewhere.uriBaseId)
        XCTAssertNil(SARIFWriter.artifact("../outside.c", root).uriBaseId)
    }

    /// `--suppressions missing.supp`: exit 64, the path once with the system's reason.
    func testMissingSuppressionsFileIsNamedOnce() throws {
        let fixture = try GateFixture.c("gate.c")
        let dir = try TestPaths.freshDirectory("supp")
        let path = dir + "/missing.supp"
        do {
            let r = try HeapGenCLI.run(["run", "--suppressions", path, "--", fixture, "leaky"])
            XCTAssertEqual(r.status, 64, r.transcript)
            XCTAssertEqual(r.stderrText.components(separatedBy: path).count - 1, 1, r.transcript)
            XCTAssertTrue(r.stderrText.contains("\(path): No such file or directory"), r.transcript)
            XCTAssertEqual(r.stdout.count, 0, r.transcript)
        }
    }
}
