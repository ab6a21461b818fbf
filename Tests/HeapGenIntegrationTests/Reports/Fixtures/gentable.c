/*
 * gentable.c: exactly known allocations per cycle. Cycle k (1-based) allocates
 * k+2 blocks of 100 bytes with malloc, keeps them in a global array and frees
 * the first of them before the mark. Nothing else allocates: no stdio.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "heapgen.h"

void *kept[1000];
int nkept;

/* One malloc call site (noipa, no branch in the loop for gcc to peel). */
__attribute__((noipa)) void run_cycle(int k) {
    int first = nkept;
    for (int i = 0; i < k + 2; i++) {
        void *p = malloc(100);
        memset(p, k, 100);
        kept[nkept++] = p;
    }
    free(kept[first]);
    kept[first] = NULL;
}

__attribute__((noipa)) void end_cycle(int k) { HEAPGEN_MARK(k == 1 ? "warm-up 1" : "cycle"); }

int main(int argc, char **argv) {
    int cycles = argc > 1 ? atoi(argv[1]) : 8;
    HEAPGEN_MARK("heapgen.start");
    for (int k = 1; k <= cycles; k++) {
        run_cycle(k);
        end_cycle(k);
    }
    return 0;
}
