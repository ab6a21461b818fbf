/* Threads cancelled while they allocate. Each of 4 workers per round
 * mallocs (1000-1199 bytes) and frees through a table of 64 with deferred
 * cancellation, reaching pthread_testcancel() every 1,024 pairs; main cancels
 * them after 20 ms, for ROUNDS rounds. malloc and free are not cancellation
 * points: the cleanup handler counts a thread cancelled inside one (never,
 * natively), adds the thread's completed mallocs and frees its table.
 * Prints "allocations N" and "cancelled inside malloc/free: K". */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static atomic_ulong total_allocs;
static atomic_int inside_cancels;

struct worker {
    void *keep[64];
    unsigned long allocs;
    volatile int inside;        /* between calling malloc/free and their return */
};

static void cleanup(void *arg)
{
    struct worker *w = arg;
    if (w->inside)
        atomic_fetch_add(&inside_cancels, 1);
    for (int k = 0; k < 64; k++)
        free(w->keep[k]);
    atomic_fetch_add(&total_allocs, w->allocs);
}

static void *work(void *arg)
{
    struct worker *w = arg;
    pthread_cleanup_push(cleanup, w);
    for (unsigned long i = 0;; i++) {
        w->inside = 1;
        void *p = malloc(1000 + i % 200);
        w->allocs++;
        free(w->keep[i % 64]);
        w->keep[i % 64] = p;
        w->inside = 0;
        if ((i & 1023) == 0)
            pthread_testcancel();
    }
    pthread_cleanup_pop(0);
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    for (int round = 0; round < rounds; round++) {
        static struct worker workers[4];
        pthread_t t[4];
        for (int k = 0; k < 4; k++) {
            workers[k] = (struct worker){ 0 };
            pthread_create(&t[k], NULL, work, &workers[k]);
        }
        usleep(20000);
        for (int k = 0; k < 4; k++)
            pthread_cancel(t[k]);
        for (int k = 0; k < 4; k++)
            pthread_join(t[k], NULL);
    }
    printf("allocations %lu\ncancelled inside malloc/free: %d\n", atomic_load(&total_allocs), atomic_load(&inside_cancels));
    return 0;
}
