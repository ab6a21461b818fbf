/* The consumer side of the ring (heapgen_protocol.h, "hg_slot"), and the
 * checks that keep a target which scribbles on its own segment from making
 * the collector wait forever: the collector's own tail is the truth, the
 * shared head and the slots' lap tags must agree with it. The producers'
 * side, and the memory-ordering pairs between the two, are in
 * heapgen_ring.h. */
#include "CHeapGenCollector.h"

/* Copies the published records from *tail into out[0..max), stopping at
 * the first position not published (yet) or at limit: a record must lie
 * wholly before it. Returns the number copied. */
static size_t copy_published(const hg_segment *seg, uint64_t *tail, uint64_t limit, hg_record *out,
                             size_t max, int store) {
    const hg_slot *ring = seg->ring;
    const uint64_t mask = seg->ring_mask;
    const uint32_t shift = seg->ring_shift;
    uint64_t pos = *tail;
    size_t n = 0;
    while (n < max && pos < limit) {
        const uint64_t used = hg_ring_take(ring, mask, pos, shift, &out[n]);
        if (used == 0 || used > limit - pos) break;
        pos += used;
        n++;
    }
    if (n > 0 && store) {
        /* Our reads of these slots happen before a producer of the next lap
         * may overwrite them. */
        __atomic_store_n(&((hg_header *)seg->base)->tail, pos, __ATOMIC_RELEASE);
    }
    *tail = pos;
    return n;
}

size_t hg_drain(const hg_segment *seg, uint64_t *tail, hg_record *out, size_t max) {
    /* Only the collector writes the shared tail: if it is not what we last
     * stored, the target wrote it. Drain nothing; hg_ring_check says why. */
    if (__atomic_load_n(&((const hg_header *)seg->base)->tail, __ATOMIC_ACQUIRE) != *tail) return 0;
    return copy_published(seg, tail, UINT64_MAX, out, max, 1);
}

size_t hg_drain_rescue(const hg_segment *seg, uint64_t *tail, uint64_t limit, hg_record *out, size_t max) {
    return copy_published(seg, tail, limit, out, max, 0);
}

int hg_ring_check(const hg_segment *seg, uint64_t tail, uint64_t *head_out) {
    const hg_header *h = (const hg_header *)seg->base;
    uint64_t shared_tail = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
    uint64_t head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
    *head_out = head;
    if (shared_tail != tail) return HG_RING_BAD_TAIL;
    /* Producers claim a position only while it is less than a ring ahead of
     * the tail they read, which is never ahead of ours; nothing is ever read
     * before it is claimed. So tail <= head <= tail + ring_slots. */
    if (head < tail || head - tail > seg->ring_slots) return HG_RING_BAD_HEAD;
    uint64_t w0 = __atomic_load_n(&seg->ring[tail & seg->ring_mask].w0, __ATOMIC_ACQUIRE);
    if (hg_ring_published(w0, tail, seg->ring_shift))
        return HG_RING_OK; /* published since hg_drain looked */
    if (!hg_ring_unpublished(w0, tail, seg->ring_shift)) return HG_RING_BAD_SEQ;
    return head == tail ? HG_RING_OK : HG_RING_PENDING;
}

uint64_t hg_final_limit(const hg_segment *seg, uint64_t tail) {
    const hg_header *h = (const hg_header *)seg->base;
    uint64_t head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
    if (head < tail) return tail; /* nonsense: nothing claimed past the tail */
    if (head - tail > seg->ring_slots) return tail + seg->ring_slots;
    return head;
}

size_t hg_drain_final(const hg_segment *seg, uint64_t *tail, uint64_t limit,
                      hg_record *out, size_t max, uint64_t *torn) {
    const hg_slot *ring = seg->ring;
    const uint64_t mask = seg->ring_mask;
    const uint32_t shift = seg->ring_shift;
    uint64_t pos = *tail;
    size_t n = 0;
    while (n < max && pos < limit) {
        const uint64_t used = hg_ring_take(ring, mask, pos, shift, &out[n]);
        if (used != 0 && used <= limit - pos) {
            pos += used;
            n++;
        } else {
            /* Claimed by a producer that never published it. Its length is
             * unknown: go on a slot at a time (a wide record's second slot
             * never reads as published, its w0 has no tag). */
            (*torn)++;
            pos++;
        }
    }
    __atomic_store_n(&((hg_header *)seg->base)->tail, pos, __ATOMIC_RELEASE);
    *tail = pos;
    return n;
}
