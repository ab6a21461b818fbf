// The symbolizer: recorded addresses to frames, from stored symbols or the module files on disk.

import Foundation

/// Turns recorded return addresses into functions, files, lines and inlined frames, after the
/// traced process has gone, from the module files on disk (checked against their recorded
/// build IDs).
///
/// ```swift
/// let symbolizer = Symbolizer()
/// let answers = symbolizer.symbolize([(module: exe, address: 0x5555_5555_5190)])
/// // answers[0].frames: innermost inlined frame first, the physical function last.
/// ```
///
/// Never fails: whatever can't be resolved (no symbolizer, stale or missing module, address
/// outside the module, a symbolizer that crashes or hangs) comes back as one frame with
/// `function == nil` and the module and address (``SymbolizationResult``). Thread-safe
/// (calls are serialized).
public final class Symbolizer: @unchecked Sendable {
    /// The program doing the lookups.
    public let backend: Backend
    private let lookup: SymbolizerBackend?
    private let demangler: Demangler
    private let resolver: ModuleResolver
    private let lock = NSLock()

    /// Per (file symbolized from + recorded build ID, interned; looked-up virtual address).
    private struct CacheKey: Hashable {
        var file: Int
        var address: UInt64
    }
    private struct FileKey: Hashable {
        var file: String
        var buildID: [UInt8]
    }
    private var fileIDs: [FileKey: Int] = [:]
    private var filePaths: [String] = []
    /// Per file and virtual address, the frames demangled and marked inlined, without the
    /// request-specific parts (`module` nil, `address` 0): one file serves every module path
    /// and load bias it was mapped at. Assembly sets both per request.
    private var cache: [CacheKey: [SymbolicatedFrame]] = [:]
    private let maxCacheEntries = 2_000_000

    public init(options: Options = Options()) {
        let environment = options.environment ?? ProcessInfo.processInfo.environment
        let override = options.symbolizerPath ?? environment["HEAPGEN_SYMBOLIZER"]
        var candidates = ToolLocator.symbolizerCandidates(override: override, environment: environment)
        if !options.allowFallbacks { candidates = Array(candidates.prefix(1)) }
        var chosen = Backend.none
        for c in candidates {
            switch c {
            case .llvmSymbolizer(let p), .addr2line(let p):
                if ToolLocator.isExecutable(p) { chosen = c }
            case .none: break
            }
            if chosen != .none { break }
        }
        backend = chosen
        switch chosen {
        case .llvmSymbolizer(let p):
            // The default /usr/lib/debug is searched by llvm-symbolizer anyway.
            let extra = options.debugFileDirectories.filter { $0 != "/usr/lib/debug" }
            lookup = LLVMSymbolizerBackend(executable: p, debugFileDirectories: extra, idleTimeout: options.timeout)
        case .addr2line(let p):
            lookup = Addr2LineBackend(executable: p, idleTimeout: options.timeout)
        case .none:
            lookup = nil
        }
        switch options.swiftDemangling {
        case .automatic: demangler = Demangler(mode: .automatic)
        case .commandLine(let p): demangler = Demangler(mode: .commandLine(p))
        case .disabled: demangler = Demangler(mode: .disabled)
        }
        resolver = ModuleResolver(debugFileDirectories: options.debugFileDirectories)
    }

    /// Symbolizes a batch: one answer per request, in order.
    public func symbolize(_ requests: [(module: Module, address: UInt64)], isReturnAddress: Bool = true) -> [SymbolizationResult] {
        symbolize(requests.map { SymbolizationRequest(module: $0.module, address: $0.address, isReturnAddress: isReturnAddress) })
    }

    /// Ends the symbolizer's child process, letting go of the modules it read (the answers
    /// already given stay cached); the next look-up starts another.
    public func releaseProcess() {
        lock.lock()
        defer { lock.unlock() }
        lookup?.releaseChild()
    }

    /// Symbolizes one address.
    public func symbolize(_ request: SymbolizationRequest) -> SymbolizationResult {
        symbolize([request])[0]
    }

