/* Fixture for "why is it alive": a registry list reached from a named global.
 * Every cycle accept_client() adds a session to g_clients and never removes it;
 * each session owns a buffer from open_buffer(). Both sites grow; the buffers
 * are alive only through the sessions, so they are held by the session finding. */
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

int main(void)
{
    for (int cycle = 1; cycle <= 8; cycle++) {
        accept_client(cycle);
        heapgen_mark("request");
    }
    printf("g_clients %p\n", (void *)&g_clients);
    return 0;
}
