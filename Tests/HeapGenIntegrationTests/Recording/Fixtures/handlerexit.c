/*
 * handlerexit.c: a timer's handler calls _exit(0) (async-signal-safe, the
 * usual way out of a handler) 20 ms in, while main keeps asking heapgen
 * {"op":"ping"}: heapgen_control holds its lock while it waits for each
 * answer, so the handler almost always interrupts a thread that holds it.
 * Keeps 4 × 32 B.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include "heapgen.h"

static void *volatile kept[4];

static void on_alarm(int sig) {
    (void)sig;
    _exit(0);
}

int main(void) {
    for (int i = 0; i < 4; i++) kept[i] = malloc(32);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 0}, {0, 20000}};
    setitimer(ITIMER_REAL, &it, NULL);
    char response[256];
    for (;;) heapgen_control("{\"op\":\"ping\"}", response, sizeof response);
}
