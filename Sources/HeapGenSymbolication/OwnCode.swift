// Which frames are the program's own code.

import HeapGenTrace
import Synchronization

/// Decides which frame of an allocation stack is the first one in the *program's own
/// code*: the frame a user wants to look at first (`Report.Finding.userFrame`).
///
/// A frame is own code unless
/// - its module is part of the platform: heapgen's shim (`libHeapGenShim.so`), glibc
///   (`libc`, `ld.so`, `libm`, `libpthread`, `libdl`, `librt`…), `libstdc++`, `libgcc_s`,
///   `libunwind`, the Swift runtime and libraries (`libswift*.so`, `libFoundation*.so`,
///   `lib_Foundation*.so`, `libdispatch.so`, `libBlocksRuntime.so`, `libXCTest.so`,
///   `libTesting.so`, anything under a toolchain's `usr/lib/swift/`) or the vDSO
///   (``isRuntimeModule(_:)``);
/// - or its file is the toolchain's: Swift's `<compiler-generated>`, Rust's standard library
///   (`/rustc/…`);
/// - or its function is allocator or runtime plumbing even though it sits in the program's
///   own module, as happens with a statically linked Swift runtime or with library code
///   specialized or inlined into the program: `malloc` & co, `operator new`,
///   `swift_allocObject`, `swift_slowAlloc`, other `swift_*` / `swift::` / `std::`
///   functions, Swift standard-library and Foundation functions (`Swift.…`, also as
///   generic specializations), and compiler-generated thunks (``isRuntimeFunction(_:)``,
///   file `<compiler-generated>`).
///
/// A user type's `__allocating_init` *is* own code (it is the user's initializer), but it
/// has no line (compiler-generated): the first own frame *with a line* is preferred, which
/// is where the user wrote `Type(…)`.
///
/// Allocation wrappers are skipped the same way, so that a site is named after the code that
/// asked for memory, not after the wrapper every allocation goes through: redis's `zmalloc`
/// family, `xmalloc` & co (GNU), GLib's `g_malloc`/`g_new`/`g_slice_alloc` family, PHP's
/// `emalloc`/`ecalloc`, CPython's `PyMem_*`/`PyObject_Malloc` family, OpenSSL's `CRYPTO_malloc`
/// family, Ruby's `ruby_xmalloc` family, Perl's `Perl_safesysmalloc`, Lua's `luaM_*`, Tcl's
/// `Tcl_Alloc`, every `operator new` variant, `swift_slowAlloc`/`swift_allocObject`
/// (``isAllocationWrapper(_:)``), and the names given with `--alloc-fn`
/// (``setAllocationFunctions(_:)``), as valgrind massif's `--alloc-fn` does.
///
/// A launcher's stacks (an interpreter such as `ruby`: the program's own code is only an
/// entry without source, `main` or an unnamed frame of a stripped executable) are named in
/// the library that did the work (``launcherLibraryFrame(_:own:)``).
///
/// Shared objects that merely live in the system library directories (`/usr/lib`, `/lib`…),
/// say libcurl, are second choice: when no frame is own code by the rules above *and*
/// outside those directories, the first frame that is not platform code is used.
public enum OwnCode {
    /// What a module is, by its path: platform code (``isRuntimeModule(_:)``), in a system
    /// library directory (``isSystemLibrary(_:)``), both or neither.
    private struct ModuleKind { var runtime: Bool, system: Bool }

    /// ``moduleKind(_:)``'s answers, by path: a report asks about every frame of every stack,
    /// and a program has a few dozen modules (a Ruby trace's stacks asked 3 M times).
    private static let moduleKinds = Mutex<[String: ModuleKind]>([:])

    /// ``isRuntimeFunction(_:)``'s answers, by demangled name; emptied when
    /// ``setAllocationFunctions(_:)`` changes what is a wrapper.
    private static let runtimeFunctions = Mutex<[String: Bool]>([:])

    private static func moduleKind(_ path: String) -> ModuleKind {
        if let known = moduleKinds.withLock({ $0[path] }) { return known }
        let kind = ModuleKind(runtime: classifyRuntimeModule(path), system: classifySystemLibrary(path))
        moduleKinds.withLock { $0[path] = kind }
        return kind
    }

    /// True if `path` is a platform module: never the program's own code.
    public static func isRuntimeModule(_ path: String) -> Bool {
        moduleKind(path).runtime
    }

