/*
 * errnokeep.c: malloc and free leave errno alone, even when the shim has
 * to wait for the collector and a signal interrupts its sleep.
 *
 * errnokeep ring|arena: stops the collector ($HEAPGEN_COLLECTOR, when set)
 * for 400 ms while a timer signal (an empty SIGALRM handler, no SA_RESTART)
 * arrives every 200 us, and allocates meanwhile:
 *   ring   20,000 malloc/free pairs from one place (a small ring fills, and
 *          the shim waits for room);
 *   arena  2^16 blocks from as many distinct call stacks (a small stack
 *          store fills, and the shim waits for the collector to release a
 *          half).
 * Before each call errno is set to a value no call returns; after it,
 * errno must still hold it (free must not change errno: POSIX 2024,
 * glibc; malloc, where it succeeds, does not change it in glibc). Prints
 * how many calls changed it, and exits 1 if any did.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MARKER 4242

static unsigned long changed, calls;
void *volatile sink;    /* keeps the compiler from pairing malloc and free away */
static volatile unsigned long ticks;

static void on_alarm(int sig)
{
    (void)sig;
    ticks++;
}

static void check(void)
{
    calls++;
    if (errno != MARKER)
        changed++;
    errno = MARKER;
}

__attribute__((noipa)) static void *step_b(unsigned bits, int depth);

/* A path of `depth` calls chosen by the bits: a distinct stack per value. */
__attribute__((noipa)) static void *step_a(unsigned bits, int depth)
{
    void *p = depth == 0 ? malloc(16) : (bits & 1) ? step_b(bits >> 1, depth - 1) : step_a(bits >> 1, depth - 1);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

__attribute__((noipa)) static void *step_b(unsigned bits, int depth)
{
    void *p = depth == 0 ? malloc(16) : (bits & 1) ? step_b(bits >> 1, depth - 1) : step_a(bits >> 1, depth - 1);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}

/* Lets the collector go on after 400 ms (SIGALRM blocked here, so the
 * ticks interrupt the allocating thread). */
static void *release_later(void *arg)
{
    pid_t collector = (pid_t)(intptr_t)arg;
    struct timespec ts = { 0, 400 * 1000 * 1000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    kill(collector, SIGCONT);
    return NULL;
}

int main(int argc, char **argv)
{
    const int arena = argc > 1 && strcmp(argv[1], "arena") == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;      /* no SA_RESTART: sleeps return EINTR */
    sigaction(SIGALRM, &sa, NULL);

    sigset_t alarm_only;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alarm_only, NULL);   /* inherited by the helper */
    const char *collector = getenv("HEAPGEN_COLLECTOR");
    pthread_t helper;
    int stalled = collector != NULL && atoi(collector) > 0;
    if (stalled) {
        kill((pid_t)atoi(collector), SIGSTOP);
        pthread_create(&helper, NULL, release_later, (void *)(intptr_t)atoi(collector));
    }
    pthread_sigmask(SIG_UNBLOCK, &alarm_only, NULL);

    struct itimerval every = { { 0, 200 }, { 0, 200 } };
    setitimer(ITIMER_REAL, &every, NULL);
    errno = MARKER;
    if (arena) {
        for (unsigned bits = 0; bits < (1u << 16); bits++) {
            void *p = step_a(bits, 16);
            check();
            free(p);
            check();
        }
    } else {
        for (int i = 0; i < 20000; i++) {
            void *p = malloc(32);
            sink = p;
            check();
            free(p);
            check();
        }
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    if (stalled)
        pthread_join(helper, NULL);
    printf("%s: errno changed by %lu of %lu calls\n", arena ? "arena" : "ring", changed, calls);
    return changed != 0;
}
