/*
 * deeprec.c: an abandoned site whose stack is deeper than heapgen's default
 * frame limit (128), and a shallow one.
 *
 * Marks: "start", then "cycle" after each of 6 cycles. Every cycle appends
 * one 48-byte node allocated 200 calls deep (descend -> ... -> descend ->
 * malloc) and one 40-byte node allocated just below main (shallow_keep) to
 * global lists: both sites grow by one block per cycle and stay reachable.
 */
#include <stdlib.h>
#include <string.h>
#include "heapgen.h"

struct node {
    struct node *next;
    char payload[40];
};

struct small {
    struct small *next;
    char payload[32];
};

static struct node *deep_list;
static struct small *shallow_list;
volatile int depth_seen;

__attribute__((noipa)) struct node *descend(int depth)
{
    struct node *n = depth == 0 ? malloc(48) : descend(depth - 1);
    depth_seen++;   /* not a tail call */
    return n;
}

__attribute__((noipa)) void deep_keep(void)
{
    struct node *n = descend(200);
    memset(n->payload, 0x22, 8);
    n->next = deep_list;
    deep_list = n;
}

__attribute__((noipa)) void shallow_keep(void)
{
    struct small *n = malloc(sizeof *n);   /* 40 bytes */
    memset(n->payload, 0x33, 8);
    n->next = shallow_list;
    shallow_list = n;
}

int main(void)
{
    HEAPGEN_MARK("start");
    for (int c = 1; c <= 6; c++) {
        deep_keep();
        shallow_keep();
        HEAPGEN_MARK("cycle");
    }
    return 0;
}
