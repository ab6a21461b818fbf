/*
 * aggregate.c: a deterministic mix of patterns, recorded with and without
 * `heapgen record --aggregate` by AggregateTests, which compare what the two traces give.
 *
 * Marks: "start", "cycle" after each of CYCLES cycles (argv[1], default 6), "done".
 * Every cycle:
 *   - leak_pair: 2 × 40 B and 1 × 24 B, kept forever (a staircase);
 *   - cache_put: one 64 B entry; the cache keeps the newest 3 (a plateau);
 *   - churn: 2000 blocks of 16…128 B, each freed before the next mark (transient);
 *   - grow: reallocs one buffer 256 B larger (the old block goes, the new one is kept),
 *     after a realloc to 2^62 bytes that fails (the shim records the free and its undo);
 *   - late: a 100 B block freed two cycles later;
 *   - zeroed: a calloc'ed 3 × 20 B block freed at the next cycle.
 * Nothing else allocates: no stdio.
 */
#include <stdlib.h>
#include <string.h>
#include "heapgen.h"

#define NOINLINE __attribute__((noipa))
/* Global, so the compiler cannot drop the kept blocks' mallocs. */
void *kept[4096];
int nkept;
static void *cache[3];
static int cache_next;
static char *buffer;
static size_t buffer_size;
static void *lates[64];
static void *zero;

NOINLINE void leak_pair(void) {
    kept[nkept++] = malloc(40);
    kept[nkept++] = malloc(40);
    kept[nkept++] = malloc(24);
}

NOINLINE void cache_put(void) {
    free(cache[cache_next]);
    cache[cache_next] = malloc(64);
    cache_next = (cache_next + 1) % 3;
}

static int churn_blocks = 2000;

NOINLINE void churn(void) {
    void *held[8];
    for (int i = 0; i < churn_blocks; i++) {
        /* Sizes from a fixed-seed xorshift: a pattern a compressor could fold away
         * would hide how the full trace grows with events. */
        static unsigned long long x = 88172645463325252ull;
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        void *p = malloc(16 * (1 + x % 8));
        memset(p, i, 16);
        if (i % 8 == 7) {
            for (int k = 0; k < 7; k++) free(held[k]);
            free(p);
        } else {
            held[i % 8] = p;
        }
    }
}

NOINLINE void grow(void) {
    if (buffer) {
        void *huge = realloc(buffer, (size_t)1 << 62);
        if (huge) buffer = huge; /* never: no heap that large */
    }
    buffer_size += 256;
    buffer = realloc(buffer, buffer_size);
    memset(buffer, 1, buffer_size);
}

NOINLINE void late(int c) {
    lates[c] = malloc(100);
    if (c >= 2) {
        free(lates[c - 2]);
        lates[c - 2] = NULL;
    }
}

NOINLINE void zeroed(void) {
    free(zero);
    zero = calloc(3, 20);
}

int main(int argc, char **argv) {
    int cycles = argc > 1 ? atoi(argv[1]) : 6;
    if (argc > 2) churn_blocks = atoi(argv[2]) / 8 * 8;
    if (cycles > 60) cycles = 60;
    HEAPGEN_MARK("start");
    for (int c = 1; c <= cycles; c++) {
        leak_pair();
        cache_put();
        churn();
        grow();
        late(c);
        zeroed();
        HEAPGEN_MARK("cycle");
    }
    HEAPGEN_MARK("done");
    return 0;
}
