/*
 * rawreap.c: a parent that reaps its children with the raw wait4 system call,
 * as Go's runtime does, so no C library call tells heapgen how they ended.
 * It forks 4 children, 100 ms apart; each loses a 4,242-byte block and exits
 * normally. The parent keeps nothing and exits 0.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

__attribute__((noipa)) static void lose(void) {
    void *volatile block = malloc(4242);
    memset(block, 1, 4242);
}

int main(void) {
    for (int i = 0; i < 4; i++) {
        pid_t child = fork();
        if (child == 0) {
            lose();
            exit(0);
        }
        int status = 0;
        if (syscall(SYS_wait4, child, &status, 0, NULL) != child || !WIFEXITED(status)) return 3;
        struct timespec pause = { 0, 100000000 };
        nanosleep(&pause, NULL);
    }
    return 0;
}
