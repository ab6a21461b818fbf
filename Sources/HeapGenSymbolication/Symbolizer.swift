import Foundation

/// Turns recorded return addresses into functions, files, lines and inlined frames, after the
/// traced process has gone, from the module files on disk (checked against their recorded
/// build IDs).
///
/// ```swift
/// let symbolizer = Symbolizer()
/// let frames = symbolizer.symbolize([(module: exe, address: 0x5555_5555_5190)])
/// // frames[0]: innermost inlined frame first, the physical function last.
/// ```
///
/// Never fails: whatever can't be resolved (no symbolizer, stale or missing module, address
/// outside the module, a symbolizer that crashes or hangs) comes back as one frame with
/// `function == nil` and the module and offset. Thread-safe (calls are serialized).
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
    /// A frame without the request-specific parts.
    private struct CachedFrame {
        var function: String?
        var shortFunction: String?
        var file: String?
        var line: Int?
        var column: Int?
    }
    private var cache: [CacheKey: [CachedFrame]] = [:]
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

    /// Symbolizes a batch: one array of frames per request, in order.
    public func symbolize(_ requests: [(module: Module, address: UInt64)], isReturnAddress: Bool = true) -> [[SymbolizedFrame]] {
        symbolize(requests.map { SymbolizationRequest(module: $0.module, address: $0.address, isReturnAddress: isReturnAddress) })
    }

    /// Symbolizes one address.
    public func symbolize(_ request: SymbolizationRequest) -> [SymbolizedFrame] {
        symbolize([request])[0]
    }

    /// Symbolizes a batch: one array of frames per request, in order (each innermost inlined
    /// frame first, never empty). Requests `stored` holds (the symbols a trace stored when it
    /// was recorded) are answered from it, without looking at any file; the others as usual.
    public func symbolize(_ requests: [SymbolizationRequest], stored: StoredSymbols?) -> [[SymbolizedFrame]] {
        guard let stored, !stored.isEmpty else { return symbolize(requests) }
        var out: [[SymbolizedFrame]?] = requests.map { stored.frames(for: $0) }
        let missing = out.indices.filter { out[$0] == nil }
        if !missing.isEmpty {
            let answers = symbolize(missing.map { requests[$0] })
            for (i, frames) in zip(missing, answers) { out[i] = frames }
        }
        return out.map { $0 ?? [] }
    }

    /// Symbolizes a batch: one array of frames per request, in order (each innermost inlined
    /// frame first, never empty).
    public func symbolize(_ requests: [SymbolizationRequest]) -> [[SymbolizedFrame]] {
        lock.lock()
        defer { lock.unlock() }

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
        var fresh: [CacheKey: [CachedFrame]] = [:]
        if let lookup, !missing.isEmpty {
            let outcomes = lookup.lookup(missing.map { BackendQuery(path: filePaths[$0.file], address: $0.address) })
            var names: Set<String> = []
            for case .frames(let fs) in outcomes { for f in fs { if let n = f.function { names.insert(n) } } }
            let demangled = demangler.demangle(Array(names))
            if cache.count + missing.count > maxCacheEntries { cache.removeAll(keepingCapacity: true) }
            for (k, outcome) in zip(missing, outcomes) {
                guard case .frames(let fs) = outcome else { continue }   // failed: not cached
                let frames = fs.map { f -> CachedFrame in
                    let d = f.function.flatMap { demangled[$0] }
                    return CachedFrame(function: d?.full ?? f.function, shortFunction: d?.short ?? f.function,
                                       file: f.file, line: f.line, column: f.column)
                }
                cache[k] = frames
                fresh[k] = frames
            }
        }

        // 3. Assemble.
        var out: [[SymbolizedFrame]] = []
        out.reserveCapacity(requests.count)
        for (i, r) in requests.enumerated() {
            let base = SymbolizedFrame(module: r.module.path, address: r.address, moduleOffset: r.moduleOffset,
                                       inlined: false, stale: stale[i])
            guard let k = keys[i], let frames = cache[k] ?? fresh[k], !frames.isEmpty else {
                out.append([base])
                continue
            }
            out.append(frames.enumerated().map { j, f in
                var s = base
                s.function = f.function
                s.shortFunction = f.shortFunction
                s.file = f.file
                s.line = f.line
                s.column = f.column
                s.inlined = j < frames.count - 1
                return s
            })
        }
        return out
    }

    /// Forgets cached lookups (the symbolizer child keeps its own caches).
    public func clearCache() {
        lock.lock()
        cache.removeAll()
        lock.unlock()
    }

    /// The backend object (tests look at its child process).
    var lookupBackend: SymbolizerBackend? { lookup }

    private struct ResolvedModuleKey: Hashable {
        var path: String
        var buildID: [UInt8]
    }
}
