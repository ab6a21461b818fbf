// One code path, one stack: stacks that differ only by the module load they ran in.

import HeapGenTrace

/// Tells which stack ids of a trace are one code path.
///
/// The shim numbers stacks per *epoch*: after every module load or unload it defines each
/// stack again under a new id, so that its frames are read against the modules mapped at
/// that moment. A library that is loaded, called and unloaded k times thus allocates from
/// k stack ids (at the same addresses, or at other ones if it was mapped elsewhere), and a
/// site keyed by stack id would be split k ways: its live blocks at exit spread over k sites,
/// most of them too small to be listed, while the totals count them all.
///
/// A frame is identified by the module that held its address when the stack was defined
/// (path and build id) and its offset in that module; an address in no module by itself.
/// Stacks whose frames are identical that way are one code path: ``canonical(_:frames:)``
/// answers the first stack id defined with those frames.
///
/// Memory: the module-relative frames of every distinct stack (two words a frame).
struct StackIdentity {
    /// Modules mapped now, oldest first, with their interned identity.
    private var loaded: [(module: ModuleRecord, identity: UInt64)] = []
    /// Interned module identities (path and build id), from 1.
    private var identities: [ModuleKey: UInt64] = [:]
    /// Module-relative frames of a stack → first stack id defined with them.
    private var firstStack: [[UInt64]: UInt32] = [:]
    /// Per address: its (identity, offset) under the current module map.
    private var memo: [UInt64: (identity: UInt64, offset: UInt64)] = [:]

    private struct ModuleKey: Hashable {
        var path: String
        var buildID: [UInt8]
    }

    /// A module was mapped.
    mutating func load(_ module: ModuleRecord) {
        let key = ModuleKey(path: module.path, buildID: module.buildID)
        let identity: UInt64
        if let known = identities[key] {
            identity = known
        } else {
            identity = UInt64(identities.count + 1)
            identities[key] = identity
        }
        loaded.append((module, identity))
        memo.removeAll(keepingCapacity: true)
    }

    /// The module at `loadBias` was unmapped (the latest one, if several were there).
    mutating func unload(loadBias: UInt64) {
        if let i = loaded.lastIndex(where: { $0.module.loadBias == loadBias }) { loaded.remove(at: i) }
        memo.removeAll(keepingCapacity: true)
    }

    /// The first stack id defined with the same module-relative frames as `frames` (stack
    /// `id`, defined now), or `id` itself if it is the first.
    mutating func canonical(_ id: UInt32, frames: [UInt64]) -> UInt32 {
        var key: [UInt64] = []
        key.reserveCapacity(frames.count * 2)
        for address in frames {
            let place = locate(address)
            key.append(place.identity)
            key.append(place.offset)
        }
        if let first = firstStack[key] { return first }
        firstStack[key] = id
        return id
    }

    /// (module identity, offset) of `address`; (0, address) if no module holds it.
    private mutating func locate(_ address: UInt64) -> (identity: UInt64, offset: UInt64) {
        if let known = memo[address] { return known }
        var found: (identity: UInt64, offset: UInt64) = (0, address)
        search: for entry in loaded.reversed() {
            let m = entry.module
            for segment in m.segments {
                let start = m.loadBias &+ segment.vaddr
                if address >= start && address - start < segment.memsz {
                    found = (entry.identity, address &- m.loadBias)
                    break search
                }
            }
        }
        memo[address] = found
        return found
    }
}
