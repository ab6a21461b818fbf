/*
 * heapgen_ring.h — publishing into the shared ring (heapgen_protocol.h,
 * "hg_slot"), one implementation for every producer: the shim inside the
 * program (CShim/src/ring.c) and the collector when it writes records of
 * its own into a program's ring (Sources/CHeapGenCollector/produce.c); the
 * consumer (Sources/CHeapGenCollector/ring.c) reads records with
 * hg_ring_take, here too, so both sides agree on the slots' layout.
 *
 * A producer publishes a record in three steps:
 *
 *   const uint64_t n = hg_ring_record_slots(addr, size, aux);
 *   uint64_t pos = hg_ring_head(h);
 *   for (;;) {
 *       if (!hg_ring_has_room(h, pos, n, mask)) { ...wait or give up...; continue; }
 *       if (hg_ring_claim(h, &pos, n)) break;    // else pos was reloaded
 *   }
 *   hg_ring_publish(ring, mask, pos, shift, kind, addr, size, ref, aux);
 *
 * The steps are separate because the shim does work of its own between
 * them (it notes the position it is about to hold, for signal handlers
 * nested in it), and only the shim may wait for room.
 *
 * Memory ordering, and why each is enough:
 *   head   relaxed load, relaxed CAS. The head only hands out distinct
 *          positions; nothing is read through it, so it needs no order.
 *   tail   acquire load (producer), release store (consumer). The
 *          consumer's reads of a slot happen before it moves the tail past
 *          it, and a producer that sees that tail may overwrite the slot
 *          for the next lap: without the pair the new fields could land
 *          in the consumer's copy of the old record.
 *   w0     release store (producer), acquire load (consumer) of a
 *          record's first word. The one publication: the consumer that
 *          sees lap L's tag there sees every word written before it (w1,
 *          and a wide record's second slot). The rest are plain stores.
 * No other atomic is involved: a record costs one CAS and one store.
 *
 * Header-only (static inline): the shim's hot path keeps everything
 * inlined, and each side compiles it with its own flags. Plain C11 plus GCC
 * __atomic builtins, no allocation, async-signal-safe.
 */
#ifndef HEAPGEN_RING_H
#define HEAPGEN_RING_H

#include <stdint.h>
#include <string.h>
#include <time.h>
#include "heapgen_protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HG_RING_INLINE static inline __attribute__((always_inline))

/* ------------------------------------------------------------- lap tags */

/* A record's first slot, published for position pos (lap L = pos >> shift),
 * has this tag in w0 (heapgen_protocol.h, "hg_slot"): (L mod 256) + 1. */
HG_RING_INLINE uint64_t hg_ring_tag(uint64_t pos, uint32_t shift)
{
    return (((pos >> shift) & 0xff) + 1) << HG_W0_TAG_SHIFT;
}

HG_RING_INLINE uint64_t hg_ring_tag_of(uint64_t w0)
{
    return w0 & (~0ull << HG_W0_TAG_SHIFT);
}

/* 1 when a slot's w0 at position pos is a record published for pos. */
HG_RING_INLINE int hg_ring_published(uint64_t w0, uint64_t pos, uint32_t shift)
{
    return hg_ring_tag_of(w0) == hg_ring_tag(pos, shift);
}

/* 1 when a slot's w0 at position pos is what it may hold before pos is
 * published: zero (a fresh ring, or a wide record's second slot in the lap
 * before) or the tag of the lap before. */
HG_RING_INLINE int hg_ring_unpublished(uint64_t w0, uint64_t pos, uint32_t shift)
{
    const uint64_t t = hg_ring_tag_of(w0);
    return t == 0 || ((pos >> shift) > 0 && t == hg_ring_tag(pos - (1ull << shift), shift));
}

/* ----------------------------------------------------------------- records */

/* Slots the record takes: 1 when it fits one (addr below 2^48, size below
 * 2^32, no aux), else 2. */
HG_RING_INLINE uint64_t hg_ring_record_slots(uint64_t addr, uint64_t size, uint32_t aux)
{
    return 1 + (((addr >> 48) | (size >> 32) | aux) != 0);
}

/* -------------------------------------------------------------- producer */

/* The next position to claim, as a starting guess for hg_ring_claim. */
HG_RING_INLINE uint64_t hg_ring_head(hg_header *h)
{
    return __atomic_load_n(&h->head, __ATOMIC_RELAXED);
}

/* 1 when the n slots from position pos lie less than a ring (mask + 1
 * slots) ahead of the consumer's tail, so they have been read and may be
 * written. Signed: a stale pos (another producer claimed it and the
 * consumer already read it) is behind the tail; it has "room", and the
 * claim then fails and reloads it. The tail's cache line changes once per
 * consumer batch: almost always a hit. */
HG_RING_INLINE int hg_ring_has_room(hg_header *h, uint64_t pos, uint64_t n, uint64_t mask)
{
    return (int64_t)(pos + n - 1 - __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE)) <= (int64_t)mask;
}

/* Claims the n positions from *pos: 1 if they are ours now, 0 if another
 * producer took *pos first (or the CAS failed spuriously), with *pos
 * reloaded from the head. */
