/* Fixture for "why is it alive": a registry list reached from a named global.
 * Every cycle accept_client() adds a session to g_clients and never removes it;
 * each session owns a buffer from open_buffer(). Both sites grow; the buffers
 * are alive only through the sessions, so they are held by the session finding.
 *   registry local   the same sessions held only by a local of serve_locally(),
 *                    for --retention-at request (the graph taken at each mark).
 *   registry registers   the newest session held only in callee-saved registers
 *                    while heapgen_mark runs: heapgen's frames save some of them
 *                    on the stack, and those slots are the program's (x86-64). */
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

#if defined(__x86_64__)
/* mark_holding(p, label): heapgen_mark(label) with p in every callee-saved
 * register and nowhere in this frame; returns p. Assembly, because a compiler
 * would keep p wherever it likes. */
void *mark_holding(void *p, const char *label);
__asm__(".text\n.globl mark_holding\n.type mark_holding,@function\nmark_holding:\n"
        "push %rbx\npush %rbp\npush %r12\npush %r13\npush %r14\npush %r15\nsub $8,%rsp\n"
        "mov %rdi,%rbx\nmov %rdi,%rbp\nmov %rdi,%r12\nmov %rdi,%r13\nmov %rdi,%r14\nmov %rdi,%r15\n"
        "mov %rsi,%rdi\ncall heapgen_mark@PLT\nmov %rbx,%rax\n"
        "add $8,%rsp\npop %r15\npop %r14\npop %r13\npop %r12\npop %rbp\npop %rbx\nret\n"
        ".size mark_holding,.-mark_holding\n");

static __attribute__((noinline)) void serve_in_registers(void)
{
    struct client *head = NULL;
    for (int cycle = 1; cycle <= 8; cycle++) {
        struct client *c = calloc(1, sizeof *c);
        c->id = cycle;
        c->buffer = open_buffer(200);
        c->next = head;
        head = mark_holding(c, "request");
    }
    printf("registers %p\n", (void *)head);
}
#endif

int main(int argc, char **argv)
{
#if defined(__x86_64__)
    if (argc > 1 && strcmp(argv[1], "registers") == 0) {
        serve_in_registers();
        return 0;
    }
#endif
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
