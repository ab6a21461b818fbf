/*
 * gate.c: the CI leak-gate fixture. `gate MODE [STATUS]` runs 8 cycles (one warm-up)
 * and marks a generation after each:
 *   leaky   leak_session keeps 3 x 64-byte blocks per cycle (abandoned, +192 B per cycle)
 *   clean   leak_session allocates the same blocks and frees them
 *   small   leak_bytes keeps one 64-byte block per cycle
 *   big     leak_bytes keeps one 8,192-byte block per cycle
 * It prints a line on stdout, one on stderr, then a printf with no newline that stays in
 * stdio's buffer until exit (stdout is a file in the tests), and exits with STATUS (default 0).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapgen.h"

#define NOINLINE __attribute__((noipa))

struct node { struct node *next; char payload[56]; };   /* 64 bytes */
static struct node *sessions;
void *kept[64];                        /* extern: the stores are not dead */
int clean_mode;

NOINLINE void leak_session(void) {
    for (int i = 0; i < 3; i++) {
        struct node *n = malloc(sizeof *n);
        memset(n, i, sizeof *n);
        n->next = sessions;
        sessions = n;
    }
    if (clean_mode) {
        while (sessions) { struct node *next = sessions->next; free(sessions); sessions = next; }
    }
}

NOINLINE void leak_bytes(int k, size_t n) {
    kept[k] = malloc(n);
    memset(kept[k], k, n);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "leaky";
    int status = argc > 2 ? atoi(argv[2]) : 0;
    clean_mode = strcmp(mode, "clean") == 0;
    printf("gate-fixture: mode %s\n", mode);
    fprintf(stderr, "gate-fixture: stderr line\n");
    HEAPGEN_MARK("heapgen.start");
    for (int k = 1; k <= 8; k++) {
        if (strcmp(mode, "small") == 0) leak_bytes(k, 64);
        else if (strcmp(mode, "big") == 0) leak_bytes(k, 8192);
        else leak_session();
        HEAPGEN_MARK(k == 1 ? "warm-up 1" : "cycle");
    }
    printf("gate-fixture: last words, no newline, status %d", status);
    return status;
}
