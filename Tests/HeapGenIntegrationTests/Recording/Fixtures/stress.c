/* 64 threads x 20,000 operations. Each operation mallocs exactly one block
 * of 8 + ((id * 7919 + i * 31) % 2048) bytes; every 4th block goes through
 * a shared lock-free exchange (atomic swap), so threads free blocks other
 * threads allocated; the rest replace one of 32 local blocks. Everything is
 * freed by the end. Marks: "start" and "end" from main, "half" from every
 * worker at operation 10,000: 66 in all.
 * argv[1], argv[2] override threads and operations. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include "heapgen.h"

#define XCHG 1024
static _Atomic(void *) xchg[XCHG];
static int ops = 20000;
static pthread_barrier_t barrier;

static void *worker(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg;
    void *local[32] = { 0 };
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < ops; i++) {
        if (i == ops / 2) HEAPGEN_MARK("half");
        size_t n = 8 + (size_t)((id * 7919 + (uint64_t)i * 31) % 2048);
        char *p = malloc(n);
        if (!p) abort();
        p[0] = (char)i;
        if (i % 4 == 0) {
            void *old = atomic_exchange(&xchg[(id * 13 + (uint64_t)i) % XCHG], p);
            free(old);
        } else {
            free(local[i % 32]);
            local[i % 32] = p;
        }
    }
    for (int k = 0; k < 32; k++) free(local[k]);
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 64;
    if (argc > 2) ops = atoi(argv[2]);
    pthread_t t[256];
    if (threads < 1 || threads > 256) return 2;
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    HEAPGEN_MARK("start");
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) != 0) return 1;
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    for (int k = 0; k < XCHG; k++) free(atomic_exchange(&xchg[k], NULL));
    HEAPGEN_MARK("end");
    return 0;
}
