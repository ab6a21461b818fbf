/*
 * manystacks.c: 2^K distinct call stacks (K = argv[1], default 18).
 *
 * path `bits` descends K levels below main through two functions: level 0 is
 * step_a; level j (1..K) is step_b where bit j-1 of `bits` is 1, step_a where
 * it is 0. The innermost level mallocs 16 + bits bytes, so an allocation's
 * size names its path. Every block is freed at once except every 4096th,
 * which stays live. Prints what it did (compared with and without heapgen).
 * The stacks share their outer frames: a call tree of ~3 * 2^K edges.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long count_a, count_b;

__attribute__((noipa)) void *step_b(size_t size, unsigned bits, int depth);

/* The work after each call keeps it from being a tail call. */
__attribute__((noipa)) void *step_a(size_t size, unsigned bits, int depth)
{
    void *p = depth == 0 ? malloc(size)
            : (bits & 1) ? step_b(size, bits >> 1, depth - 1)
                         : step_a(size, bits >> 1, depth - 1);
    count_a++;
    return p;
}

__attribute__((noipa)) void *step_b(size_t size, unsigned bits, int depth)
{
    void *p = depth == 0 ? malloc(size)
            : (bits & 1) ? step_b(size, bits >> 1, depth - 1)
                         : step_a(size, bits >> 1, depth - 1);
    count_b += 2;
    return p;
}

static void *kept[1024];

int main(int argc, char **argv)
{
    int k = argc > 1 ? atoi(argv[1]) : 18;
    if (k < 1 || k > 22)
        return 2;
    unsigned long ok = 0, nkept = 0;
    for (unsigned bits = 0; bits < (1u << k); bits++) {
        void *p = step_a(16 + (size_t)bits, bits, k);
        ok += p != NULL;
        if ((bits & 4095) == 0 && nkept < 1024)
            kept[nkept++] = p;
        else
            free(p);
    }
    printf("paths %u allocated %lu kept %lu a %lu b %lu\n", 1u << k, ok, nkept, count_a, count_b);
    return 0;
}