    private static func classifyRuntimeModule(_ path: String) -> Bool {
        if path.contains("/usr/lib/swift/") || path.hasPrefix("usr/lib/swift/") { return true }
        let name = baseName(path)
        if name.hasPrefix("linux-vdso") || name.hasPrefix("linux-gate") { return true }
        let stem = libraryStem(name)
        if runtimeLibraries.contains(stem) { return true }
        for prefix in runtimeLibraryPrefixes where stem.hasPrefix(prefix) { return true }
        return false
    }

    /// True if `path` is a shared object in a system library directory (a distribution's
    /// library, not built with the program). Second choice for ``firstUserFrame(_:)``.
    public static func isSystemLibrary(_ path: String) -> Bool {
        moduleKind(path).system
    }

    private static func classifySystemLibrary(_ path: String) -> Bool {
        let name = baseName(path)
        guard name.hasPrefix("lib") || name.hasPrefix("ld-"), name.contains(".so") else { return false }
        return systemDirectories.contains { path.hasPrefix($0) }
    }

    /// True if a reference-graph root belongs to a platform or system library: a global of a
    /// module that is not the program's own. Stacks, registers and other regions are not.
    public static func isLibraryRoot(_ region: ReferenceGraphRecord.RootRegion) -> Bool {
        guard region.kind == .global, let path = region.modulePath else { return false }
        return isRuntimeModule(path) || isSystemLibrary(path)
    }

    /// Names given with `--alloc-fn`: exact names, `prefix*` patterns.
    private static let userAllocationFunctions = Mutex<[String]>([])

    /// Makes `names` allocation wrappers too (`--alloc-fn NAME`, repeatable): a frame whose
    /// function is one of them is skipped when the user frame is chosen. A name matches the
    /// function exactly, or its part before `(` (C++ signatures); a name ending in `*`
    /// matches every function it starts. Replaces the names given before.
    public static func setAllocationFunctions(_ names: [String]) {
        userAllocationFunctions.withLock { $0 = names.filter { !$0.isEmpty } }
        matchedAllocationFunctions.withLock { $0.removeAll() }
        runtimeFunctions.withLock { $0.removeAll() }
    }

    /// The names given to ``setAllocationFunctions(_:)`` that matched no function asked about
    /// since: a typo, or a stripped binary's frame, which has no function name to match.
    public static func unmatchedAllocationFunctions() -> [String] {
        let matched = matchedAllocationFunctions.withLock { $0 }
        return userAllocationFunctions.withLock { $0 }.filter { !matched.contains($0) }
    }
    private static let matchedAllocationFunctions = Mutex<Set<String>>([])

    /// True if `function` (demangled) is a known allocation wrapper (see the type's
    /// documentation) or one named with ``setAllocationFunctions(_:)``.
    public static func isAllocationWrapper(_ function: String) -> Bool {
        let bare: Substring = function.firstIndex(of: "(").map { function[..<$0] } ?? Substring(function)
        if allocationWrappers.contains(String(bare)) { return true }
        for prefix in allocationWrapperPrefixes where bare.hasPrefix(prefix) { return true }
        if bare.hasPrefix("operator new") { return true }
        let match = userAllocationFunctions.withLock { names in
            names.first { name in
                if name.hasSuffix("*") { return bare.hasPrefix(name.dropLast()) }
                return name == function || name == bare
            }
        }
        guard let match else { return false }
        matchedAllocationFunctions.withLock { _ = $0.insert(match) }
        return true
    }

    /// True if `function` (demangled) is allocator, runtime or standard-library plumbing,
    /// an allocation wrapper (``isAllocationWrapper(_:)``), or a compiler-generated thunk,
    /// wherever it was linked.
    public static func isRuntimeFunction(_ function: String) -> Bool {
        if let known = runtimeFunctions.withLock({ $0[function] }) { return known }
        let answer = classifyRuntimeFunction(function)
        runtimeFunctions.withLock { $0[function] = answer }
        return answer
    }

