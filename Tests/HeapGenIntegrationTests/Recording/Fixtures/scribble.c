/* A program that writes over its own heapgen segment (issue 7, item 7).
 *
 *   scribble MODE
 *
 * 1,000 mallocs of 24 bytes kept live; then, if the program runs under
 * heapgen (its segment shows as a `memfd:heapgen` mapping in
 * /proc/self/maps), it waits until the collector has read everything and
 * damages the segment by MODE:
 *   header   random bytes over the whole header page
 *   head     head set a huge distance ahead
 *   tail     tail set huge
 *   seq      every slot's first word set to garbage with an impossible lap tag
 *   stuck    head moved one past the last claimed position: a slot claimed
 *            and never published
 *   counters the shim's counters set to UINT64_MAX (the ring stays sane)
 * and then makes 1,000 more mallocs of 40 bytes (kept live), freeing none.
 * Output (stdout) is the same with and without heapgen. Exit status 0. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "heapgen_protocol.h"

#define N 1000
void *volatile first[N];
void *volatile second[N];

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* The start of the segment: the mapping of memfd:heapgen at file offset 0. */
static hg_header *find_segment(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return NULL;
    char line[512];
    hg_header *found = NULL;
    while (fgets(line, sizeof line, f)) {
        unsigned long start, end, off;
        if (!strstr(line, "memfd:heapgen")) continue;
        if (sscanf(line, "%lx-%lx %*s %lx", &start, &end, &off) == 3 && off == 0) {
            found = (hg_header *)start;
            break;
        }
    }
    fclose(f);
    return found;
}

static uint64_t xorshift(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void scribble(hg_header *h, const char *mode)
{
    /* Let the collector catch up first: the first 1,000 are then in the trace. */
    for (int i = 0; i < 5000 && __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE) != __atomic_load_n(&h->head, __ATOMIC_ACQUIRE); i++)
        sleep_ms(1);
    uint64_t x = 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
    hg_slot *ring = (hg_slot *)((char *)h + h->ring_offset);
    uint64_t slots = h->ring_slots;
    if (strcmp(mode, "header") == 0) {
        uint64_t *w = (uint64_t *)h;
        for (size_t i = 0; i < sizeof(hg_header) / 8; i++) w[i] = xorshift(&x);
        h->detached = 0; /* keep the shim recording: the collector must notice */
    } else if (strcmp(mode, "head") == 0) {
        __atomic_fetch_add(&h->head, 1ull << 40, __ATOMIC_RELAXED);
    } else if (strcmp(mode, "tail") == 0) {
        __atomic_store_n(&h->tail, 1ull << 50, __ATOMIC_RELAXED);
    } else if (strcmp(mode, "seq") == 0) {
        /* Random words with a lap tag no lap has (tags are 1..256): one
         * that happened to be this lap's would be read as a record. */
        for (uint64_t i = 0; i < slots; i++) ring[i].w0 = xorshift(&x) | 0x1ffull << HG_W0_TAG_SHIFT;
    } else if (strcmp(mode, "stuck") == 0) {
        __atomic_fetch_add(&h->head, 1, __ATOMIC_RELAXED);
    } else if (strcmp(mode, "counters") == 0) {
        h->wait_count = h->wait_ns = h->lost_events = h->arena_full = UINT64_MAX;
        h->free_null = h->unwind_fallbacks = UINT64_MAX;
    }
    /* The collector looks within a millisecond; "stuck" needs its time limit. */
    if (strcmp(mode, "stuck") == 0) {
        for (int i = 0; i < 25000 && !__atomic_load_n(&h->detached, __ATOMIC_ACQUIRE); i++) sleep_ms(1);
    } else {
        sleep_ms(300);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    for (int i = 0; i < N; i++) first[i] = malloc(24);
    hg_header *h = find_segment();
    if (h) scribble(h, argv[1]);
    for (int i = 0; i < N; i++) second[i] = malloc(40);
    printf("scribble %s: %d + %d blocks\n", argv[1], N, N);
    return 0;
}
