/* sigstorm.c — a SIGALRM storm while the main thread allocates.
 *
 * An interval timer (ITIMER_REAL, 50 µs) fires a handler that mallocs a
 * 3,333-byte block and frees the block it made 8 signals earlier (a ring of
 * 8 slots), counting both, until it has allocated HANDLER_ALLOCS (5,000)
 * times. Meanwhile the main thread mallocs and at once frees blocks of 8-24
 * bytes in a loop (plain C, so most signals land while the main thread is
 * inside the allocator or the preload library around it).
 *
 * glibc's malloc is not async-signal-safe; this stays correct because the
 * two never share state: after the warm-up, main's blocks (one 32-byte chunk
 * class, at most one live) come from and go back to the thread cache only,
 * and the handler's 3,333-byte blocks never use the thread cache.
 *
 * Then the timer stops, main frees the handler's remaining blocks, and
 * prints its counts:
 *   handler allocs A frees F
 *   main frees of handler blocks R
 *   main allocs M frees N
 * Exit 0; 2 if an allocation failed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define HANDLER_ALLOCS 5000
#define HANDLER_SIZE   3333
#define RING           8

static void *volatile ring[RING];
static volatile sig_atomic_t handler_allocs, handler_frees, failed;

static void on_alarm(int sig)
{
    (void)sig;
    if (handler_allocs >= HANDLER_ALLOCS) return;
    int slot = handler_allocs % RING;
    if (ring[slot] != NULL) {
        free(ring[slot]);
        handler_frees++;
    }
    void *p = malloc(HANDLER_SIZE);
    if (p == NULL) { failed = 1; return; }
    memset(p, 0x5a, 16);
    ring[slot] = p;
    handler_allocs++;
}

int main(void)
{
    free(malloc(24));       /* warm-up: the thread cache exists, its bin is filled */

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (sigaction(SIGALRM, &sa, NULL) != 0) return 2;
    struct itimerval it = { { 0, 50 }, { 0, 50 } };
    if (setitimer(ITIMER_REAL, &it, NULL) != 0) return 2;

    unsigned long main_allocs = 0, main_frees = 0;
    unsigned x = 12345;
    while (handler_allocs < HANDLER_ALLOCS) {
        x ^= x << 13; x ^= x >> 17; x ^= x << 5;
        char *p = malloc(8 + x % 17);
        if (p == NULL) return 2;
        main_allocs++;
        p[0] = (char)x;
        free(p);
        main_frees++;
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    unsigned long rest = 0;
    for (int i = 0; i < RING; i++)
        if (ring[i] != NULL) { free(ring[i]); rest++; }
    if (failed) return 2;
    printf("handler allocs %d frees %d\n", (int)handler_allocs, (int)handler_frees);
    printf("main frees of handler blocks %lu\n", rest);
    printf("main allocs %lu frees %lu\n", main_allocs, main_frees);
    return 0;
}
