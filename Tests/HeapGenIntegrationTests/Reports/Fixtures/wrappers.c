// Allocations through wrappers: a redis-like `zmalloc` (known to heapgen) and a
// custom `my_alloc` (named with --alloc-fn). Six cycles, one block of each per cycle,
// none freed. Built with -O0 by the tests, so that every function is a frame.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapgen.h"

__attribute__((noipa)) void *zmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) abort();
    return p;
}

__attribute__((noipa)) void *my_alloc(size_t n) {
    void *p = malloc(n);
    if (!p) abort();
    memset(p, 0, n);
    return p;
}

void *kept[64];

__attribute__((noipa)) void store_session(int i) { kept[i] = zmalloc(48); }

__attribute__((noipa)) void store_token(int i) { kept[32 + i] = my_alloc(16); }

int main(void) {
    for (int i = 0; i < 6; i++) {
        store_session(i);
        store_token(i);
        HEAPGEN_MARK("cycle");
    }
    printf("wrappers: done\n");
    return 0;
}