    private static func classifyRuntimeFunction(_ function: String) -> Bool {
        if allocatorFunctions.contains(function) { return true }
        if isAllocationWrapper(function) { return true }
        // C++ names carry their signature: "operator new(unsigned long)", "malloc" has none.
        if let paren = function.firstIndex(of: "("), allocatorFunctions.contains(String(function[..<paren])) {
            return true
        }
        for prefix in runtimeFunctionPrefixes where function.hasPrefix(prefix) { return true }
        for prefix in thunkPrefixes where function.hasPrefix(prefix) { return true }
        let core = swiftCoreName(function)
        for module in platformSwiftModules where core.hasPrefix(module) { return true }
        return false
    }

    /// The position in `functions` (a stack's demangled names, innermost first) of the
    /// innermost frame where an executor or a queue runs one job, or nil: Swift
    /// concurrency's `swift::runJobInEstablishedExecutorContext` and `swift_job_run`,
    /// libdispatch's `_dispatch_client_callout`. The frames outside it say which thread or
    /// queue path ran the job, which changes from run to run, not which code allocated (a
    /// task's callers are not on the machine stack at all). Likewise V8's embedded builtins
    /// (`Builtins_…`), where JavaScript called into the runtime: the frames outside depend on
    /// which tier ran the caller (interpreter or optimized code), which changes during a run
    /// (one leaking function was two sites, the first of which stopped growing when it was
    /// optimized), and the walk ends in the generated code anyway. A callout made by a synchronous
    /// dispatch (`DispatchQueue.sync`, `dispatch_sync`) is none: that block runs on its
    /// caller's thread, for its caller, whose frames tell sites apart.
    public static func jobEntry<C: Collection>(_ functions: C) -> C.Index? where C.Element == String? {
        var i = functions.startIndex
        while i != functions.endIndex {
            let next = functions.index(after: i)
            if let f = functions[i], jobEntryPrefixes.contains(where: f.hasPrefix) {
                let caller = next == functions.endIndex ? nil : functions[next]
                let synchronous = caller.map { c in syncDispatchPrefixes.contains(where: c.hasPrefix) } ?? false
                if !(f.hasPrefix(callout) && synchronous) { return i }
            }
            i = next
        }
        return nil
    }

    private static let callout = "_dispatch_client_callout"
    private static let jobEntryPrefixes = ["swift::runJobInEstablishedExecutorContext(", "swift_job_run", callout, "Builtins_"]
    private static let syncDispatchPrefixes = [
        "_dispatch_sync", "_dispatch_lane_barrier_sync", "_dispatch_barrier_sync", "dispatch_sync",
        "dispatch_barrier_sync", "_dispatch_async_and_wait", "dispatch_async_and_wait",
    ]

    /// True if a frame with this module, function and file is the program's own code
    /// (first choice; see the type's documentation).
    public static func isOwnCode(module: String?, function: String?, file: String?) -> Bool {
        guard let module else { return false }
        if isRuntimeModule(module) || isSystemLibrary(module) { return false }
        if let file, isToolchainFile(file) { return false }
        if let function, isRuntimeFunction(function) { return false }
        return true
    }

    /// True if `file` is the compiler's, not the program's: Swift's `<compiler-generated>`
    /// glue, Rust's standard library (rustc writes its sources as `/rustc/<commit>/library/…`,
    /// linked into every Rust program: `alloc::alloc::alloc` is no one's allocation site).
    static func isToolchainFile(_ file: String) -> Bool {
        file.hasSuffix("<compiler-generated>") || file.hasPrefix("/rustc/")
    }

    /// True if no frame of `frames` is the program's own code while every frame lies in a
    /// known module: growth made entirely by platform and system libraries (XCTest's
    /// per-test timers, libdispatch's worker bookkeeping). A frame outside every recorded
    /// module might be the program's (JIT code, a stripped binary): then this is false.
    public static func isLibraryOnly(_ frames: [SymbolicatedFrame]) -> Bool {
        guard !frames.isEmpty, frames.allSatisfy({ $0.module != nil }) else { return false }
        return !frames.contains { isOwnCode(module: $0.module, function: $0.function, file: $0.file) }
    }

