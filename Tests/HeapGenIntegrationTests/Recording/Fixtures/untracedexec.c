/*
 * untracedexec.c: a forked child first fails to exec /nonexistent/program
 * (and goes on: one malloc of 10 bytes), then execs argv[1] (/bin/true)
 * with an environment of its own, PATH alone: no preload library, so the
 * program runs untraced, and is gone at once. Then a vfork child (as a
 * shell runs a command) execs it the same way, and posix_spawn starts it
 * so too (its exec is inside the C library), and once more with the
 * program's own environment (traced). The parent prints "child STATUS",
 * "vfork child STATUS", "spawned STATUS", "spawned traced STATUS" and
 * exits 0.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile kept;
extern char **environ;

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    char *const env[] = { "PATH=/usr/bin:/bin", NULL };
    pid_t p = fork();
    if (p == 0) {
        execl("/nonexistent/program", "program", (char *)NULL);
        kept = malloc(10);
        execle(argv[1], "quick", (char *)NULL, env);
        _exit(127);
    }
    int st = 0;
    waitpid(p, &st, 0);
    printf("child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    pid_t v = vfork();
    if (v == 0) {
        execle(argv[1], "quick", (char *)NULL, env);
        _exit(127);
    }
    waitpid(v, &st, 0);
    printf("vfork child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    char *const args[] = { "quick", NULL };
    pid_t s = 0;
    if (posix_spawn(&s, argv[1], NULL, NULL, args, env) != 0) return 3;
    waitpid(s, &st, 0);
    printf("spawned %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    if (posix_spawn(&s, argv[1], NULL, NULL, args, environ) != 0) return 4;
    waitpid(s, &st, 0);
    printf("spawned traced %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
}
