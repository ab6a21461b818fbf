/* Fixture for "why is it alive": a registry list reached from a named global.
 * Every cycle accept_client() adds a session to g_clients and never removes it;
 * each session owns a buffer from open_buffer(). Both sites grow; the buffers
 * are alive only through the sessions, so they are held by the session finding.
 *   registry local   the same sessions held only by a local of serve_locally(),
 *                    for --retention-at request (the graph taken at each mark). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapgen.h"

struct client {
    long id;
    struct client *next;
    char *buffer;
};

struct client *g_clients;

static __attribute__((noinline)) char *open_buffer(size_t size)
{
    char *b = malloc(size);
    memset(b, 'x', size);
    return b;
}

static __attribute__((noinline)) void accept_client(long id)
{
    struct client *c = calloc(1, sizeof *c);
    c->id = id;
    c->buffer = open_buffer(200);
    c->next = g_clients;
    g_clients = c;
}

static __attribute__((noinline)) void serve_locally(void)
{
    struct client *volatile local = NULL;
    for (int cycle = 1; cycle <= 8; cycle++) {
        struct client *c = calloc(1, sizeof *c);
        c->id = cycle;
        c->buffer = open_buffer(200);
        c->next = local;
        local = c;
        heapgen_mark("request");
    }
    printf("local %p\n", (void *)&local);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "local") == 0) {
        serve_locally();
        return 0;
    }
    for (int cycle = 1; cycle <= 8; cycle++) {
        accept_client(cycle);
        heapgen_mark("request");
    }
    printf("g_clients %p\n", (void *)&g_clients);
    return 0;
}