    /// Index of the first frame in the program's own code, else of the first frame that is
    /// not platform code (a system library's), else `nil`.
    ///
    /// An own frame whose file is known but whose line is not is compiler-generated glue in
    /// the user's module (line 0), typically a class's `__allocating_init`: when a later own
    /// frame has a line (the `Model(…)` call written by the user), that one is chosen.
    public static func firstUserFrame(_ frames: [SymbolicatedFrame]) -> Int? {
        let inside = wrapperInternals(frames)
        let own = frames.indices.filter {
            !inside.contains($0) && isOwnCode(module: frames[$0].module, function: frames[$0].function, file: frames[$0].file)
        }
        if let library = launcherLibraryFrame(frames, own: own) { return library }
        if let first = own.first {
            if frames[first].file != nil && frames[first].line == nil,
               let withLine = own.first(where: { frames[$0].line != nil }) {
                return withLine
            }
            return first
        }
        return frames.firstIndex { frame in
            guard let module = frame.module, !isRuntimeModule(module) else { return false }
            if let file = frame.file, isToolchainFile(file) { return false }
            return !(frame.function.map(isRuntimeFunction) ?? false)
        }
    }

    /// Unnamed frames that a known allocation wrapper of the same module called, directly or
    /// through other unnamed frames (at most 3): the wrapper's own static helpers in a
    /// stripped binary. PostgreSQL's `palloc` calls its static `AllocSetAlloc`, and every
    /// site of a Debian postgres was `postgres+0x5c7860`, whatever called `palloc`.
    static func wrapperInternals(_ frames: [SymbolicatedFrame]) -> Set<Int> {
        var inside = Set<Int>()
        var i = 0
        while i < frames.count {
            guard frames[i].function == nil, let module = frames[i].module else { i += 1; continue }
            var j = i + 1
            while j < frames.count && j - i <= 3 && frames[j].function == nil && frames[j].module == module { j += 1 }
            if j < frames.count && j - i <= 3 && frames[j].module == module,
               let caller = frames[j].function, isAllocationWrapper(caller) {
                inside.formUnion(i..<j)
            }
            i = j
        }
        return inside
    }

    /// When the program's own code on the stack is only a launcher's entry without source
    /// (`main` or an unnamed frame of a stripped executable, then libc's start and `_start`)
    /// and everything it did went through a library, an interpreter's (`ruby` is a
    /// 12 KB `main` over libruby): the innermost frame of that library that is not allocator
    /// plumbing, named if one is. Every Ruby site was `ruby3.1+0x110b` before.
    static func launcherLibraryFrame(_ frames: [SymbolicatedFrame], own: [Int]) -> Int? {
        guard let first = own.first, frames[first].file == nil else { return nil }
        let entryNames: Set<String?> = [nil, "main", "_start"]
        for i in first..<frames.count {
            let f = frames[i]
            if own.contains(i) {
                guard entryNames.contains(f.function) else { return nil }
            } else if !(f.module.map(isRuntimeModule) ?? false) {
                return nil
            }
        }
        let candidates = frames[..<first].indices.filter { i in
            let f = frames[i]
            guard let module = f.module, !isRuntimeModule(module) else { return false }
            if let file = f.file, isToolchainFile(file) { return false }
            return !(f.function.map(isRuntimeFunction) ?? false)
        }
        return candidates.first { frames[$0].function != nil } ?? candidates.first
    }

    // MARK: - Tables

    /// Library names without `lib` … `.so.N` decoration that are platform code.
    static let runtimeLibraries: Set<String> = [
        "HeapGenShim",
        // glibc
        "c", "m", "mvec", "pthread", "dl", "rt", "resolv", "util", "anl", "nsl", "crypt", "thread_db",
        "BrokenLocale", "memusage", "SegFault", "pcprofile",
        // compiler runtime
        "stdc++", "gcc_s", "unwind", "atomic", "c++", "c++abi",
        // Swift
        "dispatch", "BlocksRuntime", "XCTest", "Testing", "icuuc", "icui18n", "icudata",
    ]

    /// Library name prefixes (after `lib`) that are platform code; `ld-` is the dynamic loader.
    static let runtimeLibraryPrefixes = ["swift", "Foundation", "_Foundation", "_Testing", "ld-linux", "ld-", "ld."]

    static let systemDirectories = ["/lib/", "/lib32/", "/lib64/", "/usr/lib/", "/usr/lib32/", "/usr/lib64/", "/usr/libexec/"]

    static let allocatorFunctions: Set<String> = [
        "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign", "aligned_alloc", "memalign",
        "valloc", "pvalloc", "strdup", "strndup", "__libc_malloc", "__libc_calloc", "__libc_realloc",
        "__libc_memalign", "operator new", "operator new[]", "operator delete", "operator delete[]",
    ]

