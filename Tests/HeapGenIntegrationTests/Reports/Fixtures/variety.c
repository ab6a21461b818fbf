/*
 * variety.c: one leaked block per cycle from every allocation function, each in
 * its own function, plus one from a worker thread that the main thread waits for
 * before marking. Nothing else is left behind.
 */
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include "heapgen.h"

#define NOINLINE __attribute__((noipa))
void *kept[1000];
int nkept;
static sem_t go, done;

NOINLINE void leak_calloc(void)         { kept[nkept++] = calloc(3, 40); }
NOINLINE void leak_posix_memalign(void) { void *p = NULL; if (posix_memalign(&p, 64, 200) == 0) kept[nkept++] = p; }
NOINLINE void leak_aligned_alloc(void)  { kept[nkept++] = aligned_alloc(128, 256); }
NOINLINE void leak_memalign(void)       { kept[nkept++] = memalign(32, 96); }
NOINLINE void leak_valloc(void)         { kept[nkept++] = valloc(64); }
NOINLINE void leak_strdup(int k)        { char s[40]; memset(s, 'a' + k, 30); s[30] = 0; kept[nkept++] = strdup(s); }
NOINLINE void leak_realloc_fresh(void)  { kept[nkept++] = realloc(NULL, 72); }
NOINLINE void worker_leak(void)         { kept[nkept++] = malloc(88); }

static void *worker(void *arg) {
    (void)arg;
    for (;;) {
        while (sem_wait(&go) != 0) {}
        worker_leak();
        sem_post(&done);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int cycles = argc > 1 ? atoi(argv[1]) : 6;
    sem_init(&go, 0, 0);
    sem_init(&done, 0, 0);
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    HEAPGEN_MARK("heapgen.start");
    for (int k = 1; k <= cycles; k++) {
        leak_calloc();
        leak_posix_memalign();
        leak_aligned_alloc();
        leak_memalign();
        leak_valloc();
        leak_strdup(k);
        leak_realloc_fresh();
        sem_post(&go);
        while (sem_wait(&done) != 0) {}
        HEAPGEN_MARK("cycle");
    }
    return 0;
}
