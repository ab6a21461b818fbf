/* Signal handlers on an alternate stack (sigaltstack, SA_ONSTACK): a 200 µs
 * SIGALRM timer whose handler mallocs 4,321-byte blocks through in_handler()
 * (3,000 of them, freed through a ring of 8) while main mallocs and frees
 * 24-byte blocks. Prints the handler's allocation count. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t hits;
static void *ring[8];

static __attribute__((noinline)) void *in_handler(size_t n)
{
    void *p = malloc(n);
    __asm__ volatile("" : : "r"(p) : "memory");     /* no tail call */
    return p;
}

static void on_alarm(int sig)
{
    (void)sig;
    free(ring[hits % 8]);
    ring[hits % 8] = in_handler(4321);
    hits++;
}

int main(void)
{
    stack_t ss = { .ss_sp = malloc(65536), .ss_size = 65536, .ss_flags = 0 };
    if (ss.ss_sp == NULL || sigaltstack(&ss, NULL) != 0) return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_ONSTACK | SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = { { 0, 200 }, { 0, 200 } };
    setitimer(ITIMER_REAL, &every, NULL);
    while (hits < 3000) {
        void *p = malloc(24);
        __asm__ volatile("" : : "r"(p) : "memory");
        free(p);
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    printf("%d\n", (int)hits);
    return 0;
}
