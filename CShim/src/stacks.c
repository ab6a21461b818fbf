/*
 * stacks.c — the blob arena and the call-tree stack store.
 *
 * Stacks are stored as a call tree in the shared arena (see "Stacks are a
 * call tree" in heapgen_protocol.h): one 24-byte node per distinct (caller
 * node, return address) edge, a stack being the ref of its innermost node.
 * Most stacks share their outer frames, so the arena grows with the distinct
 * edges, not with the whole stacks (a test binary with 593 k distinct stacks
 * filled 256 MiB of whole stacks; see Tests/HeapGenIntegrationTests/Recording/StackStoreTests).
 *
 * Two private, lock-free indexes; a slot never holds a half-made value
 * (an index entry is written only after the node it names is complete):
 *   - the stack cache, hash of all frames -> innermost node. The fast path:
 *     a hit is the full 64-bit hash, then the innermost node's depth, flag
 *     and pc checked in the arena (see hg_stack_intern for why not a walk).
 *     Entries are {key, val} written seqlock-style (claim, value, key); a
 *     torn read is dropped. Lossy: a full probe window overwrites a slot, so
 *     it never fills.
 *   - the edge index, hash of (parent, pc) -> a chain of nodes through their
 *     `link` fields, newest first, heads of one word (epoch << 32 | bloom <<
 *     24 | ref; bloom: one of 8 bits per edge in the chain, so a new edge,
 *     the common look-up, mostly skips the chain instead of loading its
 *     nodes). A new node is pushed with a CAS on the bucket head after it is
 *     fully written; a racing duplicate is possible and harmless (both nodes
 *     describe the same edge). Building a stack starts below the outer
 *     frames it shares with the thread's last built one, and looks up edges
 *     only until it makes a node: no edge below a new node can be indexed,
 *     so the frames inside it are made at once (chain_new).
 * Entries carry the epoch they were made in, so a new segment (fork) or a
 * dlclose (code addresses may be reused) forgets them and builds new nodes;
 * and the arena epoch (heapgen_protocol.h, "Arena epochs"): when a half
 * fills, the next epoch starts over in the other half with empty indexes,
 * and a stack is built within one epoch (a build that sees the arena move
 * on starts again), so no chain crosses halves.
 *
 * No locks, no allocation after the first call (the indexes are mmap'ed
 * once): safe to enter from a signal handler that interrupted the shim.
 * When the store cannot take a stack (the next half is still being read by
 * the collector) the allocation is recorded with stack 0 and counted in
 * header.stacks_lost, never dropped silently. (Not with the outer part of
 * its stack that could be stored: that would name an outer function as the
 * allocating one.)
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include "shim.h"

#define CACHE_BITS  18                      /* 256 Ki entries, 4 MiB: all of it is touched, in the program */
#define CACHE_SIZE  (1u << CACHE_BITS)
#define CACHE_WORDS (2 * (size_t)CACHE_SIZE) /* uint64_t words of the cache */
#define CACHE_BUSY  2                       /* key of an entry being written */
#define CACHE_WAYS  4                       /* probe window              */
/* Edge index: sized with the arena so chains stay short when a half is full
 * (a quarter of the nodes the arena holds, half of those a half holds: the
 * default 32 MiB gives 512 Ki heads, 4 MiB, touched in the program), between
 * 512 Ki and 16 Mi heads. Walking long chains was 80 % of a Swift test
 * binary's time with 28 M nodes on 1 Mi heads, before the arena had epochs. */
#define EDGE_MIN_BITS 19
#define EDGE_MAX_BITS 24
/* A chain longer than this means the arena was scribbled on: give up, count it. */
#define MAX_CHAIN   (1u << 16)

/* A node blob as laid out in the arena (refs are 8-byte aligned). */
typedef struct node_blob {
    hg_blob_hdr h;
    hg_node     n;
} node_blob;

_Static_assert(sizeof(node_blob) == 24, "node blob layout");

/* A stack cache entry: key = hash of all frames | 1 (0: empty, CACHE_BUSY:
 * being written), val = epoch << 32 | innermost node. */