HG_RING_INLINE int hg_ring_claim(hg_header *h, uint64_t *pos, uint64_t n)
{
    return __atomic_compare_exchange_n(&h->head, pos, *pos + n, 1,
                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Writes the record claimed at pos (hg_ring_record_slots of it) and
 * publishes it: every other word first, then w0 with a release store. */
HG_RING_INLINE void hg_ring_publish(hg_slot *ring, uint64_t mask, uint64_t pos, uint32_t shift,
                                    uint32_t kind, uint64_t addr, uint64_t size, uint32_t ref,
                                    uint32_t aux)
{
    hg_slot *a = &ring[pos & mask];
    uint64_t w0 = (addr & HG_W0_ADDR_MASK) | ((uint64_t)(kind & HG_W0_KIND_MASK) << HG_W0_KIND_SHIFT) |
                  hg_ring_tag(pos, shift);
    if (hg_ring_record_slots(addr, size, aux) == 1) {
        a->w1 = size | (uint64_t)ref << 32;
    } else {
        hg_slot *b = &ring[(pos + 1) & mask];
        a->w1 = size & HG_SIZE_MASK;
        b->w0 = ref;
        b->w1 = aux | (addr >> 48) << 32;
        w0 |= HG_W0_WIDE;
    }
    __atomic_store_n(&a->w0, w0, __ATOMIC_RELEASE);
}

/* -------------------------------------------------------------- consumer */

/* The record whose first slot is at pos, if published: its slots (1 or 2)
 * with *r filled, else 0. The acquire load of w0 pairs with the producer's
 * release store: every other word was written before it. */
HG_RING_INLINE uint64_t hg_ring_take(const hg_slot *ring, uint64_t mask, uint64_t pos, uint32_t shift,
                                     hg_record *r)
{
    const hg_slot *a = &ring[pos & mask];
    const uint64_t w0 = __atomic_load_n(&a->w0, __ATOMIC_ACQUIRE);
    if (!hg_ring_published(w0, pos, shift))
        return 0;
    const uint64_t kind = (w0 >> HG_W0_KIND_SHIFT) & HG_W0_KIND_MASK;
    const uint64_t w1 = a->w1;
    r->pos = pos;
    if (!(w0 & HG_W0_WIDE)) {
        r->addr = w0 & HG_W0_ADDR_MASK;
        r->size_kind = (w1 & 0xffffffffull) | kind << HG_KIND_SHIFT;
        r->ref = (uint32_t)(w1 >> 32);
        r->aux = 0;
        return 1;
    }
    const hg_slot *b = &ring[(pos + 1) & mask];
    const uint64_t b1 = b->w1;
    r->addr = (w0 & HG_W0_ADDR_MASK) | (b1 >> 32) << 48;
    r->size_kind = (w1 & HG_SIZE_MASK) | kind << HG_KIND_SHIFT;
    r->ref = (uint32_t)b->w0;
    r->aux = (uint32_t)b1;
    return 2;
}

/* ----------------------------------------------------------------- blobs */

/* Writes a blob at p, arena space the producer has reserved (8-aligned,
 * bounds-checked by its caller): the header, then a[0..alen) and
 * b[0..blen). `len_field` is the header's len (bytes, for strings and
 * modules). Plain stores: the record that refers to the blob publishes it. */
static inline void hg_blob_write(uint8_t *p, uint32_t tag, uint32_t len_field,
                                 const void *a, uint32_t alen, const void *b, uint32_t blen)
{
    hg_blob_hdr bh = { len_field, tag };
    memcpy(p, &bh, sizeof bh);
    if (alen) memcpy(p + sizeof bh, a, alen);
    if (blen) memcpy(p + sizeof bh + alen, b, blen);
}

/* ----------------------------------------------------------------- arena */

/* Reserves `bytes` (a multiple of 8) in the arena (heapgen_protocol.h,
 * "Arena epochs"), whose halves are `half` bytes. *epoch: in, the epoch the
 * caller needs (its other blobs are there) or UINT64_MAX for any; out, the
 * epoch reserved in. Returns the offset from the arena's start; 0 when the
 * half is full and the next epoch may not start yet; UINT64_MAX when the
 * arena moved on from the epoch the caller needs. A CAS loop, not a
 * fetch-add: a full half never moves the counter, so the state always
 * reads as an epoch and a used size within its half. */
static inline uint64_t hg_arena_reserve(hg_header *h, uint64_t half, uint64_t bytes, uint64_t *epoch)
{
    uint64_t s = __atomic_load_n(&h->arena_state, __ATOMIC_RELAXED);
    for (;;) {
        const uint64_t e = s >> HG_ARENA_EPOCH_SHIFT, used = s & HG_ARENA_USED_MASK;
        if (*epoch != UINT64_MAX && e != *epoch)
            return UINT64_MAX;
        if (used <= half && bytes <= half - used) {
            if (__atomic_compare_exchange_n(&h->arena_state, &s, s + bytes, 1,
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
                *epoch = e;
                return (e & 1) * half + used;
            }
            continue;
        }
        /* Acquire: the collector's reads of the half epoch e + 1 reuses
         * happened before it released epoch e - 1. */
        if (bytes > half - 8 || __atomic_load_n(&h->arena_released, __ATOMIC_ACQUIRE) < e)
            return 0;
        /* Acquire-release: no write into the reused half may be seen
         * before the switch (the collector reads a just-released half as
         * long as the state still names the epoch before). */
        const uint64_t next = (e + 1) << HG_ARENA_EPOCH_SHIFT | 8;
        if (__atomic_compare_exchange_n(&h->arena_state, &s, next, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            s = next;
    }
}

/* The ref a record carries for arena offset `off` in epoch e. */
HG_RING_INLINE uint32_t hg_arena_ref(uint64_t e, uint64_t off)
{
    return (uint32_t)((e & 0xff) << HG_REF_OFFSET_BITS) | (uint32_t)(off >> 3);
}

/* ----------------------------------------------------------------- clock */

/* CLOCK_MONOTONIC in ns: the clock of HG_K_MARK records (size), whichever
 * side writes them, and of every wait and deadline on either side. */
static inline uint64_t hg_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#ifdef __cplusplus
}
#endif
#endif /* HEAPGEN_RING_H */
