/* Multi-threaded workload for the valgrind comparison: 8 threads, each
 * 3,000 malloc/realloc/free operations. Deterministic counts. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define THREADS 8
#define OPS 3000

static void *worker(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    uint64_t x = 0x1234567ull + id * 7919;
    void *volatile mine[64] = { 0 };
    for (int i = 0; i < OPS; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        int s = (int)(x % 64);
        size_t n = 8 + (size_t)((x >> 20) % 2000);
        if ((x >> 50) % 4 == 0) {
            void *q = realloc(mine[s], n);
            if (q) mine[s] = q;
        } else {
            free(mine[s]);
            mine[s] = malloc(n);
        }
    }
    for (int s = 0; s < 64; s++) free(mine[s]);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) return 1;
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    return 0;
}