    /// Symbolizes a batch: one answer per request, in order (its frames innermost inlined
    /// frame first, never empty). Requests `stored` holds (the symbols a trace stored when it
    /// was recorded) are answered from it, without looking at any file; the others as usual.
    public func symbolize(_ requests: [SymbolizationRequest], stored: StoredSymbols?) -> [SymbolizationResult] {
        guard let stored, !stored.isEmpty else { return symbolize(requests) }
        var out: [SymbolizationResult?] = requests.map { stored.answer(for: $0) }
        let missing = out.indices.filter { out[$0] == nil }
        if !missing.isEmpty {
            let answers = symbolize(missing.map { requests[$0] })
            for (i, answer) in zip(missing, answers) { out[i] = answer }
        }
        return out.compactMap { $0 }   // every request answered, stored or looked up
    }

    /// Symbolizes a batch: one answer per request, in order (its frames innermost inlined
    /// frame first, never empty).
    ///
    /// A return address whose byte before is in no function is looked up at its own byte:
    /// makecontext and the kernel's signal delivery plant the first byte of a function
    /// (`__start_context`, `__restore_rt`) where no call put it.
    public func symbolize(_ requests: [SymbolizationRequest]) -> [SymbolizationResult] {
        lock.lock()
        defer { lock.unlock() }
        var out = lookUp(requests)
        let retry = requests.indices.filter { requests[$0].isReturnAddress && out[$0].frames.last?.function == nil }
        if !retry.isEmpty {
            let exact = retry.map { i -> SymbolizationRequest in
                var r = requests[i]
                r.isReturnAddress = false
                return r
            }
            for (i, answer) in zip(retry, lookUp(exact)) where answer.frames.last?.function != nil {
                out[i] = answer
            }
            let unnamed = retry.filter { out[$0].frames.last?.function == nil }
            let signal = signalReturns(unnamed.map { requests[$0] })
            for (i, yes) in zip(unnamed, signal) where yes {
                var frame = out[i].frames[out[i].frames.count - 1]
                frame.function = Self.signalFrameName
                frame.shortFunction = Self.signalFrameName
                out[i].frames = [frame]
            }
        }
        return out
    }

    /// The kernel's return into a signal handler's interrupted code (libc's unnamed
    /// `__restore_rt`), named as gdb and lldb name it.
    public static let signalFrameName = "<signal handler called>"

    /// Whether the code at each request's address is the rt_sigreturn system call: x86-64
    /// `mov $15, %rax; syscall`, AArch64 `mov x8, #139; svc #0`. Each module's file is read
    /// once for all its addresses.
    private func signalReturns(_ requests: [SymbolizationRequest]) -> [Bool] {
        let x86: [UInt8] = [0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05]
        let arm: [UInt8] = [0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4]
        let keys = requests.map { CodeKey(path: $0.module.path, offset: $0.moduleOffset) }
        var unknown: [String: [UInt64]] = [:]
        for key in keys where signalReturnCache[key] == nil { unknown[key.path, default: []].append(key.offset) }
        for (path, offsets) in unknown {
            for (offset, code) in zip(offsets, ELFFile.bytes(path: path, vaddrs: offsets, count: 9)) {
                let code = code ?? []
                signalReturnCache[CodeKey(path: path, offset: offset)] = code == x86 || code.prefix(8).elementsEqual(arm)
            }
        }
        return keys.map { signalReturnCache[$0] ?? false }
    }

    private struct CodeKey: Hashable {
        var path: String
        var offset: UInt64
    }
    /// signalReturns' answers.
    private var signalReturnCache: [CodeKey: Bool] = [:]

