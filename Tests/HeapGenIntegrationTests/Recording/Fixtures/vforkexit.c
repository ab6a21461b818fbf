/*
 * vforkexit.c: the classic vfork mistake. The child's exec fails and it calls
 * exit(7), not _exit: atexit handlers (heapgen's exit scan among them) run in
 * the child, which shares its suspended parent's memory. Keeps 8 × 40 B,
 * prints "child 7".
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile kept[8];

int main(void) {
    for (int i = 0; i < 8; i++) kept[i] = malloc(40);
    pid_t p = vfork();
    if (p == 0) {
        execl("/nonexistent/program", "program", (char *)NULL);
        exit(7);
    }
    int st = 0;
    waitpid(p, &st, 0);
    printf("child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
