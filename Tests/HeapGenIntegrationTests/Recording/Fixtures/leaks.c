/*
 * leaks.c: a leak and an abandoned list, for heapgen record --leaks.
 *
 * Marks: "start", then "cycle" after each of 6 cycles. Every cycle:
 *   - lose_block (unless argv[1] is "noleak"): 64 bytes whose only pointer is
 *     overwritten: unreachable at exit (leaked);
 *   - keep_node: a 32-byte node appended to a global linked list: still
 *     reachable at exit (abandoned, not leaked).
 * With "nodump" as argv[1] or argv[2], it first makes itself non-dumpable, as
 * agents that hold keys do: only root may then read its memory. With
 * "_exit", it ends with _exit(0) (no exit handlers run), else returns.
 * Nothing else allocates: no stdio.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "heapgen.h"

struct node {
    struct node *next;
    char payload[24];
};

static struct node *head;
/* Where the lost block's pointer is kept for a moment: a global, so -O2 keeps the malloc. */
void *volatile sink;

__attribute__((noipa)) void lose_block(void) {
    void *volatile p = malloc(64); /* LOST */
    memset(p, 0x5a, 64);
    sink = p;
    p = NULL;
    sink = NULL;
}

__attribute__((noipa)) void keep_node(void) {
    struct node *n = malloc(sizeof *n); /* KEPT */
    memset(n->payload, 0x11, sizeof n->payload);
    n->next = head;
    head = n;
}

/* Overwrites the stack below main, where a lost pointer may linger. */
__attribute__((noipa)) void scrub(void) {
    volatile char junk[4096];
    memset((char *)junk, 0, sizeof junk);
}

int main(int argc, char **argv) {
    int leak = !(argc > 1 && strcmp(argv[1], "noleak") == 0);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "nodump") == 0) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    HEAPGEN_MARK("start");
    for (int c = 1; c <= 6; c++) {
        if (leak) lose_block();
        keep_node();
        HEAPGEN_MARK("cycle");
    }
    scrub();
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "_exit") == 0) _exit(0);
    return 0;
}
