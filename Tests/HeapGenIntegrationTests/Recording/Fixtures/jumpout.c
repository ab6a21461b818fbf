/* A SIGALRM handler (every 300 µs) siglongjmps back into main's loop, which
 * marks generations as fast as it can: each jump may land inside the shim's
 * heapgen_mark, between a ring claim and its publication. Nothing allocates
 * while the timer runs, so without heapgen (where the mark is a no-op) every
 * jump is safe. After 2,000 jumps: 1,000 malloc/free pairs of 777 bytes and a
 * last mark. Prints "jumps J marks M pairs 1000". */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include "heapgen.h"

static sigjmp_buf back;
static volatile sig_atomic_t jumps;

static void on_alarm(int sig)
{
    (void)sig;
    jumps++;
    siglongjmp(back, 1);
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = { { 0, 300 }, { 0, 300 } };
    setitimer(ITIMER_REAL, &every, NULL);
    static volatile unsigned long marks;
    sigsetjmp(back, 1);
    while (jumps < 2000) {
        HEAPGEN_MARK("tick");
        marks++;
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    for (int i = 0; i < 1000; i++) {
        void *volatile p = malloc(777);
        free(p);
    }
    HEAPGEN_MARK("end");
    printf("jumps %d marks %lu pairs 1000\n", (int)jumps, marks);
    return 0;
}
