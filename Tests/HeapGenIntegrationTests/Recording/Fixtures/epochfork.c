/* epochfork: a block kept from the start, then 2^15 distinct stacks (a call
 * tree of ~98 k nodes: with HEAPGEN_ARENA_MB=2 the shim's arena goes through
 * several epochs, and the half that held the first block's stack is written
 * over), then a second kept block, then a fork. The child inherits both
 * blocks and frees them: its trace must name each one's stack (keep_early,
 * keep_late), the early one read from an epoch long released. Prints one
 * line per process, the same with and without heapgen. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* Not static: gcc may drop a malloc whose result only a static nobody reads holds. */
void *early, *late;
volatile unsigned long steps;

__attribute__((noipa)) void *down_b(unsigned bits, int depth);

__attribute__((noipa)) void *down_a(unsigned bits, int depth)
{
    void *p = depth == 0 ? malloc(8) : (bits & 1) ? down_b(bits >> 1, depth - 1) : down_a(bits >> 1, depth - 1);
    steps++;
    return p;
}

__attribute__((noipa)) void *down_b(unsigned bits, int depth)
{
    void *p = depth == 0 ? malloc(8) : (bits & 1) ? down_b(bits >> 1, depth - 1) : down_a(bits >> 1, depth - 1);
    steps += 2;
    return p;
}

__attribute__((noipa)) void keep_early(void) { early = malloc(777); }
__attribute__((noipa)) void keep_late(void) { late = malloc(555); }

int main(void)
{
    keep_early();
    for (unsigned bits = 0; bits < (1u << 15); bits++)
        free(down_a(bits, 15));
    keep_late();
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        free(early);
        free(late);
        printf("child freed both\n");
        return 0;
    }
    int status;
    while (waitpid(pid, &status, 0) < 0) {}
    printf("parent done\n");
    free(early);
    free(late);
    return 0;
}