    /// Allocation wrappers of common C programs and libraries (exact names; GCC clones such
    /// as `zmalloc.constprop.0` are matched by ``allocationWrapperPrefixes``).
    static let allocationWrappers: Set<String> = [
        // redis (zmalloc.c)
        "zmalloc", "zcalloc", "zrealloc", "zstrdup", "zmalloc_usable", "zcalloc_usable",
        "zrealloc_usable", "zcalloc_num", "zmalloc_no_tcache", "zrealloc_usable_internal",
        // GNU's and others' xmalloc
        "xmalloc", "xcalloc", "xrealloc", "xstrdup", "xstrndup", "xzalloc", "xmemdup", "xnmalloc", "xreallocarray",
        // GLib
        "g_malloc", "g_malloc0", "g_malloc_n", "g_malloc0_n", "g_realloc", "g_realloc_n", "g_try_malloc",
        "g_try_malloc0", "g_try_malloc_n", "g_try_malloc0_n", "g_try_realloc", "g_slice_alloc", "g_slice_alloc0",
        "g_slice_copy", "g_memdup", "g_memdup2", "g_strdup", "g_strndup", "g_new", "g_new0",
        // PHP (Zend)
        "emalloc", "ecalloc", "erealloc", "estrdup", "_emalloc", "_ecalloc", "_erealloc", "_estrdup",
        // CPython (Objects/obmalloc.c): its object and raw allocators, and their debug hooks
        "PyMem_Malloc", "PyMem_Calloc", "PyMem_Realloc", "PyMem_RawMalloc", "PyMem_RawCalloc",
        "PyMem_RawRealloc", "_PyMem_RawMalloc", "_PyMem_RawCalloc", "_PyMem_RawRealloc",
        "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc", "_PyObject_Malloc", "_PyObject_Calloc",
        "_PyObject_Realloc", "pymalloc_alloc", "pymalloc_realloc", "_PyMem_DebugRawAlloc",
        "_PyMem_DebugRawMalloc", "_PyMem_DebugRawCalloc", "_PyMem_DebugRawRealloc", "_PyMem_DebugMalloc",
        "_PyMem_DebugCalloc", "_PyMem_DebugRealloc",
        // OpenSSL (crypto/mem.c): Node's largest sites were all CRYPTO_zalloc
        "CRYPTO_malloc", "CRYPTO_zalloc", "CRYPTO_realloc", "CRYPTO_clear_realloc", "CRYPTO_strdup",
        "CRYPTO_strndup", "CRYPTO_memdup", "CRYPTO_secure_malloc", "CRYPTO_secure_zalloc",
        // Ruby (gc.c), Lua (lmem.c, lauxlib.c's default allocator), Tcl
        "ruby_xmalloc", "ruby_xmalloc2", "ruby_xcalloc", "ruby_xrealloc", "ruby_xrealloc2", "ruby_strdup",
        "objspace_xmalloc0", "objspace_xcalloc", "objspace_xrealloc",
        "luaM_malloc_", "luaM_realloc_", "luaM_saferealloc_", "luaM_growaux_", "luaM_shrinkvector_", "l_alloc",
        "Tcl_Alloc", "Tcl_Realloc", "Tcl_AttemptAlloc", "Tcl_AttemptRealloc", "TclpAlloc", "TclpRealloc",
        // HotSpot (os.cpp, allocation.cpp) and the java launcher (libjli): every JVM site was os::malloc
        "os::malloc", "os::realloc", "AllocateHeap", "ReallocateHeap", "JLI_MemAlloc", "JLI_MemRealloc", "JLI_StringDup",
        // Perl (util.c): every site of a Perl script was Perl_safesysmalloc
        "Perl_safesysmalloc", "Perl_safesyscalloc", "Perl_safesysrealloc",
        // PostgreSQL (mcxt.c, aset.c, fe_memutils.c, guc.c): every backend site was palloc's
        "palloc", "palloc0", "palloc_extended", "palloc_aligned", "repalloc", "repalloc0", "repalloc_huge",
        "repalloc_extended", "MemoryContextAlloc", "MemoryContextAllocZero", "MemoryContextAllocZeroAligned",
        "MemoryContextAllocExtended", "MemoryContextAllocHuge", "MemoryContextAllocAligned", "MemoryContextStrdup",
        "pstrdup", "pnstrdup", "AllocSetAlloc", "AllocSetRealloc", "AllocSetContextCreateInternal",
        "GenerationAlloc", "GenerationContextCreate", "SlabAlloc", "SlabContextCreate",
        "pg_malloc", "pg_malloc0", "pg_malloc_extended", "pg_realloc", "pg_strdup", "guc_malloc", "guc_realloc",
        "guc_strdup",
        // Swift runtime
        "swift_slowAlloc", "swift_allocObject",
    ]

