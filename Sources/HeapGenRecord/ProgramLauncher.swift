import CHeapGenCollector
#if canImport(Glibc)
import Glibc
#endif

/// Finds the program and the preload library, checks that the program can be
/// traced, and starts it with the shim preloaded.
struct ProgramLauncher {
    /// Where the program's executable is (after the `PATH` look-up).
    let executablePath: String
    /// The preload library, absolute.
    let shimPath: String

    /// Resolves and inspects `options.program` and finds the shim.
    /// Throws a ``RecordError`` with exit status 127, 126 or 125.
    init(options: RecordOptions) throws {
        executablePath = try Self.resolve(program: options.program)
        try Self.inspect(executablePath, asTyped: options.program)
        shimPath = try Self.findShim(explicit: options.shimPath)
    }

    // MARK: - PATH

    /// Like `execvp`: a name with a `/` is used as is, otherwise the first
    /// executable regular file along `PATH`.
    static func resolve(program: String) throws -> String {
        if program.isEmpty { throw RecordError("program not found: ''", exitCode: ExitCodes.notFound) }
        if program.contains("/") {
            guard exists(program) else { throw RecordError("program not found: \(program)", exitCode: ExitCodes.notFound) }
            return program
        }
        let path = environmentValue("PATH") ?? "/usr/local/bin:/usr/bin:/bin"
        var firstNonExecutable: String?
        for dir in path.split(separator: ":", omittingEmptySubsequences: false) {
            let candidate = dir.isEmpty ? program : "\(dir)/\(program)"
            var st = stat()
            guard stat(candidate, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
            if access(candidate, X_OK) == 0 { return candidate }
            if firstNonExecutable == nil { firstNonExecutable = candidate }
        }
        if let firstNonExecutable { return firstNonExecutable } // inspect() explains
        throw RecordError("program not found: \(program)", exitCode: ExitCodes.notFound)
    }

    private static func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }

    // MARK: - Inspection

    /// Refuses programs the preload library cannot get into, with one line.
    static func inspect(_ path: String, asTyped: String) throws {
        var culprit = [CChar](repeating: 0, count: 4096)
        let result = hg_inspect_program(path, &culprit, culprit.count)
        let other = cString(culprit)
        // For a #! script whose interpreter is the problem, name both.
        let what = other.isEmpty || other == path ? asTyped : "\(other) (the interpreter of \(asTyped))"
        switch Int(result) {
        case Int(HG_INSPECT_OK.rawValue), Int(HG_INSPECT_UNREADABLE.rawValue):
            // Unreadable (execute-only) programs can still run; the loader will tell.
            return
        case Int(HG_INSPECT_NOT_FOUND.rawValue):
            throw RecordError("program not found: \(what)", exitCode: ExitCodes.notFound)
        case Int(HG_INSPECT_NOT_REGULAR.rawValue):
            throw RecordError("cannot run \(what): not a regular file", exitCode: ExitCodes.cannotTrace)
        case Int(HG_INSPECT_NOT_EXEC.rawValue):
            throw RecordError("cannot run \(what): permission denied (not executable)", exitCode: ExitCodes.cannotTrace)
        case Int(HG_INSPECT_STATIC.rawValue):
            throw RecordError("cannot trace \(what): it is statically linked, so the preload library cannot be loaded into it",
                              exitCode: ExitCodes.cannotTrace)
        case Int(HG_INSPECT_SETID.rawValue):
            throw RecordError("cannot trace \(what): it is setuid or setgid to another user or group, and the loader "
                              + "ignores LD_PRELOAD for such programs",
                              exitCode: ExitCodes.cannotTrace)
        case Int(HG_INSPECT_NOT_ELF.rawValue):
            throw RecordError("cannot run \(what): neither an ELF executable nor a #! script", exitCode: ExitCodes.cannotTrace)
        case Int(HG_INSPECT_BAD_ELF.rawValue):
            throw RecordError("cannot trace \(what): not a 64-bit ELF executable for this machine", exitCode: ExitCodes.cannotTrace)
        case Int(HG_INSPECT_SCRIPT_LOOP.rawValue):
            throw RecordError("cannot run \(what): #! interpreters nested too deeply", exitCode: ExitCodes.cannotTrace)
        default:
            throw RecordError("cannot inspect \(what)", exitCode: ExitCodes.cannotTrace)
        }
    }

    // MARK: - The shim

    /// `explicit`, else `$HEAPGEN_SHIM`, else `libHeapGenShim.so` next to the running executable.
    static func findShim(explicit: String?) throws -> String {
        var candidate: String
        if let explicit {
            candidate = explicit
        } else if let env = environmentValue("HEAPGEN_SHIM"), !env.isEmpty {
            candidate = env
        } else {
            guard let exe = readLink("/proc/self/exe") else {
                throw RecordError("cannot locate the preload library: /proc/self/exe is unreadable (set HEAPGEN_SHIM)",
                                  exitCode: ExitCodes.heapgenFailed)
            }
            candidate = directoryName(exe) + "/libHeapGenShim.so"
        }
        if !candidate.hasPrefix("/"), let cwd = currentDirectory() {
            candidate = cwd + "/" + candidate
        }
        guard access(candidate, R_OK) == 0 else {
            throw RecordError("preload library not found: \(candidate) (build it, or point HEAPGEN_SHIM at libHeapGenShim.so)",
                              exitCode: ExitCodes.heapgenFailed)
        }
        // The loader splits LD_PRELOAD at ':' and ' '.
        if candidate.contains(":") || candidate.contains(" ") {
            throw RecordError("the preload library's path contains ':' or ' ', which LD_PRELOAD cannot carry: \(candidate)",
                              exitCode: ExitCodes.heapgenFailed)
        }
        return candidate
    }

