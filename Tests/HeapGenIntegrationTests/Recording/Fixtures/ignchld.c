/*
 * ignchld.c: a parent that ignores SIGCHLD, so the kernel reaps its children at once and
 * nobody can wait for them (inetd-style servers, double-forked daemons). Five children:
 * exit(5), _exit(6), return 7 from main, one killed by SIGKILL, and quick_exit(8). The
 * parent outlives them and prints one line.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void *volatile sink;

int main(void) {
    signal(SIGCHLD, SIG_IGN);
    for (int i = 0; i < 5; i++) {
        if (fork() == 0) {
            sink = malloc(100 + (size_t)i);
            if (i == 0) exit(5);
            if (i == 1) _exit(6);
            if (i == 3) raise(SIGKILL);
            if (i == 4) quick_exit(8);
            return 7;
        }
    }
    struct timespec t = {0, 400 * 1000 * 1000};
    nanosleep(&t, NULL);
    printf("parent done\n");
    return 0;
}
