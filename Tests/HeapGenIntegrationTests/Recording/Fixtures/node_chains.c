/*
 * node_chains.c: the collector's call-tree reader (hg_read_stack_flags in
 * Sources/CHeapGenCollector/segment.c, compiled in with this file) on a
 * hand-made arena: valid chains, and every kind of malformed one a target
 * could write (cycles, parents out of range or not below their child, depths
 * that do not count down, flags that disagree, wrong tags). Prints one line
 * per case: `name count truncated frames...`; a malformed chain reads as 0.
 */
#include <stdio.h>
#include <string.h>
#include "CHeapGenCollector.h"

static uint64_t arena[4096];          /* 32 KiB, 8-byte aligned: refs are word indexes */
static hg_segment seg;

/* Writes a node blob at ref (word index). */
static void node(uint32_t ref, uint32_t depth_flags, uint32_t parent, uint64_t pc)
{
    hg_blob_hdr h = { depth_flags, HG_BLOB_NODE };
    hg_node n = { parent, 0xdeadbeef, pc };
    memcpy(&arena[ref], &h, sizeof h);
    memcpy(&arena[ref + 1], &n, sizeof n);
}

static void show(const char *name, uint32_t ref, uint32_t max)
{
    uint64_t frames[300];
    uint32_t truncated = 7;
    uint32_t n = hg_read_stack_flags(&seg, ref, frames, max, &truncated);
    printf("%s %u %u", name, n, n ? truncated : 0);
    for (uint32_t i = 0; i < n && i < 4; i++)
        printf(" %llx", (unsigned long long)frames[i]);
    printf("\n");
}

int main(void)
{
    seg.arena = (const uint8_t *)arena;
    seg.arena_size = sizeof arena;
    seg.max_frames = 64;

    /* valid: root 0x100 (ref 3) <- 0x200 (ref 6) <- 0x300 (ref 9) */
    node(3, 1, 0, 0x100);
    node(6, 2, 3, 0x200);
    node(9, 3, 6, 0x300);
    show("valid", 9, 256);
    show("valid-inner", 6, 256);
    show("buffer-too-small", 9, 2);

    /* valid and truncated: every node flagged */
    node(12, 1 | HG_NODE_TRUNCATED, 0, 0x111);
    node(15, 2 | HG_NODE_TRUNCATED, 12, 0x222);
    show("truncated", 15, 256);

    node(18, 2 | HG_NODE_TRUNCATED, 3, 0x333);          /* flagged child of an unflagged root */
    show("flags-disagree", 18, 256);
    node(21, 2 | 0x40000000u, 3, 0x444);               /* unknown flag */
    show("unknown-flag", 21, 256);

    node(24, 2, 24, 0x555);                            /* parent is itself */
    show("self-cycle", 24, 256);
    node(27, 2, 30, 0x666);                            /* A -> B -> A: B above A */
    node(30, 3, 27, 0x777);
    show("two-cycle", 30, 256);
    show("parent-above", 27, 256);
    node(33, 2, 0xfffffff0u, 0x888);                   /* parent far outside */
    show("parent-out-of-range", 33, 256);
    node(36, 3, 3, 0x999);                             /* depth jumps 1 -> 3 */
    show("depth-skips", 36, 256);
    node(39, 1, 3, 0xaaa);                             /* root with a parent */
    show("root-with-parent", 39, 256);
    node(42, 2, 0, 0xbbb);                             /* depth 2 without parent */
    show("missing-parent", 42, 256);
    node(45, 0, 0, 0xccc);
    show("depth-zero", 45, 256);

    hg_blob_hdr s = { 6, HG_BLOB_STRING };             /* a string, not a node */
    memcpy(&arena[48], &s, sizeof s);
    memcpy(&arena[49], "hello", 6);
    show("string-blob", 48, 256);
    node(51, 2, 48, 0xddd);                            /* parent is the string */
    show("parent-not-node", 51, 256);

    show("ref-zero", 0, 256);
    show("ref-past-end", 4095, 256);                  /* the node would straddle the end */
    show("ref-far", 0x7fffffffu, 256);

    /* A chain of 64 (the segment's max_frames) reads; 65 does not. */
    uint32_t ref = 100, parent = 0;
    for (uint32_t d = 1; d <= 65; d++, ref += 3) {
        node(ref, d, parent, 0x1000 + d);
        parent = ref;
    }
    show("depth-64", 100 + 63 * 3, 256);
    show("depth-65", 100 + 64 * 3, 256);
    return 0;
}