    // MARK: - Starting the program

    /// The variables the collector adds (heapgen_protocol.h, "Environment"):
    /// taken out of heapgen's own environment first (a nested heapgen), and
    /// by the shim from an untraced descendant's.
    static let collectorVariables: Set<String> = ["HEAPGEN_SOCK", "HEAPGEN_COLLECTOR", "HEAPGEN_FOLLOW",
                                                  "HEAPGEN_PRELOAD", "HEAPGEN_RING_SLOTS", "HEAPGEN_LEAK_SCAN",
                                                  "HEAPGEN_RETENTION", "HEAPGEN_RETENTION_AT"]

    /// The environment for the program: ours, with the shim put first in
    /// `LD_PRELOAD` (in its place, if the user has one), then the collector's
    /// variables. The user's own `LD_PRELOAD` entry rides along as
    /// `HEAPGEN_PRELOAD`, so the shim can give an untraced descendant exactly
    /// the environment it would have had without heapgen.
    func environment(socketPath: String, options: RecordOptions) -> [String] {
        var env: [String] = []
        var userPreload: String?
        for entry in currentEnvironment() {
            let name = String(entry.prefix { $0 != "=" })
            if Self.collectorVariables.contains(name) { continue }
            if name == "LD_PRELOAD" && userPreload == nil {
                let value = String(entry.dropFirst(name.count + 1))
                userPreload = value
                env.append(value.isEmpty ? "LD_PRELOAD=\(shimPath)" : "LD_PRELOAD=\(shimPath):\(value)")
                continue
            }
            env.append(entry)
        }
        if userPreload == nil { env.append("LD_PRELOAD=\(shimPath)") }
        env.append("HEAPGEN_SOCK=\(socketPath)")
        env.append("HEAPGEN_COLLECTOR=\(getpid())")
        if !options.followFork || !options.followExec {
            let follow = [options.followFork ? "fork" : nil, options.followExec ? "exec" : nil].compactMap { $0 }
            env.append("HEAPGEN_FOLLOW=" + follow.joined(separator: ","))
        }
        if let userPreload { env.append("HEAPGEN_PRELOAD=LD_PRELOAD=\(userPreload)") }
        if let ringSlots = options.ringSlots { env.append("HEAPGEN_RING_SLOTS=\(ringSlots)") }
        if options.scanLeaks { env.append("HEAPGEN_LEAK_SCAN=1") }
        if options.retention { env.append("HEAPGEN_RETENTION=1") }
        if !options.retentionAt.isEmpty {
            env.append("HEAPGEN_RETENTION_AT=" + options.retentionAt.joined(separator: "\n"))
        }
        return env
    }

    /// Starts the program; returns its pid.
    func spawn(arguments: [String], argv0: String, environment env: [String], keepIgnored: UInt32) throws -> pid_t {
        var argv: [UnsafeMutablePointer<CChar>?] = ([argv0] + arguments).map { strdup($0) }
        argv.append(nil)
        var envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) }
        envp.append(nil)
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let rc = hg_spawn(&pid, executablePath, argv, envp, keepIgnored)
        if rc != 0 {
            let code = rc == ENOENT ? ExitCodes.notFound : ExitCodes.cannotTrace
            throw RecordError("cannot run \(executablePath): \(errorString(rc))", exitCode: code)
        }
        return pid
    }
}

// MARK: - Small POSIX helpers

func environmentValue(_ name: String) -> String? {
    guard let p = getenv(name) else { return nil }
    return String(cString: p)
}

func currentEnvironment() -> [String] {
    var result: [String] = []
    var p = environ
    while let entry = p.pointee {
        result.append(String(cString: entry))
        p += 1
    }
    return result
}

func readLink(_ path: String) -> String? {
    var buf = [CChar](repeating: 0, count: 4097)
    let n = readlink(path, &buf, 4096)
    guard n > 0 else { return nil }
    return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func currentDirectory() -> String? {
    var buf = [CChar](repeating: 0, count: 4097)
    guard getcwd(&buf, 4096) != nil else { return nil }
    return cString(buf)
}

func directoryName(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    if slash == path.startIndex { return "/" }
    return String(path[..<slash])
}

func baseName(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return path }
    return String(path[path.index(after: slash)...])
}

/// A NUL-terminated C string in a buffer, as a String.
func cString(_ buf: [CChar]) -> String {
    String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func errorString(_ code: Int32) -> String {
    String(cString: strerror(code))
}

/// Writes `heapgen: <line>` to standard error.
func printDiagnostic(_ line: String) {
    var text = "heapgen: " + line + "\n"
    text.withUTF8 { buf in
        guard let base = buf.baseAddress else { return }
        var off = 0
        while off < buf.count {
            let n = write(2, base + off, buf.count - off)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            off += n
        }
    }
}
