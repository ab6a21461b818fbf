/* Mixed workload for the valgrind comparison: malloc/calloc/realloc chains,
 * memalign & co, frees in random order, some leaks. Deterministic. */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>

#define SLOTS 512
void *volatile slot[SLOTS];
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

int main(void)
{
    for (int i = 0; i < 20000; i++) {
        uint64_t r = next();
        int s = (int)(r % SLOTS);
        size_t n = 1 + (size_t)((r >> 16) % 3000);
        void *p = slot[s];
        switch ((r >> 40) % 10) {
        case 0: case 1: case 2:
            free(p); slot[s] = malloc(n); break;
        case 3:
            free(p); slot[s] = calloc(1 + n % 7, 1 + n / 7); break;
        case 4: case 5: {            /* realloc chain: grow 3 times */
            void *q = realloc(p, n);
            if (q) { q = realloc(q, n * 2); }
            if (q) { q = realloc(q, n * 3); }
            slot[s] = q; break;
        }
        case 6:
            slot[s] = realloc(p, 0); break;   /* frees p (or allocates nothing) */
        case 7:
            free(p); slot[s] = memalign(64, n); break;
        case 8: {
            free(p); void *q = NULL;
            slot[s] = posix_memalign(&q, 32, n) == 0 ? q : NULL; break;
        }
        default:
            free(p); slot[s] = reallocarray(NULL, 1 + n % 5, 8); break;
        }
    }
    /* leak every third slot */
    for (int s = 0; s < SLOTS; s++)
        if (s % 3) { free(slot[s]); slot[s] = NULL; }
    return 0;
}
