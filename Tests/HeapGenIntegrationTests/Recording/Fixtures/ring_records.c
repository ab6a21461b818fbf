/*
 * ring_records.c: the ring's two record forms through the real producer
 * (heapgen_ring.h, as the shim and produce.c use it) and the real consumer
 * (Sources/CHeapGenCollector/ring.c, compiled in with this file), on a
 * hand-made 8-slot ring: one-slot and two-slot records, a two-slot record
 * split by the ring's end, many laps, a claimed slot not yet published (the
 * drain stops there, hg_ring_check says pending), torn records at the end
 * (skipped and counted, a torn two-slot record's second slot never read as
 * a record), and slots a program scribbled on. Prints one line per check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "CHeapGenCollector.h"

#define SLOTS 8u

static struct {
    hg_header h;
    hg_slot ring[SLOTS];
} mem;
static hg_segment seg;
static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        failures++;
        printf("FAILED %s\n", what);
    }
}

/* One producer's publication, as the shim's hg_emit does it (no waiting:
 * the caller knows there is room). Returns the record's position. */
static uint64_t emit(uint32_t kind, uint64_t addr, uint64_t size, uint32_t ref, uint32_t aux)
{
    const uint64_t n = hg_ring_record_slots(addr, size, aux);
    uint64_t pos = hg_ring_head(&mem.h);
    if (!hg_ring_has_room(&mem.h, pos, n, seg.ring_mask) || !hg_ring_claim(&mem.h, &pos, n)) {
        printf("FAILED claim at %llu\n", (unsigned long long)pos);
        exit(1);
    }
    hg_ring_publish(mem.ring, seg.ring_mask, pos, seg.ring_shift, kind, addr, size, ref, aux);
    return pos;
}

static int same(const hg_record *r, uint64_t pos, uint32_t kind, uint64_t addr, uint64_t size, uint32_t ref,
                uint32_t aux)
{
    return r->pos == pos && r->addr == addr && (r->size_kind & HG_SIZE_MASK) == size &&
           (uint32_t)(r->size_kind >> HG_KIND_SHIFT) == kind && r->ref == ref && r->aux == aux;
}

typedef struct { uint32_t kind; uint64_t addr, size; uint32_t ref, aux; } want;

