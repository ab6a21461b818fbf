/*
 * renamed.c: processes that name themselves (prctl PR_SET_NAME, as
 * Chromium's children and worker pools do) and end before their parent
 * reaps them. A forked child names itself "worker-1", keeps 24 bytes and
 * exits 7; then a forked child execs this program again ("named"), which
 * names itself "worker-2", keeps 24 bytes and exits 9. The parent waits
 * 700 ms before each waitpid, names itself too, prints "child 7" and
 * "exec'd child 9", and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile kept;

static int reap_late(pid_t pid) {
    usleep(700 * 1000);     /* the collector sees the exit long before this report */
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "named") == 0) {
        prctl(PR_SET_NAME, "worker-2");
        kept = malloc(24);
        return 9;
    }
    pid_t p = fork();
    if (p == 0) {
        prctl(PR_SET_NAME, "worker-1");
        kept = malloc(24);
        _exit(7);
    }
    printf("child %d\n", reap_late(p));
    fflush(stdout);
    p = fork();
    if (p == 0) {
        execl("/proc/self/exe", "renamed", "named", (char *)NULL);
        _exit(127);
    }
    printf("exec'd child %d\n", reap_late(p));
    prctl(PR_SET_NAME, "parent");
    return 0;
}
