/* Issue 7, item 16: `aslimit LIMIT_MIB TARGET_MIB` sets RLIMIT_AS and execs
 * itself as the worker, which allocates 1 MiB blocks up to TARGET_MIB and
 * says how many it got. The segment heapgen maps into it must leave room. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "worker") == 0) {
        long target = atol(argv[3]);
        long got = 0;
        void **blocks = calloc((size_t)target, sizeof *blocks);
        for (long i = 0; i < target && blocks; i++) {
            blocks[i] = malloc(1 << 20);
            if (blocks[i] == NULL)
                break;
            got++;
        }
        printf("allocated %ld of %ld MiB under a %s MiB address-space limit\n", got, target, argv[2]);
        for (long i = 0; i < got; i++)
            free(blocks[i]);
        free(blocks);
        return 0;
    }
    if (argc != 3)
        return 2;
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = (rlim_t)atol(argv[1]) << 20;
    if (setrlimit(RLIMIT_AS, &rl) != 0)
        return 3;
    execl("/proc/self/exe", argv[0], "worker", argv[1], argv[2], (char *)NULL);
    return 127;
}
