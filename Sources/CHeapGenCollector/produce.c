/*
 * produce.c — the collector (or `heapgen mark PID`) writing into a target's
 * ring as one more producer. Used for generation marks that do not come
 * from the program: time-based marks, settle marks and external marks. The
 * ring's position gives them their place among the program's allocations,
 * exactly like a heapgen_mark() call from inside the target.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "CHeapGenCollector.h"

static hg_header *header(const hg_segment *seg) { return (hg_header *)seg->base; }

/* Reserves arena space for a blob like any producer, in whichever epoch
 * is current, bounds-checked against our own copy of the layout (the
 * shared state may be anything). Returns the tagged ref or 0. */
static uint32_t put_string(const hg_segment *seg, const char *s, uint32_t len)
{
    uint64_t bytes = (sizeof(hg_blob_hdr) + (uint64_t)len + 1 + 7) & ~7ull;
    uint64_t epoch = UINT64_MAX;
    uint64_t off = hg_arena_reserve(header(seg), seg->arena_half, bytes, &epoch);
    if (off == 0 || off == UINT64_MAX || off > seg->arena_size || bytes > seg->arena_size - off)
        return 0;
    static const char nul = 0;
    hg_blob_write((uint8_t *)seg->arena + off, HG_BLOB_STRING, len + 1, s, len, &nul, 1);
    return hg_arena_ref(epoch, off);
}

/* Claims the next ring position if its slot is free; never waits (the
 * caller may be the ring's own consumer). */
static int claim_and_publish(const hg_segment *seg, uint32_t kind, uint64_t size, uint32_t ref, uint32_t aux)
{
    hg_header *h = header(seg);
    const uint64_t n = hg_ring_record_slots(0, size, aux);
    uint64_t pos = hg_ring_head(h);
    for (int tries = 0; tries < 1000; tries++) {
        if (!hg_ring_has_room(h, pos, n, seg->ring_mask))
            return -EAGAIN;                 /* full: drain first, then retry */
        if (hg_ring_claim(h, &pos, n)) {
            hg_ring_publish(seg->ring, seg->ring_mask, pos, seg->ring_shift, kind, 0, size, ref, aux);
            return 0;
        }
    }
    return -EAGAIN;
}

int hg_produce_mark(const hg_segment *seg, const char *label, uint32_t origin)
{
    if (seg == NULL || seg->base == NULL)
        return -EINVAL;
    size_t len = strnlen(label ? label : "", 4000);
    uint32_t ref = put_string(seg, label ? label : "", (uint32_t)len);
    return claim_and_publish(seg, HG_K_MARK, hg_clock_ns(), ref, origin);
}
