/*
 * pidns.c: a program that starts a PID namespace of its own, as unshare(1),
 * bwrap and container runtimes do, and runs two processes in it.
 *
 * The program forks "init" (pid 1 in the new namespace), which keeps
 * 100 × 48 B, forks a grandchild (pid 2 there) that keeps 200 × 24 B and
 * exits 7, reaps it, and exits 3. The program then keeps 10 × 16 B and
 * exits 0 if every status and pid was as expected. Output: one line.
 * With "nested" as argv[1], all that runs in a process that is itself pid 1
 * of a namespace: the nested namespace's init then has its parent's pid
 * number, 1. Exit 2: no namespace could be made (neither as root nor in a
 * user namespace).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile kept[512];

static void keep(int n, size_t size) {
    for (int i = 0; i < n; i++) kept[i] = malloc(size);
}

static int run_init(void) {
    keep(100, 48);
    pid_t g = fork();
    if (g == 0) {
        keep(200, 24);
        _exit(getpid() == 2 ? 7 : 8);
    }
    int st = 0;
    if (g < 0 || waitpid(g, &st, 0) != g) return 9;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 7) return 10;
    return getpid() == 1 ? 3 : 4;
}

static int new_namespace(void) {
    if (unshare(CLONE_NEWPID) != 0 && unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0) {
        perror("pidns: unshare");
        return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "nested") == 0) {
        if (!new_namespace()) return 2;
        pid_t outer = fork();
        if (outer != 0) {
            int st = 0;
            if (outer < 0 || waitpid(outer, &st, 0) != outer) return 6;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
        }
        if (getpid() != 1) return 11;
    }
    if (!new_namespace()) return 2;
    pid_t init = fork();
    if (init == 0) _exit(run_init());
    int st = 0;
    if (init < 0 || waitpid(init, &st, 0) != init) return 5;
    keep(10, 16);
    int ok = WIFEXITED(st) && WEXITSTATUS(st) == 3;
    printf("namespace init exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return ok ? 0 : 1;
}
