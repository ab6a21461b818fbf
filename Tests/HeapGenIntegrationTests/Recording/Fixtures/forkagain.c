/* forkagain: forks twice, and the second child forks again, with the heap
 * changed (reallocs, frees, new blocks) between the forks, so each child
 * inherits a different live heap: the collector makes its map of the
 * parent's heap at the first fork (from the trace so far) and keeps it up to
 * date after. Nothing is printed before the forks: no stdio buffer is live.
 *   fork 1, child A: 10 x 64 B + 70 x 32 B            =  80 blocks, 2,880 B
 *   fork 2, child B: 10 x 64 + 40 x 32 + 50 x 16 B     = 100 blocks, 2,720 B
 *   child B's fork, grandchild C: B's + 5 x 8 B        = 105 blocks, 2,760 B */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Not static: gcc may drop a malloc whose result only a static nobody reads holds. */
void *a[100], *b[50], *c[5];

static void wait_for(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0) {}
}

int main(void)
{
    for (int i = 0; i < 100; i++) a[i] = malloc(32);
    for (int i = 0; i < 10; i++) a[i] = realloc(a[i], 64);
    for (int i = 80; i < 100; i++) free(a[i]);

    pid_t pid = fork();
    if (pid == 0) _exit(0);
    wait_for(pid);

    for (int i = 0; i < 50; i++) b[i] = malloc(16);
    for (int i = 20; i < 50; i++) free(a[i]);

    pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 5; i++) c[i] = malloc(8);
        pid_t grandchild = fork();
        if (grandchild == 0) _exit(0);
        wait_for(grandchild);
        _exit(0);
    }
    wait_for(pid);
    return 0;
}
