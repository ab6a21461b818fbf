// daemon.c: what a daemon does with the heap it inherits. The parent keeps
// 1,000 blocks of 48 bytes (and frees 10 others), forks; the child frees the
// first 990 inherited blocks (keeps 10), allocates 3 of 64 bytes and keeps
// them; the parent waits for it and exits. No stdio before the fork, so the parent's live heap
// at the fork is exactly the 1,000 blocks. With argv[1] "detach", as a daemon does, the
// parent leaves at once (_exit, no output) and the child does its part once it is orphaned.
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *kept[1000];

__attribute__((noinline)) static void make_session(int i) { kept[i] = malloc(48); }

int main(int argc, char **argv) {
    const int detach = argc > 1 && argv[1][0] == 'd';
    const pid_t parent = getpid();
    for (int i = 0; i < 1000; i++) make_session(i);
    for (int i = 0; i < 10; i++) {
        void *volatile p = malloc(500);
        free(p);
    }
    pid_t pid = fork();
    if (pid > 0 && detach) _exit(0);
    if (pid == 0) {
        while (detach && getppid() == parent) usleep(1000);
        for (int i = 0; i < 990; i++) free(kept[i]);
        void *volatile mine[3];
        for (int i = 0; i < 3; i++) mine[i] = malloc(64);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "failed");
    return 0;
}
