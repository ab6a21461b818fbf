/* A program that runs for a while without marking its own cycles, then forks a child that
 * runs as long: `timedforker MS` allocates a block every 10 ms for MS milliseconds in the
 * parent, then in a forked child, then in the parent again while it waits. Used with
 * `heapgen record --mark-every` behind `env` (an exec) to check that the collector's timer
 * marks reach the exec'd program and its forked child. Prints one line per process. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Allocates (and keeps) one small block every 10 ms for `ms` milliseconds. */
static void busy(long ms) {
    struct timespec ten = {0, 10 * 1000 * 1000};
    for (long t = 0; t < ms; t += 10) {
        void *volatile p = malloc(32);
        (void)p;
        nanosleep(&ten, NULL);
    }
}

int main(int argc, char **argv) {
    long ms = argc > 1 ? atol(argv[1]) : 500;
    busy(ms);
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) return 2;
    if (child == 0) {
        busy(ms);
        printf("child done\n");
        return 0;
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child) return 3;
    printf("parent done, child status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
