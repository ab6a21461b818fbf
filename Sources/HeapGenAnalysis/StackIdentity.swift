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
///
/// ``compact()`` keeps 64 bits of each key from then on: 32 by stack id (an ``IdMap``),
/// 32 with the id in the table's slots; ~13 bytes a stack, not 28 (108 → ~50 MB on that
/// trace). Answers are then candidates: the caller checks them (``wrongAliases(_:check:)``,
/// the exact keys computed again by ``check(_:frames:)`` in a second read of the trace)
/// and reads the trace again with the wrong ones ``refused``. Two different stacks with one 64-bit key take
/// ~2^32 distinct stacks to be likely.
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

    /// Once ``compact()`` ran: the ``fingerprint(_:)`` of the key's `a` by stack id (its low
    /// bits place the stack) and open addressing with `b`'s fingerprint and the id in each
    /// slot (`b << 32 | id`, 0 = empty); at most 15/16 full (so that the 3.8 M stacks of
    /// the suite trace take 2^22 slots, 32 MB, not 2^23; probes are sequential).
    private(set) var isCompact = false
    private var fingerprintsA = IdMap()
    private var compactSlots: [UInt64] = []
    private var compactCount = 0
    /// (id << 32 | first) pairs a compact identity must not answer: found different.
    var refused: Set<UInt64> = []
    /// Keeps only `mask`'s bits of the compact halves (tests: collisions on purpose).
    var fingerprintMask: UInt32 = .max

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
        if isCompact { return compactCanonical(id, key) }
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

    /// Keeps 64 bits of every key from now on (see the type's notes); aliases answered
    /// before stay exact.
    mutating func compact() {
        guard !isCompact else { return }
        isCompact = true
        for n in keys.indices {
            let id = firsts[n]
            guard id != 0, fingerprintsA[id] == 0 else { continue }
            insertCompact(id, a: fingerprint(keys[n].a), b: fingerprint(keys[n].b))
        }
        keys = ChunkedArray()
        firsts = ChunkedArray()
        slots = []
    }

    /// The low 32 bits of a key's half (masked), 1 for 0: an ``IdMap`` value is not 0.
    private func fingerprint(_ half: UInt64) -> UInt32 {
        let f = UInt32(truncatingIfNeeded: half) & fingerprintMask
        return f == 0 ? 1 : f
    }

    private mutating func compactCanonical(_ id: UInt32, _ key: Key) -> UInt32 {
        let a = fingerprint(key.a), b = fingerprint(key.b)
        if (compactCount + 1) * 16 > compactSlots.count * 15 { growCompact() }
        let mask = compactSlots.count - 1
        var i = Int(a) & mask
        while compactSlots[i] != 0 {
            let slot = compactSlots[i]
            let other = UInt32(truncatingIfNeeded: slot)
            if UInt32(truncatingIfNeeded: slot >> 32) == b && fingerprintsA[other] == a
                && !refused.contains(UInt64(id) << 32 | UInt64(other)) {
                return other
            }
            i = (i + 1) & mask
        }
        // Id 0 marks an empty slot; an id defined again with other frames keeps its first
        // key. Either is only a stack that later ones do not find.
        if id != 0 && fingerprintsA[id] == 0 { insertCompact(id, a: a, b: b) }
        return id
    }

    private mutating func insertCompact(_ id: UInt32, a: UInt32, b: UInt32) {
        if (compactCount + 1) * 16 > compactSlots.count * 15 { growCompact() }
        fingerprintsA.insert(id, a)
        place(UInt64(b) << 32 | UInt64(id), a: a)
        compactCount += 1
    }

    private mutating func place(_ slot: UInt64, a: UInt32) {
        let mask = compactSlots.count - 1
        var i = Int(a) & mask
        while compactSlots[i] != 0 { i = (i + 1) & mask }
        compactSlots[i] = slot
    }

    private mutating func growCompact() {
        let old = compactSlots
        compactSlots = [UInt64](repeating: 0, count: max(1024, old.count * 2))
        for slot in old where slot != 0 {
            place(slot, a: fingerprintsA[UInt32(truncatingIfNeeded: slot)])
        }
    }

    /// The aliases (stack id → first id) a compact identity answered whose keys differ:
    /// `check` must have been given the same module records as this one, and the
    /// definitions of every stack `aliases` names (their ids and firsts), in trace order.
    static func wrongAliases(_ aliases: [UInt32: UInt32], check: StackIdentity) -> [UInt32: UInt32] {
        aliases.filter { check.checkedFirsts[$0.key] != $0.value }
    }

    /// For ``wrongAliases(_:check:)``: the exact answers for the stacks defined.
    private(set) var checkedFirsts: [UInt32: UInt32] = [:]

    /// Defines stack `id` for a check: records its exact first (among the stacks defined
    /// to this identity).
    mutating func check(_ id: UInt32, frames: [UInt64]) {
        checkedFirsts[id] = canonical(id, frames: frames)
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
