/* Per-function coverage: every entry point a known number of times with
 * known sizes. No stdio: nothing else allocates. Exits non-zero when a
 * result is wrong (the test names the code). Expected (see the test):
 *   malloc 4 calls / 74 B, calloc 2 / 121, realloc 4 / 5170,
 *   reallocarray 2 / 240, posix_memalign 1 / 100, aligned_alloc 1 / 128,
 *   memalign 1 / 50, valloc 1 / 100, pvalloc 1 / a page (it rounds 100 up);
 *   frees: free 9, realloc 4; free(NULL) 3;
 *   live at exit: 4 blocks, 22 + 21 + 5000 + 50 = 5093 bytes. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *volatile sink[32];
static const char *volatile text = "heapgen"; /* strdup → malloc(8) */
/* Through volatiles so gcc cannot turn realloc(NULL, n) into malloc(n)
 * or see the reallocarray overflow at compile time. */
static void *volatile null_block = NULL;
static volatile size_t huge = SIZE_MAX / 2 + 2;

int main(void)
{
    /* malloc: 11 (freed), 22 (leaked), 33 (freed), strdup 8 (freed) */
    sink[0] = malloc(11);
    sink[1] = malloc(22);
    sink[2] = malloc(33);
    sink[3] = strdup(text);
    if (!sink[0] || !sink[1] || !sink[2] || !sink[3]) return 10;
    if (malloc_usable_size(sink[1]) < 22) return 11;
    if (strcmp((char *)sink[3], "heapgen") != 0) return 12;
    free(sink[0]);
    free(sink[2]);
    free(sink[3]);

    /* calloc: 4*25 = 100 (freed), 3*7 = 21 (leaked) */
    sink[4] = calloc(4, 25);
    sink[5] = calloc(3, 7);
    if (!sink[4] || !sink[5] || ((char *)sink[4])[99] != 0) return 20;
    free(sink[4]);

    /* realloc: NULL→40, 40→80, 80→0 (a free only), NULL→50, 50→5000 (leaked) */
    sink[6] = realloc(null_block, 40);
    if (!sink[6]) return 30;
    sink[7] = realloc(sink[6], 80);
    if (!sink[7]) return 31;
    sink[8] = realloc(sink[7], 0);   /* glibc frees and returns NULL */
    if (sink[8] != NULL) return 32;
    sink[9] = realloc(null_block, 50);
    sink[10] = realloc(sink[9], 5000);
    if (!sink[9] || !sink[10]) return 33;

    /* reallocarray: NULL→10*8, →20*8 (freed with free); an overflow is refused unrecorded */
    sink[11] = reallocarray(null_block, 10, 8);
    if (!sink[11]) return 40;
    sink[12] = reallocarray(sink[11], 20, 8);
    if (!sink[12]) return 41;
    errno = 0;
    if (reallocarray(sink[12], huge, 2) != NULL || errno != ENOMEM) return 42;
    free(sink[12]);

    /* posix_memalign: one good call, two EINVAL (not recorded) */
    void *pm = NULL;
    if (posix_memalign(&pm, 64, 100) != 0 || ((uintptr_t)pm & 63) != 0) return 50;
    sink[13] = pm;
    void *bad = (void *)1;
    if (posix_memalign(&bad, 3, 100) != EINVAL || bad != (void *)1) return 51;
    if (posix_memalign(&bad, 24, 100) != EINVAL || bad != (void *)1) return 52;
    free(sink[13]);

    sink[14] = aligned_alloc(64, 128);
    if (!sink[14] || ((uintptr_t)sink[14] & 63) != 0) return 60;
    free(sink[14]);

    sink[15] = memalign(32, 50);     /* leaked */
    if (!sink[15] || ((uintptr_t)sink[15] & 31) != 0) return 61;

    sink[16] = valloc(100);
    if (!sink[16] || ((uintptr_t)sink[16] & 4095) != 0) return 62;
    free(sink[16]);

    sink[17] = pvalloc(100);
    if (!sink[17] || ((uintptr_t)sink[17] & 4095) != 0) return 63;
    free(sink[17]);

    /* free(NULL) three times: counted, not recorded */
    void *volatile nothing = NULL;
    free(nothing);
    free(nothing);
    free(nothing);
    return 0;
}
