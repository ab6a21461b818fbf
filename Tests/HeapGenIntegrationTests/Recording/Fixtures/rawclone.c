/* Issue 7, item 5: a child made by a raw clone(SIGCHLD) system call (no
 * fork handlers run) allocates 1,000 blocks of 33 bytes and frees 400;
 * the parent allocates 10 of 10 bytes. None of the child's may show in the
 * parent's trace. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

void *volatile mine[10];
void *volatile theirs[1000];

int main(void)
{
    for (int i = 0; i < 10; i++)
        mine[i] = malloc(10);
    long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
        for (int i = 0; i < 1000; i++)
            theirs[i] = malloc(33);
        for (int i = 0; i < 400; i++)
            free(theirs[i]);
        syscall(SYS_exit_group, 0);
    }
    int st = 0;
    waitpid((pid_t)pid, &st, 0);
    char line[64];
    int n = snprintf(line, sizeof line, "child status %d\n", st);
    if (write(1, line, (size_t)n) != n)
        return 1;
    return 0;
}
