/*
 * scankill.c: a parent kills its child while the child waits for its exit
 * scan, as a process pool terminating its workers does. The child fills
 * 400 MB (so that the scan takes a while), tells the parent through a pipe,
 * and leaves with _exit(0); the parent waits 50 ms after the word, then
 * SIGKILLs it. Prints "child killed by 9".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    int fds[2];
    if (pipe(fds) != 0) return 2;
    pid_t child = fork();
    if (child == 0) {
        enum { BLOCKS = 400, SIZE = 1 << 20 };
        static void *kept[BLOCKS];
        for (int i = 0; i < BLOCKS; i++) {
            kept[i] = malloc(SIZE);
            memset(kept[i], i, SIZE);
        }
        (void)write(fds[1], "x", 1);
        _exit(0);
    }
    char c;
    if (read(fds[0], &c, 1) != 1) return 3;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    kill(child, SIGKILL);
    int st = 0;
    waitpid(child, &st, 0);
    printf("child killed by %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return 0;
}
