// Programs that change their root directory and run programs inside it (build
// tools, container runtimes): heapgen's library and socket are not there.

import Foundation
import HeapGenTestSupport
import HeapGenTrace
import XCTest

final class ChrootTests: XCTestCase {
    /// chrootexec.c fork: the forked child cannot reach heapgen and runs untraced, so the
    /// program it execs in the new root gets the environment it would have had without
    /// heapgen (before: the loader printed "ERROR: ld.so: object ... cannot be preloaded" on
    /// its stderr). The parent, which first allocates after the chroot, still has its main
    /// program's path in the trace (before: "", and its frames had no names).
    func testAForkedChildExecsInsideTheNewRootUntouched() throws {
        let (exe, rec) = try recordAsNatively("fork", output: "child ran\nchild status 0\n")
        let records = try HeapGenCLI.records(rec.trace)
        let modules = records.compactMap { r -> ModuleRecord? in if case .moduleLoad(let m) = r { return m } else { return nil } }
        XCTAssertTrue(modules.contains { $0.path == exe }, "the main program by its path: \(modules.map(\.path))")
        let summary = try HeapGenCLI.summary(rec.trace)
        XCTAssertEqual(summary.calls("malloc"), 4, "3 × 40 B and stdout's buffer: \(summary)")
    }

    /// chrootexec.c exec: the traced program itself execs a program inside the new root,
    /// which cannot load heapgen's library: it gets the environment it would have had without
    /// heapgen, and its output and status pass through as natively.
    func testAnExecInsideTheNewRootGetsTheProgramsOwnEnvironment() throws {
        _ = try recordAsNatively("exec", output: "child ran\n")
    }

    /// chrootexec.c spawn: posix_spawn's exec happens inside the C library, with the
    /// environment it is given: that one, too, is the program's own when the program it
    /// starts cannot load heapgen's library.
    func testAProgramSpawnedInsideTheNewRootGetsItsOwnEnvironment() throws {
        _ = try recordAsNatively("spawn", output: "child ran\nspawned status 0\n")
    }

    /// Runs the fixture in `mode` natively (it prints `output`, nothing on stderr, exits 0),
    /// then under `heapgen record`: the same output and status, and nothing on stderr but
    /// heapgen's own lines.
    private func recordAsNatively(_ mode: String, output: String,
                                  file: StaticString = #filePath, line: UInt = #line) throws -> (exe: String, rec: Recording) {
        let (exe, root) = try prepare()
        let native = try runProcess(exe, [mode, root], timeout: 60)
        XCTAssertStatus(native, 0, "the fixture needs chroot, as root or in a user namespace", file: file, line: line)
        XCTAssertEqual(native.stdoutText, output, file: file, line: line)
        XCTAssertEqual(native.stderrText, "", file: file, line: line)

        let rec = try HeapGenCLI.recording(exe, [mode, root])
        XCTAssertStatus(rec.result, 0, file: file, line: line)
        XCTAssertEqual(rec.result.stdout, native.stdout, "the program's output is its own", file: file, line: line)
        XCTAssertEqual(rec.result.stderrLines.filter { !$0.hasPrefix("heapgen: ") }, [],
                       "nothing on stderr but heapgen's own lines: \(rec.result.transcript)", file: file, line: line)
        return (exe, rec)
    }

    /// The fixture, and a root holding a copy of it as /child with the libraries `ldd` lists.
    private func prepare() throws -> (exe: String, root: String) {
        let exe = try Fixture.build("chrootexec.c")
        let root = try TestPaths.freshDirectory("chroot")
        let fm = FileManager.default
        try fm.copyItem(atPath: exe, toPath: root + "/child")
        let ldd = try runProcess(try tool("ldd", hint: "libc-bin"), [exe], timeout: 60)
        XCTAssertStatus(ldd, 0)
        // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)"
        let paths = ldd.stdoutText.split(separator: "\n").compactMap { line -> String? in
            line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init).first { $0.hasPrefix("/") }
        }
        XCTAssertTrue(paths.contains { $0.contains("libc.so") } && paths.contains { $0.contains("ld-linux") },
                      ldd.stdoutText)
        for path in paths {
            let target = root + path
            try fm.createDirectory(atPath: (target as NSString).deletingLastPathComponent,
                                   withIntermediateDirectories: true)
            // The file, not a symbolic link to it (/lib64/ld-linux-x86-64.so.2 is one, to a path
            // outside the root).
            let file = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            if !fm.fileExists(atPath: target) { try fm.copyItem(atPath: file, toPath: target) }
        }
        return (exe, root)
    }
}
