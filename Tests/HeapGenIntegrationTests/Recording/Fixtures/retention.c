/* Fixture for the reference graph (--retention, --retention-at): a named
 * global list of clients, each owning a buffer; one client list dropped (its
 * blocks unreachable, their edges kept). Prints what the test checks against:
 * the offsets of the fields and the addresses of the blocks.
 *
 *   retention        g_clients -> 4 clients, each ->buf; marks cycle1..cycle6;
 *                    a second list of 2 clients lost at cycle 3
 *   retention big N  ~N blocks of ~100 B: N/4 clients with 128-byte buffers in
 *                    a list, N/2 tree nodes of 96 B in 64 trees, then exit */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapgen.h"

struct client {
    long id;
    char name[16];
    struct client *next;
    char *buf;
};

struct client *g_clients;

static struct client *add_client_sized(struct client *head, long id, size_t size)
{
    struct client *c = calloc(1, sizeof *c);
    c->id = id;
    c->buf = malloc(size);
    memset(c->buf, 'x', size);
    c->next = head;
    return c;
}

static struct client *add_client(struct client *head, long id)
{
    return add_client_sized(head, id, 48);
}

struct tree { struct tree *left, *right; char pad[80]; };
struct tree *g_trees[64];
struct client *g_list;

static struct tree *build(long *left, int depth)
{
    if (*left <= 0 || depth == 0) return NULL;
    (*left)--;
    struct tree *t = calloc(1, sizeof *t);
    t->left = build(left, depth - 1);
    t->right = build(left, depth - 1);
    return t;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "big") == 0) {
        long n = atol(argv[2]);
        for (long k = 0; k < n / 4; k++) g_list = add_client_sized(g_list, k, 128);
        long left = n / 2;
        for (int k = 0; k < 64 && left > 0; k++) g_trees[k] = build(&left, 20);
        printf("big %ld\n", n);
        return 0;
    }
    printf("offsetof next=%zu buf=%zu\n", offsetof(struct client, next), offsetof(struct client, buf));
    struct client *lost = NULL;
    for (int cycle = 1; cycle <= 6; cycle++) {
        if (cycle <= 4) g_clients = add_client(g_clients, cycle);
        if (cycle == 3) {
            lost = add_client(lost, 100);
            lost = add_client(lost, 101);
            printf("lost %p %p\n", (void *)lost, (void *)lost->next);
            lost = NULL;
        }
        char label[16];
        snprintf(label, sizeof label, "cycle%d", cycle);
        heapgen_mark(label);
    }
    printf("g_clients %p\n", (void *)&g_clients);
    for (struct client *c = g_clients; c; c = c->next)
        printf("client %p buf %p next %p\n", (void *)c, (void *)c->buf, (void *)c->next);
    return 0;
}
