/*
 * nofdfork.c: with every descriptor it may have in use (RLIMIT_NOFILE 64,
 * the rest opened on /dev/null), the program forks a child that allocates
 * 32 bytes and exits 3; then frees its descriptors and forks one more that
 * exits 4. Prints "child 3", "child 4". The first child cannot be traced
 * (no socket can be made for it), the second can.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile kept;

static int child(int status) {
    pid_t p = fork();
    if (p == 0) {
        kept = malloc(32);
        _exit(status);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void) {
    struct rlimit rl = { 64, 64 };
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 2;
    int fds[64], n = 0;
    for (int fd; n < 64 && (fd = open("/dev/null", O_RDONLY)) >= 0;) fds[n++] = fd;
    int first = child(3);
    for (int i = 0; i < n; i++) close(fds[i]);
    int second = child(4);
    printf("child %d\nchild %d\n", first, second);
    return 0;
}
