/* status.c: prints a line on stdout and one on stderr, leaks one block per cycle, exits with
 * argv[1]; `status signal N` kills itself with signal N instead. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapgen.h"

void *kept[100];

__attribute__((noipa)) void leak_one(int k) { kept[k] = malloc(24); memset(kept[k], 0, 24); }

int main(int argc, char **argv) {
    int status = argc > 1 ? atoi(argv[1]) : 0;
    int sig = argc > 2 && strcmp(argv[1], "signal") == 0 ? atoi(argv[2]) : 0;
    HEAPGEN_MARK("heapgen.start");
    for (int k = 1; k <= 6; k++) {
        leak_one(k);
        HEAPGEN_MARK("cycle");
    }
    printf("status-fixture: stdout line, exiting with %d\n", status);
    fflush(stdout);
    fprintf(stderr, "status-fixture: stderr line\n");
    if (sig) {
        signal(sig, SIG_DFL);
        raise(sig);
    }
    return status;
}
