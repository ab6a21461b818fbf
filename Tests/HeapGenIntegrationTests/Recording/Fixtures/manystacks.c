/*
 * manystacks.c: 2^K distinct call stacks (K = argv[1], default 18).
 *
 * path `bits` descends K levels below run_paths through two functions: level 0 is
 * step_a; level j (1..K) is step_b where bit j-1 of `bits` is 1, step_a where
 * it is 0. The innermost level mallocs 16 + bits bytes, so an allocation's
 * size names its path. Every block is freed at once except every 4096th,
 * which stays live. With a second argument T, T threads run every path at
 * once, racing to store the same new stacks. With MANYSTACKS_HOT=1 in the
 * environment each path is followed by an allocation from one of two fixed
 * sites, hot_a (16 + 2^K + 1 bytes) and hot_b (+ 2): the same few stacks
 * again and again while the new ones fill the stack store.
 *
 * With MANYSTACKS_SIGNAL=1 (no threads) a 20 us timer sends SIGPROF, whose
 * handler runs a path of its own (HANDLER_LEVELS deep below on_prof, the
 * n-th run path n mod 2^HANDLER_LEVELS): in the middle of whatever the
 * program was doing, often the recording of a path's new stack. Path
 * blocks are then all 24 bytes and the handler's 40 (the n-th of each size
 * is path n): tcache sizes, which glibc serves without touching what the
 * interrupted call may be changing (as deepsignal.c). The handler's count
 * goes to stderr: it varies.
 *
 * Prints what it did (compared with and without heapgen).
 * The stacks share their outer frames: a call tree of ~3 * 2^K edges.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

__attribute__((noipa)) void *hot_a(size_t size)
{
    void *p = malloc(size);
    count_a++;
    return p;
}

__attribute__((noipa)) void *hot_b(size_t size)
{
    void *p = malloc(size);
    count_b++;
    return p;
}

#define MAX_THREADS 8
#define HANDLER_LEVELS 6

static int k, hot, signals;
static volatile sig_atomic_t handler_runs;

__attribute__((noipa)) void on_prof(int sig)
{
    (void)sig;
    const unsigned bits = (unsigned)handler_runs & ((1u << HANDLER_LEVELS) - 1);
    free(step_a(40, bits, HANDLER_LEVELS));
    handler_runs++;
}

/* SIGPROF every 20 us of wall time (a POSIX timer: no thread). */
static int start_signals(timer_t *timer)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGPROF;
    const struct itimerspec every = { { 0, 20000 }, { 0, 20000 } };
    return sigaction(SIGPROF, &sa, NULL) == 0 && timer_create(CLOCK_MONOTONIC, &ev, timer) == 0 &&
           timer_settime(*timer, 0, &every, NULL) == 0;
}
static void *kept[MAX_THREADS][64];
static unsigned long allocated[MAX_THREADS];

/* Every path once; thread `t` (0 without threads) keeps every 4096th block. */
__attribute__((noipa)) void *run_paths(void *arg)
{
    int t = (int)(intptr_t)arg, nkept = 0;
    for (unsigned bits = 0; bits < (1u << k); bits++) {
        void *p = step_a(signals ? 24 : 16 + (size_t)bits, bits, k);
        allocated[t] += p != NULL;
        if ((bits & 4095) == 0 && nkept < 64)
            kept[t][nkept++] = p;
        else
            free(p);
        if (hot)
            free((bits & 1) ? hot_b(16 + (1u << k) + 2) : hot_a(16 + (1u << k) + 1));
    }
    return NULL;
}

/* manystacks [K [THREADS [stall]]]: THREADS > 0 runs every path on that many
 * threads at once (they race to store the same new stacks). "stall" stops the
 * collector (SIGSTOP to $HEAPGEN_COLLECTOR, when set) while the paths run and
 * lets it go on after: a collector starved of CPU, whose stack store cannot
 * take new stacks meanwhile. */
int main(int argc, char **argv)
{
    k = argc > 1 ? atoi(argv[1]) : 18;
    int threads = argc > 2 ? atoi(argv[2]) : 0;
    hot = getenv("MANYSTACKS_HOT") != NULL;
    signals = getenv("MANYSTACKS_SIGNAL") != NULL;
    if (k < 1 || k > 22 || threads < 0 || threads > MAX_THREADS)
        return 2;
    const char *collector = getenv("HEAPGEN_COLLECTOR");
    pid_t stalled = argc > 3 && strcmp(argv[3], "stall") == 0 && collector ? (pid_t)atoi(collector) : 0;
    if (stalled > 0)
        kill(stalled, SIGSTOP);
    timer_t timer;
    if (signals) {
        /* The first malloc sets up glibc's (tcache, under its arena lock)
         * and heapgen's: not in the middle of a handler. */
        free(malloc(24));
        free(malloc(40));
        if (threads != 0 || !start_signals(&timer))
            return 4;
    }
    if (threads == 0) {
        run_paths((void *)0);
    } else {
        pthread_t tid[MAX_THREADS];
        for (int t = 0; t < threads; t++)
            if (pthread_create(&tid[t], NULL, run_paths, (void *)(intptr_t)t) != 0)
                return 3;
        for (int t = 0; t < threads; t++)
            pthread_join(tid[t], NULL);
    }
    if (signals) {
        timer_delete(timer);
        fprintf(stderr, "handler runs %d\n", (int)handler_runs);
    }
    if (stalled > 0)
        kill(stalled, SIGCONT);
    unsigned long total = 0;
    for (int t = 0; t < MAX_THREADS; t++)
        total += allocated[t];
    printf("paths %u threads %d allocated %lu\n", 1u << k, threads, total);
    return 0;
}
