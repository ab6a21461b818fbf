/* jemalloc_user: a program linked with -ljemalloc that uses the standard
 * family and jemalloc's own API, and reads jemalloc's statistics. heapgen must
 * wrap jemalloc, not replace it: the output (its own call counts, usable
 * sizes, and jemalloc's stats.allocated deltas) is the same with and without
 * heapgen, and heapgen's totals equal the counts printed here.
 *
 * tcache is off (malloc_conf below) so stats.allocated moves with every
 * call. No stdio: its buffer would be a malloc of its own; the report is
 * formatted into a static buffer and written with write(2). */
#include <jemalloc/jemalloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *malloc_conf = "tcache:false";

#define N 200

static size_t allocated(void)
{
    uint64_t epoch = 1;
    size_t sz = sizeof epoch;
    mallctl("epoch", &epoch, &sz, &epoch, sz);
    size_t v = 0;
    sz = sizeof v;
    if (mallctl("stats.allocated", &v, &sz, NULL, 0) != 0)
        return (size_t)-1;
    return v;
}

int main(void)
{
    /* Counts of this program's own calls, as heapgen should report them:
     * mallocx is recorded as malloc, rallocx and a successful xallocx as
     * realloc, dallocx/sdallocx as free. */
    unsigned long mallocs = 0, callocs = 0, reallocs = 0, frees = 0, realloc_frees = 0;
    static void *blocks[N], *xblocks[N];

    /* Warm-up (first use of the allocator, and of heapgen's unwinder). */
    void *volatile w = malloc(16);   /* volatile: gcc drops a malloc/free pair */
    mallocs++;
    free(w);
    frees++;

    size_t before = allocated();
    size_t usable = 0;
    for (int i = 0; i < N; i++) {
        size_t n = 24 + (size_t)i * 40;
        void *p;
        if (i % 3 == 0) {
            p = malloc(n);
            mallocs++;
        } else if (i % 3 == 1) {
            p = calloc(1, n);
            callocs++;
        } else {
            p = malloc(n / 2);
            mallocs++;
            p = realloc(p, n);
            reallocs++;
            realloc_frees++;
        }
        memset(p, i & 0xff, n);
        blocks[i] = p;
        usable += malloc_usable_size(p);

        void *x = mallocx(n, MALLOCX_ALIGN(64) | MALLOCX_ZERO);
        mallocs++;
        if (((uintptr_t)x & 63) != 0 || ((unsigned char *)x)[n - 1] != 0)
            return 2;
        if (i % 2 == 0) {
            x = rallocx(x, n + 100, 0);
            reallocs++;
            realloc_frees++;
        }
        /* Within the size class: always succeeds in place. */
        size_t real = sallocx(x, 0);
        if (xallocx(x, real, 0, 0) >= real) {
            reallocs++;
            realloc_frees++;
        }
        /* Far beyond a small block's class: never in place. */
        if (xallocx(x, (size_t)64 << 20, 0, 0) >= ((size_t)64 << 20))
            return 3;
        if (nallocx(n, 0) < n)
            return 4;
        xblocks[i] = x;
        usable += sallocx(x, 0);
    }
    size_t live = allocated();

    for (int i = 0; i < N; i++) {
        if (i % 2 == 0) {
            sdallocx(blocks[i], 24 + (size_t)i * 40, 0);
        } else {
            free(blocks[i]);
        }
        frees++;
        dallocx(xblocks[i], 0);
        frees++;
    }
    size_t after = allocated();

    static char out[512];
    int len = snprintf(out, sizeof out,
                       "calls: malloc %lu calloc %lu realloc %lu free %lu realloc-free %lu\n"
                       "usable bytes while live: %zu\n"
                       "jemalloc stats.allocated: +%zd while live, %+zd after freeing\n"
                       "stats match usable sizes: %s\n",
                       mallocs, callocs, reallocs, frees, realloc_frees, usable,
                       (ssize_t)(live - before), (ssize_t)(after - before),
                       live - before == usable ? "yes" : "no");
    if (write(1, out, (size_t)len) != len)
        return 5;
    return 0;
}
