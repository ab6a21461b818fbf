/*
 * warmup.c: growth patterns around the warm-up and the tolerated misses.
 *   early_growth  2 blocks in cycles 1 and 2 only, then flat
 *   one_miss      1 block every cycle except cycle 5
 *   two_misses    1 block every cycle except cycles 4 and 6
 */
#include <stdlib.h>
#include <string.h>
#include "heapgen.h"

#define NOINLINE __attribute__((noipa))
volatile int two = 2;   /* not a constant: the loop keeps one call site */
void *kept[1000];
int nkept;

static void keep(void *p) { memset(p, 0, 32); kept[nkept++] = p; }

NOINLINE void early_growth(int k) { if (k <= 2) for (int i = 0; i < two; i++) keep(malloc(40)); }
NOINLINE void one_miss(int k)     { if (k != 5) keep(malloc(56)); }
NOINLINE void two_misses(int k)   { if (k != 4 && k != 6) keep(malloc(72)); }

int main(int argc, char **argv) {
    int cycles = argc > 1 ? atoi(argv[1]) : 9;
    HEAPGEN_MARK("heapgen.start");
    for (int k = 1; k <= cycles; k++) {
        early_growth(k);
        one_miss(k);
        two_misses(k);
        HEAPGEN_MARK("cycle");
    }
    return 0;
}
