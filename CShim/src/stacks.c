/*
 * stacks.c — the blob arena and stack deduplication.
 *
 * A stack is stored once in the shared arena; events carry its 32-bit ref
 * (offset / 8). The dedup table lives in private memory (the collector
 * never reads it) and is lock-free: a new entry's key is claimed with a
 * CAS, its value stored with release, and a reader that sees a key with no
 * value yet simply treats it as a miss (the stack is then stored twice,
 * which is harmless). Entries carry the epoch they were made in, so a new
 * segment (fork) or a dlclose (code addresses may be reused) forgets them.
 */
#include <string.h>
#include <sys/mman.h>
#include "shim.h"

#define TABLE_BITS 20                       /* 1 Mi entries, 16 MiB virtual */
#define TABLE_SIZE (1u << TABLE_BITS)
#define MAX_PROBE  32

typedef struct entry {
    uint64_t key;   /* hash | 1, 0 = empty            */
    uint64_t val;   /* epoch << 32 | ref, 0 = not yet */
} entry;

static entry *table;

static entry *get_table(void)
{
    entry *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    if (HG_LIKELY(t != NULL))
        return t;
    void *m = mmap(NULL, sizeof(entry) * TABLE_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    entry *expected = NULL;
    if (!__atomic_compare_exchange_n(&table, &expected, (entry *)m, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        munmap(m, sizeof(entry) * TABLE_SIZE);
        return expected;
    }
    return (entry *)m;
}

/* Reserves `bytes` (rounded to 8) in the arena; returns the offset or 0. */
static uint64_t arena_reserve(uint64_t bytes)
{
    bytes = (bytes + 7) & ~7ull;
    hg_header *h = g_hg.hdr;
    uint64_t off = __atomic_fetch_add(&h->arena_used, bytes, __ATOMIC_RELAXED);
    if (off + bytes > g_hg.arena_size || (off >> 3) > UINT32_MAX) {
        __atomic_fetch_add(&h->arena_full, 1, __ATOMIC_RELAXED);
        return 0;
    }
    return off;
}

/* Stores header + two byte ranges as one blob. `len_field` goes into the
 * blob header's len (frame count for stacks, byte count otherwise). */
uint32_t hg_arena_put(uint32_t tag, const void *a, uint32_t alen,
                      const void *b, uint32_t blen, uint32_t len_field)
{
    uint64_t off = arena_reserve(sizeof(hg_blob_hdr) + (uint64_t)alen + blen);
    if (off == 0)
        return 0;
    uint8_t *p = g_hg.arena + off;
    hg_blob_hdr bh = { len_field, tag };
    memcpy(p, &bh, sizeof bh);
    if (alen) memcpy(p + sizeof bh, a, alen);
    if (blen) memcpy(p + sizeof bh + alen, b, blen);
    return (uint32_t)(off >> 3);
}

static inline uint64_t hash_frames(const uint64_t *pcs, uint32_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h ^= pcs[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h | 1;
}

static int same_stack(uint32_t ref, const uint64_t *pcs, uint32_t n)
{
    const uint8_t *p = g_hg.arena + ((uint64_t)ref << 3);
    hg_blob_hdr bh;
    memcpy(&bh, p, sizeof bh);
    if (bh.len != n)
        return 0;
    /* Inline word compare: a libc memcmp through the PLT cost ~8 % of the
     * whole allocation path for typical 5-10 frame stacks. */
    const uint64_t *stored = (const uint64_t *)(p + sizeof bh);
    for (uint32_t i = 0; i < n; i++)
        if (stored[i] != pcs[i])
            return 0;
    return 1;
}

static uint32_t store_stack(const uint64_t *pcs, uint32_t n)
{
    /* Frames in modules we have not announced yet (dlopen'ed since the last
     * scan): announce them first so the collector can place the addresses. */
    if (!hg_modules_contain_all(pcs, n))
        hg_modules_scan();
    return hg_arena_put(HG_BLOB_STACK, pcs, n * (uint32_t)sizeof(uint64_t), NULL, 0, n);
}

uint32_t hg_stack_intern(const uint64_t *pcs, uint32_t n)
{
    entry *t = get_table();
    if (HG_UNLIKELY(t == NULL))
        return store_stack(pcs, n);
    const uint64_t key = hash_frames(pcs, n);
    const uint64_t epoch = g_hg.epoch;
    uint32_t i = (uint32_t)(key >> 11) & (TABLE_SIZE - 1);

    for (int probe = 0; probe < MAX_PROBE; probe++, i = (i + 1) & (TABLE_SIZE - 1)) {
        entry *e = &t[i];
        uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (k == 0) {
            uint64_t zero = 0;
            if (!__atomic_compare_exchange_n(&e->key, &zero, key, 0,
                                             __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                k = zero;       /* someone else claimed it: look at theirs */
            } else {
                uint32_t ref = store_stack(pcs, n);
                if (ref)
                    __atomic_store_n(&e->val, epoch << 32 | ref, __ATOMIC_RELEASE);
                return ref;
            }
        }
        if (k == key) {
            uint64_t v = __atomic_load_n(&e->val, __ATOMIC_ACQUIRE);
            if (v != 0 && (v >> 32) == epoch && same_stack((uint32_t)v, pcs, n))
                return (uint32_t)v;
            if (v != 0 && (v >> 32) != epoch) {
                /* A stale entry from an older epoch: take it over. */
                uint32_t ref = store_stack(pcs, n);
                if (ref)
                    __atomic_compare_exchange_n(&e->val, &v, epoch << 32 | ref, 0,
                                                __ATOMIC_RELEASE, __ATOMIC_RELAXED);
                return ref;
            }
        }
    }
    return store_stack(pcs, n);   /* crowded: store without dedup */
}

void hg_stacks_reset(void)
{
    /* Nothing to free: bumping g_hg.epoch (done by the caller) retires
     * every entry. */
}
