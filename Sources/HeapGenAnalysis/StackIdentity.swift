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
/// Memory: ~28 bytes (a 128-bit key and an id, and 4-8 bytes of hash table) per distinct
/// stack, not its frames: the module-relative frames are hashed, not kept (keeping them,
/// two words a frame, was `heapgen report`'s largest cost on a test suite with 593 k
/// stacks of ~60 frames). Keys are kept in chunks and the table holds their positions:
/// a dictionary of keys cost 170 MB, and 250 MB while it grew, for the 3.8 M stacks of
/// swift-argument-parser's tests. Two
/// different stacks with one key would count as one code path; with 128 bits of two
/// independent hash chains that takes ~2^64 distinct stacks, far beyond any trace.
struct StackIdentity {
    /// Modules mapped now, oldest first, with their interned identity.
    private var loaded: [(module: ModuleRecord, identity: UInt64)] = []
    /// Interned module identities (path and build id), from 1.
    private var identities: [ModuleKey: UInt64] = [:]
    /// Keys of stacks' module-relative frames, and the first stack id defined with each.
    private var keys = ChunkedArray<Key>()
    private var firsts = ChunkedArray<UInt32>()
    /// Open addressing (linear probing) on the key's low bits: position in ``keys`` plus
    /// one, 0 = empty. At most half full.
    private var slots: [UInt32] = []
    /// Per address: its (identity, offset) under the current module map.
    private var memo: [UInt64: (identity: UInt64, offset: UInt64)] = [:]

    /// Two independent 64-bit hashes of a stack's (module identity, offset) frames.
    private struct Key: Hashable {
        var a: UInt64
        var b: UInt64
    }

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
        // Each step is a bijective mix of (state ^ word), so two chains with different
        // seeds and constants are independent; the count makes lengths distinct.
        var a: UInt64 = 0x9e37_79b9_7f4a_7c15 ^ UInt64(frames.count)
        var b: UInt64 = 0xc2b2_ae3d_27d4_eb4f &+ UInt64(frames.count)
        for address in frames {
            let place = locate(address)
            a = Self.mixA(a ^ place.identity)
            a = Self.mixA(a ^ place.offset)
            b = Self.mixB(b &+ place.identity)
            b = Self.mixB(b &+ place.offset)
        }
        let key = Key(a: a, b: b)
        if (keys.count + 1) * 2 > slots.count { grow() }
        let mask = slots.count - 1
        var i = Int(truncatingIfNeeded: key.a) & mask
        while slots[i] != 0 {
            let n = Int(slots[i]) - 1
            if keys[n] == key { return firsts[n] }
            i = (i + 1) & mask
        }
        keys.append(key)
        firsts.append(id)
        slots[i] = UInt32(keys.count)
        return id
    }

    /// Doubles the table and places every key again.
    private mutating func grow() {
        slots = [UInt32](repeating: 0, count: max(1024, slots.count * 2))
        let mask = slots.count - 1
        for n in keys.indices {
            var i = Int(truncatingIfNeeded: keys[n].a) & mask
            while slots[i] != 0 { i = (i + 1) & mask }
            slots[i] = UInt32(n + 1)
        }
    }

    /// splitmix64's finalizer.
    private static func mixA(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// murmur3's fmix64, offset.
    private static func mixB(_ x: UInt64) -> UInt64 {
        var z = x ^ 0x5851_f42d_4c95_7f2d
        z = (z ^ (z >> 33)) &* 0xff51_afd7_ed55_8ccd
        z = (z ^ (z >> 33)) &* 0xc4ce_b9fe_1a85_ec53
        return z ^ (z >> 33)
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
