#if canImport(Glibc)
import Glibc
#endif

/// Names the trace files of one recording.
///
/// The program's first image writes to `output`; every other traced image to
/// `output.<pid>`, and the n-th exec'd image of a pid (n ≥ 1) to
/// `output.<pid>.<n>` (the root's exec'd images too: `output.<rootpid>.1`).
public struct TracePaths: Sendable {
    /// The root trace.
    public var output: String

    public init(output: String) {
        self.output = output
    }

    /// The default root trace name: `heapgen-<program>-<pid>.trace` in the current directory.
    public static func defaultOutput(program: String, pid: Int32) -> String {
        var name = baseName(program)
        if name.isEmpty { name = "program" }
        return "heapgen-\(name)-\(pid).trace"
    }

    /// The file for image number `image` (0 = first) of `pid`.
    public func path(pid: Int32, image: Int, isRoot: Bool) -> String {
        if isRoot && image == 0 { return output }
        if image == 0 { return "\(output).\(pid)" }
        return "\(output).\(pid).\(image)"
    }

    /// True if `path` is a directory itself (not a symbolic link to one).
    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// Checks, without creating anything, that the root trace can be written:
    /// its directory is writable and an existing file is a writable regular file.
    static func checkWritable(_ path: String) throws {
        let dir = directoryName(path)
        var st = stat()
        if stat(dir, &st) != 0 {
            throw RecordError("cannot write the trace \(path): \(errorString(errno)) (\(dir))", exitCode: ExitCodes.heapgenFailed)
        }
        if (st.st_mode & S_IFMT) != S_IFDIR {
            throw RecordError("cannot write the trace \(path): \(dir) is not a directory", exitCode: ExitCodes.heapgenFailed)
        }
        if access(dir, W_OK | X_OK) != 0 {
            throw RecordError("cannot write the trace \(path): \(errorString(errno))", exitCode: ExitCodes.heapgenFailed)
        }
        if lstat(path, &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFDIR {
                throw RecordError("cannot write the trace \(path): it is a directory", exitCode: ExitCodes.heapgenFailed)
            }
            if (st.st_mode & S_IFMT) == S_IFLNK {
                throw RecordError("cannot write the trace \(path): it is a symbolic link (traces are never written through links)",
                                  exitCode: ExitCodes.heapgenFailed)
            }
            if access(path, W_OK) != 0 {
                throw RecordError("cannot write the trace \(path): \(errorString(errno))", exitCode: ExitCodes.heapgenFailed)
            }
        }
    }
}