    /// `symbolize`'s look-up, with the lock held.
    private func lookUp(_ requests: [SymbolizationRequest]) -> [SymbolizationResult] {
        // 1. Which file each request can be symbolized from, and its cache key. Requests of
        //    one module usually come in runs: remember the last module's answer.
        var keys: [CacheKey?] = []
        var stale: [Bool] = []
        keys.reserveCapacity(requests.count)
        stale.reserveCapacity(requests.count)
        var last: (module: Module, resolution: ModuleResolver.Resolution, fileID: Int?)?
        var seenModules: [ResolvedModuleKey: (ModuleResolver.Resolution, Int?)] = [:]
        for r in requests {
            let resolution: ModuleResolver.Resolution
            let fileID: Int?
            if let l = last, l.module.path == r.module.path, l.module.buildID == r.module.buildID {
                resolution = l.resolution
                fileID = l.fileID
            } else {
                let mk = ResolvedModuleKey(path: r.module.path, buildID: r.module.buildID)
                if let known = seenModules[mk] {
                    (resolution, fileID) = known
                } else {
                    resolution = resolver.resolve(r.module)
                    if case .usable(let file, _, _) = resolution {
                        let fk = FileKey(file: file, buildID: r.module.buildID)
                        if let id = fileIDs[fk] { fileID = id } else {
                            fileID = filePaths.count
                            fileIDs[fk] = filePaths.count
                            filePaths.append(file)
                        }
                    } else {
                        fileID = nil
                    }
                    seenModules[mk] = (resolution, fileID)
                }
                last = (r.module, resolution, fileID)
            }
            stale.append(resolution.stale)
            guard lookup != nil, let fileID, case .usable(_, let elf, _) = resolution, elf.covers(r.lookupAddress) else {
                keys.append(nil)
                continue
            }
            keys.append(CacheKey(file: fileID, address: r.lookupAddress))
        }

        // 2. Look up what isn't cached, each distinct address once.
        var missing: [CacheKey] = []
        var seen = Set<CacheKey>()
        for case let k? in keys where cache[k] == nil && seen.insert(k).inserted { missing.append(k) }
        var fresh: [CacheKey: [SymbolicatedFrame]] = [:]
        if let lookup, !missing.isEmpty {
            let outcomes = lookup.lookup(missing.map { BackendQuery(path: filePaths[$0.file], address: $0.address) })
            var names: Set<String> = []
            for case .frames(let fs) in outcomes { for f in fs { if let n = f.function { names.insert(n) } } }
            let demangled = demangler.demangle(Array(names))
            if cache.count + missing.count > maxCacheEntries { cache.removeAll(keepingCapacity: true) }
            for (k, outcome) in zip(missing, outcomes) {
                guard case .frames(let fs) = outcome else { continue }   // failed: not cached
                let frames = fs.enumerated().map { j, f -> SymbolicatedFrame in
                    var frame = f
                    let d = f.function.flatMap { demangled[$0] }
                    frame.function = d?.full ?? f.function
                    frame.shortFunction = d?.short ?? f.function
                    frame.inlined = j < fs.count - 1
                    return frame
                }
                cache[k] = frames
                fresh[k] = frames
            }
        }

        // 3. Assemble.
        var out: [SymbolizationResult] = []
        out.reserveCapacity(requests.count)
        for (i, r) in requests.enumerated() {
            guard let k = keys[i], let frames = cache[k] ?? fresh[k], !frames.isEmpty else {
                out.append(.unresolved(r, stale: stale[i]))
                continue
            }
            out.append(SymbolizationResult(frames: frames.map { f in
                var frame = f
                frame.module = r.module.path
                frame.address = r.address
                frame.moduleOffset = r.moduleOffset
                return frame
            }, moduleOffset: r.moduleOffset, stale: stale[i]))
        }
        return out
    }

    /// Forgets cached lookups (the symbolizer child keeps its own caches).
    public func clearCache() {
        lock.lock()
        cache.removeAll()
        lock.unlock()
    }

    /// Full demangled forms of `names` (non-Swift names map to themselves), serialized like
    /// every other use of the demangler.
    func demangledNames(_ names: [String]) -> [String: String] {
        lock.lock()
        defer { lock.unlock() }
        return demangler.demangle(names).mapValues(\.full)
    }

    /// The backend object (tests look at its child process).
    var lookupBackend: SymbolizerBackend? { lookup }

    private struct ResolvedModuleKey: Hashable {
        var path: String
        var buildID: [UInt8]
    }
}
