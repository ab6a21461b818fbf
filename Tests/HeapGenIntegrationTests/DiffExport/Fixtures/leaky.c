/*
 * leaky.c: exactly known allocations per cycle, for heapgen diff and export.
 *
 * Marks: #0 "start", #1…#6 "cycle" (one after each cycle), #7 "done".
 * Every cycle:
 *   - leak_some: 3 × factor blocks of 48 bytes, kept forever (factor = argv[1], default 1);
 *   - churn: frees the 1000-byte block of the previous cycle, allocates a new one;
 *   - scratch: 4096 bytes allocated and freed (never live at a mark).
 * Nothing else allocates: no stdio.
 */
#include <stdlib.h>
#include <string.h>
#include "heapgen.h"

static void *kept[4096];
static int nkept;
static void *current;

__attribute__((noipa)) void leak_some(int n) {
    for (int i = 0; i < n; i++) {
        void *p = malloc(48); /* LEAK */
        memset(p, i, 48);
        kept[nkept++] = p;
    }
}

__attribute__((noipa)) void churn(void) {
    free(current);
    current = malloc(1000); /* CHURN */
    memset(current, 2, 1000);
}

__attribute__((noipa)) void scratch(void) {
    void *t = malloc(4096);
    memset(t, 3, 4096);
    free(t);
}

int main(int argc, char **argv) {
    int factor = argc > 1 ? atoi(argv[1]) : 1;
    HEAPGEN_MARK("start");
    for (int c = 1; c <= 6; c++) {
        leak_some(3 * factor);
        churn();
        scratch();
        HEAPGEN_MARK("cycle");
    }
    HEAPGEN_MARK("done");
    return 0;
}