int main(void)
{
    seg.base = (uint8_t *)&mem;
    seg.size = sizeof mem;
    seg.ring = mem.ring;
    seg.ring_slots = SLOTS;
    seg.ring_mask = SLOTS - 1;
    seg.ring_shift = 3;
    mem.h.ring_slots = SLOTS;

    /* The forms: what takes one slot and what takes two. */
    printf("slots malloc %llu, free %llu, swift object %llu, 4 GiB block %llu, mark %llu, high addr %llu\n",
           (unsigned long long)hg_ring_record_slots(0x7f0012345670ull, 4096, 0),
           (unsigned long long)hg_ring_record_slots(0x7f0012345670ull, 0, 0),
           (unsigned long long)hg_ring_record_slots(0x7f0012345670ull, 48, 77),
           (unsigned long long)hg_ring_record_slots(0x7f0012345670ull, 1ull << 32, 0),
           (unsigned long long)hg_ring_record_slots(0, 123456789012345ull, 0),
           (unsigned long long)hg_ring_record_slots(0xfedcba9876543210ull, 0, 0));

    /* Many laps of mixed records, drained in batches of at most 3: every
     * field comes back, two-slot records split by the ring's end too. */
    const want w[] = {
        { HG_K_MALLOC, 0x7f0012345670ull, 4096, 0x01000010u, 0 },
        { HG_K_FREE, 0x7f0012345670ull, 0, 0, 0 },
        { HG_K_MALLOC, 0x55550000a010ull, 48, 0x02abcdefu, 0x1234u },        /* Swift object */
        { HG_K_MARK, 0, 987654321987654ull, 0x00000100u, 2 },                /* clock in size */
        { HG_K_CALLOC, 0x7ffff0000000ull, (1ull << 32) + 16, 0xff000001u, 0 }, /* 4 GiB + 16 */
        { HG_K_FORK, 0xfedcba9876543210ull, 0, 0, 0 },                        /* addr past 48 bits */
        { HG_K_THREAD_START, 0, 0, 0, 4242 },
        { HG_K_REALLOC_FREE, 0x10, 0, 0, 0 },
        { HG_K_MALLOC, 0x7f0000000000ull, 0xffffffffull, 0xffffffffu, 0 },    /* largest one-slot */
    };
    const size_t kinds = sizeof w / sizeof w[0];
    uint64_t tail = 0, emitted = 0, drained = 0, wide = 0, mismatches = 0;
    hg_record out[3];
    while (emitted < 200) {
        /* Fill the ring as far as the next record fits. */
        for (;;) {
            const want *x = &w[emitted % kinds];
            const uint64_t n = hg_ring_record_slots(x->addr, x->size, x->aux);
            if (!hg_ring_has_room(&mem.h, hg_ring_head(&mem.h), n, seg.ring_mask))
                break;
            emit(x->kind, x->addr, x->size, x->ref, x->aux);
            wide += n == 2;
            emitted++;
        }
        const size_t got = hg_drain(&seg, &tail, out, 3);
        if (got == 0) {
            printf("FAILED drain stalled at %llu\n", (unsigned long long)tail);
            return 1;
        }
        for (size_t i = 0; i < got; i++, drained++) {
            const want *x = &w[drained % kinds];
            if (!same(&out[i], out[i].pos, x->kind, x->addr, x->size, x->ref, x->aux))
                mismatches++;
        }
    }
    while (drained < emitted) {
        const size_t got = hg_drain(&seg, &tail, out, 3);
        if (got == 0) break;
        for (size_t i = 0; i < got; i++, drained++) {
            const want *x = &w[drained % kinds];
            if (!same(&out[i], out[i].pos, x->kind, x->addr, x->size, x->ref, x->aux))
                mismatches++;
        }
    }
    check(tail == hg_ring_head(&mem.h) && mem.h.tail == tail, "tail at the head after the laps");
    printf("laps %llu, records %llu, two-slot %llu, drained %llu, mismatched %llu\n",
           (unsigned long long)(tail / SLOTS), (unsigned long long)emitted, (unsigned long long)wide,
           (unsigned long long)drained, (unsigned long long)mismatches);

    /* A slot claimed but not published: the drain stops before it, the
     * check says pending; published, it is read. */
    uint64_t head;
    uint64_t claimed = hg_ring_head(&mem.h);
    check(hg_ring_claim(&mem.h, &claimed, 2), "claim two slots");
    emit(HG_K_FREE, 0x2000, 0, 0, 0);
    printf("claimed, unpublished: drained %zu, check %d\n", hg_drain(&seg, &tail, out, 3),
           hg_ring_check(&seg, tail, &head));
    hg_ring_publish(mem.ring, seg.ring_mask, claimed, seg.ring_shift, HG_K_MALLOC, 0x1000, 24, 5, 99);
    size_t got = hg_drain(&seg, &tail, out, 3);
    printf("published: drained %zu, in order %d, check %d\n", got,
           got == 2 && same(&out[0], claimed, HG_K_MALLOC, 0x1000, 24, 5, 99) &&
               same(&out[1], claimed + 2, HG_K_FREE, 0x2000, 0, 0, 0),
           hg_ring_check(&seg, tail, &head));

    /* The end of a process: a torn two-slot record (its second slot
     * written, the first not), a published record, a torn one-slot record,
     * another published one. The final drain keeps both published records
     * and counts three torn slots; the second slot is not read as a record
     * even when its words look like one. */
    const uint64_t t0 = hg_ring_head(&mem.h);
    uint64_t p = t0;
    check(hg_ring_claim(&mem.h, &p, 2), "claim torn wide");
    mem.ring[(t0 + 1) & seg.ring_mask].w0 = 0xffffffffu;  /* a ref: no lap tag */
    mem.ring[(t0 + 1) & seg.ring_mask].w1 = 0x00000001ffffffffull;
    emit(HG_K_MALLOC, 0x3000, 32, 6, 0);
    p = hg_ring_head(&mem.h);
    check(hg_ring_claim(&mem.h, &p, 1), "claim torn narrow");
    emit(HG_K_FREE, 0x3000, 0, 0, 0);
    uint64_t torn = 0;
    const uint64_t limit = hg_final_limit(&seg, tail);
    got = hg_drain_final(&seg, &tail, limit, out, 3, &torn);
    printf("final: drained %zu, torn %llu, records %d, at the head %d\n", got, (unsigned long long)torn,
           got == 2 && same(&out[0], t0 + 2, HG_K_MALLOC, 0x3000, 32, 6, 0) &&
               same(&out[1], t0 + 4, HG_K_FREE, 0x3000, 0, 0, 0),
           tail == limit && limit == hg_ring_head(&mem.h));

    /* A program that scribbles on its ring: a slot at the tail with
     * another lap's tag is neither published nor pending. */
    const uint64_t at = hg_ring_head(&mem.h);
    uint64_t q = at;
    check(hg_ring_claim(&mem.h, &q, 1), "claim scribbled");
    mem.ring[at & seg.ring_mask].w0 = hg_ring_tag(at + 3 * SLOTS, seg.ring_shift) | 0x1234;
    printf("scribbled: drained %zu, check %d\n", hg_drain(&seg, &tail, out, 3), hg_ring_check(&seg, tail, &head));
    printf("failures %d\n", failures);
    return failures != 0;
}