    /// Prefixes of allocation wrapper families: redis's `ztrymalloc_usable_internal`, …
    static let allocationWrapperPrefixes = [
        "ztrymalloc", "ztrycalloc", "ztryrealloc", "zmalloc.", "zcalloc.", "zrealloc.", "xmalloc.", "g_malloc.",
        "_emalloc_",
    ]

    static let runtimeFunctionPrefixes = [
        "swift_", "_swift_", "__swift_", "swift::", "__swift::", "std::", "__gnu_cxx::", "__cxa_", "__cxx",
        "void swift::", "void std::",
        // Rust's standard library, when it has no file (no debug info): its crates and their
        // trait implementations, and the global allocator's shims.
        "alloc::", "core::", "<alloc::", "<core::", "<std::", "__rust_", "__rdl_", "__rg_",
    ]

    static let thunkPrefixes = [
        "reabstraction thunk", "thunk for ", "partial apply forwarder", "outlined ",
        "protocol witness for Swift.", "dispatch thunk of Swift.", "lazy protocol witness table accessor",
        "type metadata accessor", "type metadata completion", "value witness", "merged value witness",
        "one-time initialization token",
    ]

    /// Swift modules of the toolchain: a function whose qualified name starts so is library code.
    static let platformSwiftModules = [
        "Swift.", "_Concurrency.", "_StringProcessing.", "Foundation.", "FoundationEssentials.",
        "FoundationInternationalization.", "Dispatch.", "Synchronization.", "Observation.",
        "(extension in Swift)", "(extension in Foundation)", "(extension in FoundationEssentials)",
        "(extension in _Concurrency)", "(extension in Dispatch)",
    ]

    // MARK: - Helpers

    /// The file name of `path` (what follows its last slash).
    package static func baseName(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// `libfoo.so.6` → `foo`, `libc-2.36.so` → `c`, `ld-linux-x86-64.so.2` → `ld-linux-x86-64`.
    package static func libraryStem(_ name: String) -> String {
        var stem = Substring(name)
        if let so = stem.range(of: ".so") { stem = stem[..<so.lowerBound] }
        if stem.hasPrefix("lib") {
            stem = stem.dropFirst(3)
            // glibc before 2.34 spelled versions into the name: libc-2.31.so, libpthread-2.31.so.
            if let dash = stem.lastIndex(of: "-"), stem[stem.index(after: dash)...].first?.isNumber == true {
                stem = stem[..<dash]
            }
        }
        return String(stem)
    }

    /// The qualified name inside Swift decorations: `merged generic specialization <Swift.String> of
    /// Swift.Array.append(…)` → `Swift.Array.append(…)`; `static Foo.bar()` → `Foo.bar()`.
    static func swiftCoreName(_ function: String) -> Substring {
        var s = Substring(function)
        var changed = true
        while changed {
            changed = false
            for word in ["merged ", "static ", "@objc ", "dispatch thunk of ", "protocol witness for "] where s.hasPrefix(word) {
                s = s.dropFirst(word.count)
                changed = true
            }
            // "generic specialization <…> of ", "function signature specialization <…> of ", "specialized "
            if s.hasPrefix("specialized ") {
                s = s.dropFirst("specialized ".count)
                changed = true
            } else if let range = s.range(of: "specialization <"), s[..<range.lowerBound].allSatisfy({ $0.isLetter || $0 == " " }) {
                var depth = 0
                var i = s.index(before: range.upperBound)
                while i < s.endIndex {
                    if s[i] == "<" { depth += 1 }
                    if s[i] == ">" { depth -= 1; if depth == 0 { break } }
                    i = s.index(after: i)
                }
                guard i < s.endIndex else { return s }
                let rest = s[s.index(after: i)...]
                guard rest.hasPrefix(" of ") else { return s }
                s = rest.dropFirst(4)
                changed = true
            }
        }
        return s
    }
}
