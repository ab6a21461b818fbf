#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// A demangled name in two lengths.
public struct DemangledName: Sendable, Hashable {
    /// e.g. `Demo.ProfileViewModel.init(name: Swift.String) -> Demo.ProfileViewModel`
    public var full: String
    /// e.g. `ProfileViewModel.init(name:)`
    public var short: String
}

/// Swift demangling. In a Swift process it calls the runtime: `swift_demangle` (exported by
/// libswiftCore) for the full form and `_swift_backtrace_demangle` (the runtime's backtracer
/// SPI, "simplified UI" options: no module names, argument labels only) for the short form,
/// both found with `dlsym(RTLD_DEFAULT, …)`. Without them it runs
/// `swift-demangle --compact [--simplified] NAME…` in batches. C++ names that are still
/// mangled go through libstdc++'s `__cxa_demangle`; other names (C, and C++ that
/// llvm-symbolizer already demangled) pass through. Not thread-safe: the owner serializes.
final class Demangler {
    enum Mode: Sendable, Equatable {
        /// Runtime functions, else the `swift-demangle` found next to the toolchain.
        case automatic
        /// Only `swift-demangle` at this path (tests; hosts without the Swift runtime).
        case commandLine(String)
        /// Leave Swift names mangled.
        case disabled
    }

    private typealias FullFunction = @convention(c) (
        UnsafePointer<CChar>?, Int, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UInt32
    ) -> UnsafeMutablePointer<CChar>?
    private typealias ShortFunction = @convention(c) (
        UnsafePointer<CChar>?, Int, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?
    ) -> UnsafeMutablePointer<CChar>?

