/*
 * deepsignal.c: a 50 µs SIGPROF timer whose handler mallocs 7,777-byte
 * blocks, while the main thread mallocs and frees small blocks 100 frames
 * deep (`deep`, not a tail call). A handler that interrupts the shim is a
 * call nested in it: its stack (on_prof, the signal frame, 100 x deep,
 * main) must be as complete as any other. Prints how many blocks the
 * handler allocated.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static void *volatile sink;
static volatile sig_atomic_t handled;

static void on_prof(int sig)
{
    (void)sig;
    void *p = malloc(7777);
    sink = p;
    free(p);
    handled++;
}

__attribute__((noipa)) static long deep(int d)
{
    volatile int pad = d;
    if (d == 0) {
        long s = 0;
        for (int i = 0; i < 400000; i++) {
            void *p = malloc(32 + (i & 63));
            sink = p;
            s += (long)((size_t)p & 1);
            free(p);
        }
        return s;
    }
    long r = deep(d - 1);
    return r + pad;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = { { 0, 50 }, { 0, 50 } };
    setitimer(ITIMER_PROF, &it, NULL);
    long r = deep(100);
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_PROF, &off, NULL);
    printf("%d %ld\n", (int)handled, r >= 0 ? 1L : 0L);
    return 0;
}