typedef struct cache_entry {
    uint64_t key;
    uint64_t val;
} cache_entry;

static uint64_t *indexes;   /* [0, CACHE_WORDS): stack cache; then the edge heads */
static uint32_t edge_mask;  /* heads - 1; set before `indexes` is published     */

static uint32_t edge_bits(void)
{
    uint64_t want = g_hg.arena_size / sizeof(node_blob) / 4;
    uint32_t bits = EDGE_MIN_BITS;
    while (bits < EDGE_MAX_BITS && (1ull << bits) < want)
        bits++;
    return bits;
}

static uint64_t *get_indexes(void)
{
    uint64_t *t = __atomic_load_n(&indexes, __ATOMIC_ACQUIRE);
    if (HG_LIKELY(t != NULL))
        return t;
    const uint32_t bits = edge_bits();
    const size_t bytes = sizeof(uint64_t) * (CACHE_WORDS + ((size_t)1 << bits));
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uint64_t *expected = NULL;
    /* Every racing thread computes the same size; the winner's CAS publishes it. */
    __atomic_store_n(&edge_mask, (1u << bits) - 1, __ATOMIC_RELAXED);
    if (!__atomic_compare_exchange_n(&indexes, &expected, (uint64_t *)m, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        munmap(m, bytes);
        return expected;
    }
    return (uint64_t *)m;
}

/* The segment and epoch (gave_up_key) in which a wait for the collector
 * timed out: the collector is stuck or starved, and making every new stack
 * wait as long again would stall the program; stacks are counted lost
 * until the arena moves on. */
static uint64_t gave_up_in;

static inline uint64_t gave_up_key(uint64_t epoch)
{
    return (uint64_t)g_hg.segment_gen << 40 | (epoch + 1);
}

/* Waits for the collector to release the epoch before `epoch` (the half
 * the next epoch reuses), at most HG_ARENA_WAIT_MS. 1 when it did. Not
 * while this thread holds a ring slot: the collector stops at that slot. */
static int await_release(uint64_t epoch)
{
    hg_header *h = g_hg.hdr;
    if (hg_holds_slot() || h->detached || __atomic_load_n(&gave_up_in, __ATOMIC_RELAXED) == gave_up_key(epoch))
        return 0;
    hg_collector_wait w;
    hg_collector_wait_begin(&w, 0);
    __atomic_store_n(&h->arena_wanted, epoch + 1, __ATOMIC_RELAXED);
    int ok = 0;
    for (;;) {
        if (__atomic_load_n(&h->arena_released, __ATOMIC_ACQUIRE) >= epoch ||
            (__atomic_load_n(&h->arena_state, __ATOMIC_RELAXED) >> HG_ARENA_EPOCH_SHIFT) != epoch) {
            ok = 1;
            break;
        }
        uint64_t elapsed;
        if (!hg_collector_wait_pause(&w, &elapsed) || elapsed > HG_ARENA_WAIT_MS * 1000000ull || h->detached)
            break;
    }
    hg_collector_wait_end(&w);
    if (!ok)
        __atomic_store_n(&gave_up_in, gave_up_key(epoch), __ATOMIC_RELAXED);
    return ok;
}

/* Huge pages for the indexes, once the program has stored many stacks.
 * Both indexes are probed at random, a cache miss a stack: with 4 KiB pages
 * each was a TLB miss too (a page walk, dearer in a VM); with transparent
 * huge pages the 8 MiB take four TLB entries (a Swift test suite with 3.8 M
 * new stacks: 7 % faster). But a huge page is 2 MiB of memory from its
 * first touch: asked for at once, `date` under heapgen went from 2.6 to
 * 10.5 MB. So only past HUGE_AFTER bytes of arena (~175 k nodes), or once a
 * half has filled, and then collapsed at once (MADV_COLLAPSE, Linux 6.1:
 * the pages already touched are most of them by then). Where THP is off,
 * or the kernel is older, nothing changes. */
#define HUGE_AFTER (4u << 20)
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
static int indexes_huge;

static void __attribute__((noinline)) make_indexes_huge(void)
{
    /* (Not before the first stack made them: a blob may come first.) */
    uint64_t *t = __atomic_load_n(&indexes, __ATOMIC_ACQUIRE);
    if (t == NULL || __atomic_exchange_n(&indexes_huge, 1, __ATOMIC_RELAXED))
        return;
    const size_t bytes = sizeof(uint64_t) *
        (CACHE_WORDS + (size_t)__atomic_load_n(&edge_mask, __ATOMIC_RELAXED) + 1);
    const int saved = errno;
    madvise(t, bytes, MADV_HUGEPAGE);
    madvise(t, bytes, MADV_COLLAPSE);
    errno = saved;
}

/* Reserves `bytes` (rounded to 8) in the arena: the offset, 0 if the arena
 * is full (counted), ARENA_MOVED if it moved on from epoch *epoch (see
 * hg_arena_reserve). A full half whose successor may not start yet is
 * waited for once. */
#define ARENA_MOVED UINT64_MAX
static uint64_t arena_reserve(uint64_t bytes, uint64_t *epoch)
{
    bytes = (bytes + 7) & ~7ull;
    uint64_t off = hg_arena_reserve(g_hg.hdr, g_hg.arena_half, bytes, epoch);
    if (off == 0 && bytes <= g_hg.arena_half - 8) {
        uint64_t e = __atomic_load_n(&g_hg.hdr->arena_state, __ATOMIC_RELAXED) >> HG_ARENA_EPOCH_SHIFT;
        if (await_release(e))
            off = hg_arena_reserve(g_hg.hdr, g_hg.arena_half, bytes, epoch);
    }
    if (off == 0)
        __atomic_fetch_add(&g_hg.hdr->arena_full, 1, __ATOMIC_RELAXED);
    else if (HG_UNLIKELY((off >= HUGE_AFTER || *epoch > 0) && off != ARENA_MOVED &&
                         !__atomic_load_n(&indexes_huge, __ATOMIC_RELAXED)))
        make_indexes_huge();
    return off;
}

/* Stores header + two byte ranges as one blob, in whichever epoch is
 * current. `len_field` goes into the blob header's len (byte count for
 * strings and modules). Returns the tagged ref, 0 if it did not fit. */
uint32_t hg_arena_put(uint32_t tag, const void *a, uint32_t alen,
                      const void *b, uint32_t blen, uint32_t len_field)
{
    uint64_t epoch = UINT64_MAX;
    uint64_t off = arena_reserve(sizeof(hg_blob_hdr) + (uint64_t)alen + blen, &epoch);
    if (off == 0)
        return 0;
    hg_blob_write(g_hg.arena + off, tag, len_field, a, alen, b, blen);
    return hg_arena_ref(epoch, off);
}

/* ------------------------------------------------------------------ nodes */

/* The node at `ref`, or NULL if it does not lie inside the arena. The arena
 * is ours, but the program may scribble on it: every ref read back from it is
 * checked before use. */
static inline const node_blob *node_at(uint32_t ref)
{
    uint64_t off = (uint64_t)ref << 3;
    if (HG_UNLIKELY(ref == 0 || off + sizeof(node_blob) > g_hg.arena_size))
        return NULL;
    return (const node_blob *)(g_hg.arena + off);
}

static inline uint64_t mix(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* Two independent multiply chains (even and odd frames) halve the latency of
 * one chain. The hash keys the stack cache (see intern_in for what a hit
 * checks besides it). */
static inline uint64_t hash_frames(const uint64_t *pcs, uint32_t n, uint32_t trunc)
{
    uint64_t h0 = 0x9e3779b97f4a7c15ull ^ n ^ trunc, h1 = 0xc2b2ae3d27d4eb4full;
    uint32_t i = 0;
    for (; i + 1 < n; i += 2) {
        h0 = (h0 ^ pcs[i]) * 0xff51afd7ed558ccdull;
        h1 = (h1 ^ pcs[i + 1]) * 0xc4ceb9fe1a85ec53ull;
        h0 ^= h0 >> 32;
        h1 ^= h1 >> 29;
    }
    if (i < n)
        h0 = (h0 ^ pcs[i]) * 0xff51afd7ed558ccdull;
    return mix(h0 ^ (h1 + (h0 >> 17)));
}

/* True if `ref` is a node in the arena with depth n, flag `trunc` and pc. */
static inline int innermost_matches(uint32_t ref, uint64_t pc, uint32_t n, uint32_t trunc)
{
    const uint64_t limit = (g_hg.arena_size - sizeof(node_blob)) >> 3;
    if (HG_UNLIKELY((uint64_t)ref - 1 >= limit))
        return 0;
    const node_blob *b = (const node_blob *)(g_hg.arena + ((uint64_t)ref << 3));
    return b->n.pc == pc && b->h.len == (n | trunc) && b->h.tag == HG_BLOB_NODE;
}

/* Searches the chain from `ref` (newest first) up to `stop` for the edge
 * (parent, pc, meta). Returns its ref, 0 if absent, UINT32_MAX if the chain
 * is broken (out of the arena or endless). */
static uint32_t chain_find(uint32_t ref, uint32_t stop, uint32_t parent, uint64_t pc, uint32_t meta)
{
    for (uint32_t steps = 0; ref != 0 && ref != stop; steps++) {
        const node_blob *b = node_at(ref);
        if (HG_UNLIKELY(b == NULL || steps >= MAX_CHAIN))
            return UINT32_MAX;
        if (b->n.pc == pc && b->n.parent == parent && b->h.len == meta && b->h.tag == HG_BLOB_NODE)
            return ref;
        ref = b->n.link;
    }
    return 0;
}

/* Writes a new node (not yet reachable from any index) in arena epoch
 * `arena_epoch`: its ref, 0 if the arena is full, NODE_MOVED if the arena
 * moved on (the node's parent is in the old epoch's half). */
#define NODE_MOVED UINT32_MAX

/* Fills the node at `ref` (reserved, not yet reachable). */
static inline node_blob *node_init(uint32_t ref, uint32_t parent, uint64_t pc, uint32_t meta)
{
    node_blob *b = (node_blob *)(g_hg.arena + ((uint64_t)ref << 3));
    b->h.len = meta;
    b->h.tag = HG_BLOB_NODE;
    b->n.parent = parent;
    b->n.link = 0;
    b->n.pc = pc;
    return b;
}

static uint32_t node_new(uint32_t parent, uint64_t pc, uint32_t meta, uint64_t arena_epoch)
{
    uint64_t off = arena_reserve(sizeof(node_blob), &arena_epoch);
    if (off == 0 || off == ARENA_MOVED)
        return off == 0 ? 0 : NODE_MOVED;
    node_init((uint32_t)(off >> 3), parent, pc, meta);
    return (uint32_t)(off >> 3);
}

/* An edge index head: epoch << 32 | bloom << HEAD_REF_BITS | the chain's
 * newest node. Plain refs fit HEAD_REF_BITS (HG_MAX_ARENA_MB). */
#define HEAD_REF_BITS 24
#define HEAD_REF_MASK ((1u << HEAD_REF_BITS) - 1)
_Static_assert(((uint64_t)HG_MAX_ARENA_MB << 20 >> 3) <= (1ull << HEAD_REF_BITS), "refs fit a head");

/* Where edge (parent, pc) with depth|flags `meta` is indexed: its bucket's
 * head, and its bit in the head's bloom (from hash bits the bucket does
 * not use). */
typedef struct edge_slot {
    uint64_t *head;
    uint32_t  bit;
} edge_slot;

static inline edge_slot edge_at(uint64_t *heads, uint32_t parent, uint64_t pc, uint32_t meta)
{
    const uint32_t mask = __atomic_load_n(&edge_mask, __ATOMIC_RELAXED);
    const uint64_t h = mix(pc ^ ((uint64_t)parent << 32 | meta));
    return (edge_slot){ &heads[h & mask], 1u << (HEAD_REF_BITS + (h >> 61)) };
}

/* Head word `cur`'s bloom and newest node if it is of `epoch`, else none
 * (another epoch's chain is not ours to walk or extend). */
static inline uint32_t head_of_epoch(uint64_t cur, uint64_t epoch)
{
    return (cur >> 32) == epoch ? (uint32_t)cur : 0;
}

/* Announces, before the first new node of a stack, the modules of frames
 * not announced yet (dlopen'ed since the last scan), so the collector can
 * place the addresses: pcs[0 .. k) are the frames not yet in the tree (the
 * ones above were checked when their nodes were made). */
static inline void announce_modules(const uint64_t *pcs, uint32_t k, int *announced)
{
    if (!*announced) {
        *announced = 1;
        if (!hg_modules_contain_all(pcs, k))
            hg_modules_scan();
    }
}

/* The node of edge (parent, pc) with depth|flags `meta`, made if new
 * (*created set). 0 if it could not be stored, NODE_MOVED if the arena left
 * `arena_epoch`. *announced: module scan done for this stack. */
static uint32_t edge_intern(uint64_t *heads, uint32_t parent, uint64_t pc, uint32_t meta,
                            uint64_t epoch, uint64_t arena_epoch,
                            const uint64_t *pcs, uint32_t n, int *announced, int *created)
{
    const edge_slot e = edge_at(heads, parent, pc, meta);
    uint64_t cur = __atomic_load_n(e.head, __ATOMIC_ACQUIRE);
    uint32_t stop = 0, mine = 0;
    for (;;) {
        const uint32_t word = head_of_epoch(cur, epoch);
        const uint32_t first = word & HEAD_REF_MASK;
        /* Not in the bloom: not in the chain, without loading a node of it. */
        uint32_t found = word & e.bit ? chain_find(first, stop, parent, pc, meta) : 0;
        if (HG_UNLIKELY(found == UINT32_MAX))
            return 0;   /* (a broken chain; NODE_MOVED comes only from node_new) */
        if (found != 0)
            return found;   /* (a node of ours lost the race: 24 unreferenced bytes) */
        if (mine == 0) {
            announce_modules(pcs, n - (meta & HG_NODE_DEPTH_MASK) + 1, announced);
            mine = node_new(parent, pc, meta, arena_epoch);
            if (mine == 0 || mine == NODE_MOVED)
                return mine;
        }
        ((node_blob *)(g_hg.arena + ((uint64_t)mine << 3)))->n.link = first;
        /* Release: the node's fields before the head that reaches it. */
        if (__atomic_compare_exchange_n(e.head, &cur, epoch << 32 | (word & ~HEAD_REF_MASK) | e.bit | mine, 0,
                                        __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
            *created = 1;
            return mine;
        }
        stop = first;   /* lost the race: search only what was pushed since */
    }
}

/* The nodes of the frames at depths d .. n of pcs (pcs[n - d] .. pcs[0]),
 * below `parent`, which this build just made: no edge below a new node can
 * be in the index, so none is looked up. The nodes take one reservation,
 * and the index buckets they go into are all loaded before the first is
 * pushed, so their cache misses overlap instead of coming one a frame (a
 * test suite's stacks: 5 new nodes a build, two misses each when looked up
 * one by one). Fills refs[d - 1 ..] (unless NULL); the innermost node's ref, 0 if the
 * arena is full, NODE_MOVED if it left `arena_epoch`. */
static uint32_t chain_new(uint64_t *heads, uint32_t parent, const uint64_t *pcs, uint32_t n, uint32_t d,
                          uint32_t trunc, uint64_t epoch, uint64_t arena_epoch, uint32_t *refs)
{
    const uint32_t k = n - d + 1;
    uint64_t off = arena_reserve((uint64_t)k * sizeof(node_blob), &arena_epoch);
    if (off == 0 || off == ARENA_MOVED)
        return off == 0 ? 0 : NODE_MOVED;
    const uint32_t base = (uint32_t)(off >> 3), step = sizeof(node_blob) >> 3;
    for (uint32_t i = 0; i < k; i++) {
        const uint32_t ref = base + i * step;
        const node_blob *b = node_init(ref, i == 0 ? parent : ref - step, pcs[n - d - i], (d + i) | trunc);
        __builtin_prefetch(edge_at(heads, b->n.parent, b->n.pc, b->h.len).head, 1);
        if (refs != NULL)
            refs[d - 1 + i] = ref;
    }
    /* (The buckets again rather than kept: this may run on a signal
     * handler's small stack.) */
    for (uint32_t i = 0; i < k; i++) {
        const uint32_t ref = base + i * step;
        node_blob *b = (node_blob *)(g_hg.arena + ((uint64_t)ref << 3));
        const edge_slot e = edge_at(heads, b->n.parent, b->n.pc, b->h.len);
        uint64_t cur = __atomic_load_n(e.head, __ATOMIC_ACQUIRE);
        uint32_t word;
        do {
            word = head_of_epoch(cur, epoch);
            b->n.link = word & HEAD_REF_MASK;
            /* Release: the node's fields before the head that reaches it. */
        } while (!__atomic_compare_exchange_n(e.head, &cur, epoch << 32 | (word & ~HEAD_REF_MASK) | e.bit | ref, 0,
                                              __ATOMIC_RELEASE, __ATOMIC_ACQUIRE));
    }
    return base + (k - 1) * step;
}

/* The nodes of this thread's last built stack, by depth: a new stack usually
 * shares most outer frames with it, so building starts below the common
 * part instead of looking up every edge from the root (a Swift test binary's
 * 60-frame stacks differ in their last few frames).
 *
 * Written only by this thread, but a signal handler's build may run in the
 * middle of ours. `writes` is a seqlock against that: odd while a build
 * rewrites the entries, so a build nested in it neither reads nor writes
 * them; and a build extends the entries only if no other build ran since it
 * read its hint (the entries it keeps must be the ones it read). Consistent
 * entries are what lets a hint be checked by its innermost node alone. */
typedef struct last_built {
    uint64_t epoch;                     /* epoch + 1 the entries belong to; 0: none */
    uint32_t n, trunc;                  /* depths filled, flag                      */
    uint32_t writes;                    /* seqlock: odd while being rewritten       */
    uint64_t pcs[HG_MAX_FRAMES];        /* pcs[d - 1]: frame at depth d             */
    uint32_t refs[HG_MAX_FRAMES];       /* refs[d - 1]: its node                    */
} last_built;

/* In memory the thread's owner attached (hg_stack_attach; NULL: no hint),
 * not static TLS, which comes out of every thread's stack. */
static HG_TLS last_built *last_ptr;

_Static_assert(sizeof(last_built) <= HG_STACK_THREAD_BYTES, "HG_STACK_THREAD_BYTES too small");

void hg_stack_attach(void *state)
{
    last_built *L = (last_built *)state;
    if (L != NULL) {
        L->epoch = 0;
        L->writes = 0;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    last_ptr = L;
}

/* What pcs[0..n) shares with the thread's last built stack: its `depth`
 * outermost frames, whose innermost node is `parent` (depth 0: nothing);
 * and the entries' `writes` when read (odd: not to be touched). */
typedef struct build_hint {
    uint32_t depth, parent, writes;
} build_hint;

static inline build_hint hint_of(const last_built *L, const uint64_t *pcs, uint32_t n, uint32_t trunc,
                                 uint64_t epoch)
{
    build_hint h = { 0, 0, 1 };
    if (L == NULL)
        return h;
    h.writes = L->writes;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if ((h.writes & 1) || L->epoch != epoch + 1 || L->trunc != trunc)
        return h;
    const uint32_t m = n < L->n ? n : L->n;
    uint32_t depth = 0;
    while (depth < m && L->pcs[depth] == pcs[n - 1 - depth])
        depth++;
    if (depth == 0)
        return h;
    const uint32_t parent = L->refs[depth - 1];
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (L->writes != h.writes)
        return h;         /* a handler's build rewrote them while we read */
    h.depth = depth;
    h.parent = parent;
    return h;
}

/* Builds (or finds) the chain of nodes for pcs[0..n), outermost first, in
 * arena epoch `arena_epoch`, below hint h; returns the innermost node's ref,
 * 0 if the store is full, NODE_MOVED if the arena moved on meanwhile. */
static uint32_t build_stack(uint64_t *heads, const uint64_t *pcs, uint32_t n,
                            uint32_t trunc, uint64_t epoch, uint64_t arena_epoch, build_hint h)
{
    /* The hint was read whole (hint_of); its innermost node is checked in
     * the arena, as a stack cache hit is: nodes never change within an
     * epoch, so that node's chain is the one the hint recorded. (A walk of
     * all the shared frames, 55 of a Swift test binary's 63 on average,
     * was a tenth of its interning time.) */
    uint32_t depth = h.depth, parent = 0;
    if (depth > 0 && innermost_matches(h.parent, pcs[n - depth], depth, trunc))
        parent = h.parent;
    else
        depth = 0;
    /* The entries to extend: only those the hint was read from, unchanged
     * (not a handler's rewrite since, nor one we interrupted). */
    last_built *L = last_ptr;
    if (L != NULL && (L->writes != h.writes || (h.writes & 1)))
        L = NULL;
    if (L != NULL) {
        L->writes = h.writes + 1;   /* odd: being rewritten */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    }
    int announced = 0, created = 0;
    for (uint32_t d = depth + 1; d <= n; d++) {
        /* Below a node this build made, every edge is new: the rest at once. */
        const int rest = created;
        const uint32_t node = rest ? chain_new(heads, parent, pcs, n, d, trunc, epoch, arena_epoch,
                                               L != NULL ? L->refs : NULL)
                                   : edge_intern(heads, parent, pcs[n - d], d | trunc, epoch, arena_epoch,
                                                 pcs, n, &announced, &created);
        parent = node;
        if (L == NULL) {
            if (node == 0 || node == NODE_MOVED || rest)
                break;
            continue;
        }
        if (node == 0 || node == NODE_MOVED) {
            L->n = d - 1;
            break;
        }
        const uint32_t upto = rest ? n : d;   /* depths stored by this step */
        for (uint32_t e = d; e <= upto; e++)
            L->pcs[e - 1] = pcs[n - e];
        L->refs[upto - 1] = node;           /* (chain_new filled the others) */
        L->n = upto;
        if (rest)
            break;
    }
    if (L != NULL) {
        L->trunc = trunc;
        L->epoch = epoch + 1;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        L->writes = h.writes + 2;
    }
    return parent;
}

static uint32_t stack_lost(void)
{
    __atomic_fetch_add(&g_hg.hdr->stacks_lost, 1, __ATOMIC_RELAXED);
    return 0;
}

/* Interns pcs[0..n) in arena epoch `arena_epoch`: the plain ref of its
 * innermost node, 0 if the store is full, NODE_MOVED if the arena moved on. */
static uint32_t intern_in(uint64_t *t, const uint64_t *pcs, uint32_t n, uint32_t trunc,
                          uint64_t arena_epoch)
{
    /* Index entries name nodes of one arena epoch of one segment: the
     * segment/dlclose epoch and the arena epoch together key them. */
    const uint64_t epoch = (uint32_t)(__atomic_load_n(&g_hg.epoch, __ATOMIC_ACQUIRE) << 16 |
                                      (arena_epoch & 0xffff));
    const uint64_t key = hash_frames(pcs, n, trunc) | 1;   /* odd: never 0 or BUSY */
    const uint32_t at = (uint32_t)(key >> 11);

    /* Fast path: the same whole stack as before. A hit is the full 64-bit
     * hash plus the innermost node's depth, flag and pc (one cache line):
     * walking all n nodes to verify cost one cache miss per frame once the
     * tree outgrew the caches (60-frame stacks, 28 M nodes: most of a Swift
     * test binary's time). A false hit needs a 63-bit collision between two
     * stacks of equal depth and innermost frame. */
    cache_entry *c = (cache_entry *)t;
    /* A stack new to the cache misses twice in a row, here and at the
     * first new edge's head: start both loads before either is needed. */
    __builtin_prefetch(&c[at & (CACHE_SIZE - 1)]);
    const build_hint h = hint_of(last_ptr, pcs, n, trunc, epoch);
    if (h.depth < n)
        __builtin_prefetch(edge_at(t + CACHE_WORDS, h.parent, pcs[n - 1 - h.depth], (h.depth + 1) | trunc).head);
    for (uint32_t w = 0; w < CACHE_WAYS; w++) {
        cache_entry *e = &c[(at + w) & (CACHE_SIZE - 1)];
        uint64_t k1 = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (k1 == 0)
            break;      /* entries fill a window from its start */
        if (k1 != key)
            continue;
        uint64_t v = __atomic_load_n(&e->val, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&e->key, __ATOMIC_RELAXED) == key && (v >> 32) == epoch &&
            innermost_matches((uint32_t)v, pcs[0], n, trunc))
            return (uint32_t)v;
    }

    uint32_t ref = build_stack(t + CACHE_WORDS, pcs, n, trunc, epoch, arena_epoch, h);
    if (HG_UNLIKELY(ref == 0 || ref == NODE_MOVED))
        return ref;

    /* Remember it: an empty or stale slot of the window, else overwrite one
     * (the cache is lossy; the edge index still finds the stack). */
    cache_entry *slot = NULL;
    uint64_t old = 0;
    for (uint32_t w = 0; w < CACHE_WAYS && slot == NULL; w++) {
        cache_entry *e = &c[(at + w) & (CACHE_SIZE - 1)];
        uint64_t k = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
        if (k == 0 || (k != CACHE_BUSY && (__atomic_load_n(&e->val, __ATOMIC_RELAXED) >> 32) != epoch)) {
            slot = e;
            old = k;
        }
    }
    if (slot == NULL) {
        slot = &c[(at + (uint32_t)(key >> 40) % CACHE_WAYS) & (CACHE_SIZE - 1)];
        old = __atomic_load_n(&slot->key, __ATOMIC_RELAXED);
    }
    /* Seqlock-style: claim (BUSY), value, then key. A reader that saw the old
     * key re-reads it after the value and drops a torn pair. */
    if (old != CACHE_BUSY &&
        __atomic_compare_exchange_n(&slot->key, &old, CACHE_BUSY, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        __atomic_thread_fence(__ATOMIC_RELEASE);
        __atomic_store_n(&slot->val, epoch << 32 | ref, __ATOMIC_RELAXED);
        __atomic_store_n(&slot->key, key, __ATOMIC_RELEASE);
    }
    return ref;
}

uint32_t hg_stack_intern(const uint64_t *pcs, uint32_t n, int truncated)
{
    if (HG_UNLIKELY(n == 0 || n > HG_MAX_FRAMES))
        return 0;
    uint64_t *t = get_indexes();
    if (HG_UNLIKELY(t == NULL))
        return stack_lost();
    const uint32_t trunc = truncated ? HG_NODE_TRUNCATED : 0;
    /* A stack is built in one arena epoch: when the arena moves on halfway
     * (another thread filled the half), start again in the new one. A
     * thread preempted mid-build on a loaded machine may see that a few
     * times running; eight times means the halves fill faster than we
     * build: give up. */
    for (int tries = 0; tries < 8; tries++) {
        const uint64_t arena_epoch =
            __atomic_load_n(&g_hg.hdr->arena_state, __ATOMIC_RELAXED) >> HG_ARENA_EPOCH_SHIFT;
        uint32_t ref = intern_in(t, pcs, n, trunc, arena_epoch);
        if (HG_LIKELY(ref != 0 && ref != NODE_MOVED))
            return hg_arena_ref(arena_epoch, (uint64_t)ref << 3);
        if (ref == 0)
            break;
    }
    return stack_lost();
}

/* A ref kept beside a stack outside the store (the unwinder's memo): the
 * whole arena epoch it was interned in (+ 1; 0: none) and the segment/
 * dlclose epoch with the ref. It stands for the stack only while both are
 * still current: a half is reused two epochs on, and a ref names its
 * epoch by its low 8 bits only. */
void hg_stack_memo_put(uint64_t w[2], uint32_t ref)
{
    const uint64_t now = hg_arena_epoch_now();
    if (ref == 0 || !hg_ref_of_epoch(ref, now))
        return;
    w[0] = now + 1;
    w[1] = (uint64_t)__atomic_load_n(&g_hg.epoch, __ATOMIC_ACQUIRE) << 32 | ref;
}