    private typealias CxxFunction = @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int32>?
    ) -> UnsafeMutablePointer<CChar>?

    private let full: FullFunction?
    private let short: ShortFunction?
    /// libstdc++'s `__cxa_demangle` (c++filt's demangler), for the C++ names llvm-symbolizer
    /// leaves mangled: LLVM 21's demangler gives up on some (`std::make_shared<Node>()`'s
    /// `_ZSt11make_sharedI4NodeJEESt10shared_ptrINSt9enable_ifIXntsrSt8is_arrayIT_E5valueES4_E4typeEEDpOT0_`).
    private let cxx: CxxFunction?
    private let tool: String?
    private let idleTimeout: Double
    private var cache: [String: DemangledName] = [:]

    init(mode: Mode = .automatic, idleTimeout: Double = 10) {
        self.idleTimeout = idleTimeout
        cxx = dlsym(nil, "__cxa_demangle").map { unsafeBitCast($0, to: CxxFunction.self) }
        switch mode {
        case .automatic:
            // dlsym(RTLD_DEFAULT, …): RTLD_DEFAULT is the null handle on glibc.
            full = dlsym(nil, "swift_demangle").map { unsafeBitCast($0, to: FullFunction.self) }
            short = dlsym(nil, "_swift_backtrace_demangle").map { unsafeBitCast($0, to: ShortFunction.self) }
            tool = (full == nil || short == nil) ? ToolLocator.swiftDemangle() : nil
        case .commandLine(let path):
            full = nil; short = nil; tool = path
        case .disabled:
            full = nil; short = nil; tool = nil
        }
    }

    /// True when Swift names can be demangled at all.
    var isAvailable: Bool { full != nil || tool != nil }

    /// A Swift mangled name: `$s…`/`$S…`/`$e…` (optionally with a leading `_`) or the Swift 4 `_T0…`.
    static func isSwiftMangled(_ name: String) -> Bool {
        var s = Substring(name)
        if s.hasPrefix("_T0") { return true }
        if s.hasPrefix("_") { s = s.dropFirst() }
        return s.hasPrefix("$s") || s.hasPrefix("$S") || s.hasPrefix("$e")
    }

    /// Demangles every name; non-Swift names and names that don't demangle map to themselves.
    func demangle(_ names: [String]) -> [String: DemangledName] {
        var out: [String: DemangledName] = [:]
        var partial: [String: (full: String?, short: String?)] = [:]
        for n in names where out[n] == nil && partial[n] == nil {
            if let c = cache[n] { out[n] = c; continue }
            if n.hasPrefix("_Z"), let cxx, let name = Self.call(Self.withoutLLVMSuffix(n), { p, _ in cxx(p, nil, nil, nil) }) {
                let plain = Self.rustLegacy(name) ?? name
                out[n] = DemangledName(full: plain, short: plain)
                continue
            }
            guard Self.isSwiftMangled(n) else {
                let plain = Self.rustLegacy(n) ?? n
                out[n] = DemangledName(full: plain, short: plain)
                continue
            }
            let fullName = full.flatMap { f in Self.call(n) { f($0, $1, nil, nil, 0) } }
            let shortName = short.flatMap { s in Self.call(n) { s($0, $1, nil, nil) } }
            if let fullName, let shortName {
                let d = DemangledName(full: fullName, short: Self.tidyShort(shortName))
                cache[n] = d
                out[n] = d
            } else {
                partial[n] = (fullName, shortName)
            }
        }
        guard !partial.isEmpty else { return out }
        var fulls: [String: String] = [:], shorts: [String: String] = [:]
        if let tool {
            fulls = runTool(tool, partial.filter { $0.value.full == nil }.map(\.key), simplified: false)
            shorts = runTool(tool, partial.filter { $0.value.short == nil }.map(\.key), simplified: true)
        }
        for (n, p) in partial {
            let fullName = p.full ?? fulls[n]
            let d = DemangledName(full: fullName ?? n, short: Self.tidyShort(p.short ?? shorts[n] ?? fullName ?? n))
            if fullName != nil { cache[n] = d }
            out[n] = d
        }
        return out
    }

    func demangle(_ name: String) -> DemangledName {
        demangle([name])[name] ?? DemangledName(full: name, short: name)
    }

    /// Calls a runtime demangler; nil if it fails (it returns null, or the input unchanged).
    private static func call(_ name: String,
                             _ body: (UnsafePointer<CChar>, Int) -> UnsafeMutablePointer<CChar>?) -> String? {
        let result: String? = name.withCString { p in
            guard let r = body(p, strlen(p)) else { return nil }
            defer { free(r) }
            return String(cString: r)
        }
        guard let result, !result.isEmpty, result != name else { return nil }
        return result
    }

    /// `swift-demangle --compact [--simplified] NAME…`, one output line per name, in batches.
    private func runTool(_ tool: String, _ names: [String], simplified: Bool) -> [String: String] {
        var out: [String: String] = [:]
        var start = 0
        while start < names.count {
            // Keep argv well under ARG_MAX.
            var end = start, bytes = 0
            while end < names.count, end - start < 500, bytes + names[end].utf8.count < 64_000 {
                bytes += names[end].utf8.count + 1
                end += 1
            }
            if end == start { end = start + 1 }
            let batch = Array(names[start..<end])
            start = end
            let args = ["--compact"] + (simplified ? ["--simplified"] : []) + batch
            guard let text = ChildProcess.runToCompletion(executable: tool, arguments: args, idleTimeout: idleTimeout)
            else { continue }
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard lines.count >= batch.count else { continue }
            for (k, n) in batch.enumerated() where lines[k] != n && !lines[k].isEmpty {
                out[n] = lines[k]
            }
        }
        return out
    }

    /// `name` without the `.llvm.<digits>` LLVM appends to a function it moved between
    /// codegen units (ThinLTO, Rust's parallel codegen): a uniquifier, not part of the name,
    /// and one that makes libstdc++'s `__cxa_demangle` give up on a Rust name.
    static func withoutLLVMSuffix(_ name: String) -> String {
        guard let r = name.range(of: ".llvm.", options: .backwards),
              !name[r.upperBound...].isEmpty, name[r.upperBound...].allSatisfy(\.isNumber) else { return name }
        return String(name[..<r.lowerBound])
    }

    /// A Rust name of the legacy mangling as an Itanium demangler leaves it
    /// (`alloc::vec::Vec$LT$T$C$A$GT$::with_capacity_in::h09af10dba97e4961`) in Rust's own
    /// form (`alloc::vec::Vec<T,A>::with_capacity_in`), as rustc-demangle writes it: the
    /// hash component dropped, `$…$` escapes and `..` decoded. Nil for any other name: the
    /// final `::h` and 16 hex digits are what marks the legacy scheme (v0 names, `_R…`,
    /// llvm-symbolizer demangles itself). A clone's suffix, as the Itanium demangler appends
    /// it (` (.llvm.4993115637244720344)`, a function LLVM renamed when it moved it between
    /// codegen units), is dropped for `.llvm.` and kept otherwise, as rustc-demangle does.
    static func rustLegacy(_ name: String) -> String? {
        if name.hasSuffix(")"), let open = name.range(of: " (.", options: .backwards) {
            guard let base = rustLegacy(String(name[..<open.lowerBound])) else { return nil }
            let suffix = name[open.lowerBound...]
            return suffix.hasPrefix(" (.llvm.") ? base : base + suffix
        }
        let hashLength = 19   // "::h" and 16 hex digits
        guard name.utf8.count > hashLength else { return nil }
        let cut = name.index(name.endIndex, offsetBy: -hashLength)
        let hash = name[cut...]
        guard hash.hasPrefix("::h"), hash.dropFirst(3).allSatisfy(\.isHexDigit) else { return nil }
        var out = ""
        for (k, component) in name[..<cut].split(separator: "::", omittingEmptySubsequences: false).enumerated() {
            if k > 0 { out += "::" }
            // A component that would start with `$` is written `_$…`.
            var rest = component.hasPrefix("_$") ? component.dropFirst() : component
            while let c = rest.first {
                if c == "$", let end = rest.dropFirst().firstIndex(of: "$") {
                    let code = rest[rest.index(after: rest.startIndex)..<end]
                    guard let decoded = Self.rustEscape(code) else { return nil }
                    out += decoded
                    rest = rest[rest.index(after: end)...]
                } else if rest.hasPrefix("..") {
                    out += "::"
                    rest = rest.dropFirst(2)
                } else {
                    out.append(c)
                    rest = rest.dropFirst()
                }
            }
        }
        return out
    }

    /// The character of one `$…$` escape of a legacy Rust name (`LT` → `<`, `u20` → ` `).
    private static func rustEscape(_ code: Substring) -> String? {
        switch code {
        case "SP": return "@"
        case "BP": return "*"
        case "RF": return "&"
        case "LT": return "<"
        case "GT": return ">"
        case "LP": return "("
        case "RP": return ")"
        case "C": return ","
        default:
            guard code.hasPrefix("u"), let value = UInt32(code.dropFirst(), radix: 16),
                  let scalar = Unicode.Scalar(value) else { return nil }
            return String(Character(scalar))
        }
    }

    /// The simplified demangler leaves the context of top-level closures
    /// empty ("closure #2 in "); name it.
    static func tidyShort(_ name: String) -> String {
        name.hasSuffix(" in ") ? name + "top-level code" : name
    }
}
