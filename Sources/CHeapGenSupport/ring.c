/* The consumer side of the ring (heapgen_protocol.h, "hg_slot"). */
#include "CHeapGenSupport.h"

static inline uint64_t published(const hg_segment *seg, uint64_t pos) {
    return ((pos >> seg->ring_shift) << 1) + 1; /* 2L+1 */
}

size_t hg_drain(const hg_segment *seg, uint64_t *tail, hg_slot *out, size_t max) {
    hg_slot *ring = seg->ring;
    const uint64_t mask = seg->ring_mask;
    uint64_t pos = *tail;
    size_t n = 0;
    while (n < max) {
        hg_slot *s = &ring[pos & mask];
        const uint64_t want = published(seg, pos);
        if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != want) break;
        hg_slot *o = &out[n];
        o->seq = pos;
        o->addr = s->addr;
        o->size_kind = s->size_kind;
        o->ref = s->ref;
        o->aux = s->aux;
        pos++;
        n++;
    }
    if (n > 0) {
        /* Our reads of these slots happen before a producer of the next lap
         * may overwrite them. */
        __atomic_store_n(&((hg_header *)seg->base)->tail, pos, __ATOMIC_RELEASE);
    }
    *tail = pos;
    return n;
}

uint64_t hg_final_limit(const hg_segment *seg, uint64_t tail) {
    const hg_header *h = (const hg_header *)seg->base;
    uint64_t head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
    if (head < tail) return tail; /* nonsense: nothing claimed past the tail */
    if (head - tail > seg->ring_slots) return tail + seg->ring_slots;
    return head;
}

size_t hg_drain_final(const hg_segment *seg, uint64_t *tail, uint64_t limit,
                      hg_slot *out, size_t max, uint64_t *torn) {
    hg_slot *ring = seg->ring;
    const uint64_t mask = seg->ring_mask;
    uint64_t pos = *tail;
    size_t n = 0;
    while (n < max && pos < limit) {
        hg_slot *s = &ring[pos & mask];
        const uint64_t want = published(seg, pos);
        if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) == want) {
            hg_slot *o = &out[n++];
            o->seq = pos;
            o->addr = s->addr;
            o->size_kind = s->size_kind;
            o->ref = s->ref;
            o->aux = s->aux;
        } else {
            (*torn)++; /* claimed by a producer that never published it */
        }
        pos++;
    }
    __atomic_store_n(&((hg_header *)seg->base)->tail, pos, __ATOMIC_RELEASE);
    *tail = pos;
    return n;
}
