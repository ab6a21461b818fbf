/*
 * chrootexec.c: a program that changes its root to argv[2] (the test puts a
 * copy of this program there as /child, with the libraries it loads) and
 * runs /child in it, as build tools and container runtimes do. Neither
 * heapgen's library nor its socket is inside that root.
 *
 *   fork   chroot, fork; the child execs /child, the parent waits for it,
 *          keeps 3 × 40 B (keep_after, its first allocations: the shim
 *          meets the program's modules only now) and prints the status
 *   exec   chroot, then exec /child in place of itself
 *   spawn  chroot, posix_spawn /child, wait for it and print its status
 *   child  (inside the root) prints "child ran", keeps 5 × 8 B
 *
 * Natively nothing goes to stderr. Exit 2: no chroot, neither as root nor
 * in a user namespace.
 */
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile kept[8];

__attribute__((noinline)) static void keep_after(void) {
    for (int i = 0; i < 3; i++) kept[i] = malloc(40);
}

static int enter_root(const char *root) {
    if (chroot(root) != 0) {
        if (unshare(CLONE_NEWUSER) != 0 || chroot(root) != 0) return -1;
    }
    return chdir("/");
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        for (int i = 0; i < 5; i++) kept[i] = malloc(8);
        printf("child ran\n");
        return 0;
    }
    if (argc < 3) return 64;
    if (enter_root(argv[2]) != 0) return 2;
    char *child_argv[] = { "child", "child", NULL };
    if (strcmp(argv[1], "exec") == 0) {
        execv("/child", child_argv);
        perror("execv /child");
        return 3;
    }
    pid_t c = -1;
    if (strcmp(argv[1], "spawn") == 0) {
        extern char **environ;
        if (posix_spawn(&c, "/child", NULL, NULL, child_argv, environ) != 0) return 5;
    } else if ((c = fork()) == 0) {
        execv("/child", child_argv);
        perror("execv /child");
        _exit(3);
    }
    int st = 0;
    if (c < 0 || waitpid(c, &st, 0) != c) return 4;
    if (strcmp(argv[1], "spawn") == 0) {
        printf("spawned status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return 0;
    }
    keep_after();
    printf("child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
