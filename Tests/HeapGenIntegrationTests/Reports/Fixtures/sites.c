/*
 * sites.c: one site of each kind, called once per cycle.
 *   leak_session  abandoned (3 x 64-byte blocks appended to a global list every cycle)
 *   cache_lookup  cache     (16-entry table filled in the first cycle only)
 *   scratch       nothing   (allocates and frees)
 *   grow_log      abandoned by bytes (one block realloc'ed 100 bytes bigger every cycle)
 * `sites clean N` runs the same shape but leaves nothing behind.
 * Built with -DPEELED, main labels its marks inline (k == 1 ? "warm-up 1" : "cycle"),
 * which makes gcc -O2 peel the first loop iteration: cycle 1 then calls every
 * function from a second call site (same source line).
 * The BEGIN/END markers let the tests find each function's lines.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "heapgen.h"

/* noipa: no inlining, cloning or IPA-propagation, so every source call is one call site */
#define NOINLINE __attribute__((noipa))

struct node { struct node *next; char payload[56]; };   /* 64 bytes */

static struct node *sessions;          /* the growing global list */
static void *cache_table[16];
static char *log_buffer;
static size_t log_size;
void *volatile sink;
int clean_mode;

NOINLINE void leak_session(void) {                         /* BEGIN leak_session */
    for (int i = 0; i < 3; i++) {
        struct node *n = malloc(sizeof *n);
        memset(n, i, sizeof *n);
        n->next = sessions;
        sessions = n;
    }
    if (clean_mode) {
        while (sessions) { struct node *next = sessions->next; free(sessions); sessions = next; }
    }
}                                                          /* END leak_session */

NOINLINE void cache_lookup(void) {                         /* BEGIN cache_lookup */
    if (clean_mode) return;
    for (int i = 0; i < 16; i++) {
        if (!cache_table[i]) cache_table[i] = malloc(48);
        sink = cache_table[i];
    }
}                                                          /* END cache_lookup */

NOINLINE void scratch(void) {                              /* BEGIN scratch */
    for (int i = 0; i < 4; i++) {
        char *p = malloc(200 + i);
        memset(p, 1, 200 + i);
        sink = p;
        free(p);
    }
}                                                          /* END scratch */

NOINLINE void grow_log(void) {                             /* BEGIN grow_log */
    log_size += 100;
    log_buffer = realloc(log_buffer, log_size);
    memset(log_buffer, 'x', log_size);
    if (clean_mode) { free(log_buffer); log_buffer = NULL; log_size = 0; }
}                                                          /* END grow_log */

NOINLINE void end_cycle(int k) { HEAPGEN_MARK(k == 1 ? "warm-up 1" : "cycle"); }

int main(int argc, char **argv) {
    clean_mode = argc > 1 && strcmp(argv[1], "clean") == 0;
    int cycles = argc > 2 ? atoi(argv[2]) : 8;
    HEAPGEN_MARK("heapgen.start");
    for (int k = 1; k <= cycles; k++) {
        leak_session();
        cache_lookup();
        scratch();
        grow_log();
#ifdef PEELED
        HEAPGEN_MARK(k == 1 ? "warm-up 1" : "cycle");
#else
        end_cycle(k);
#endif
    }
    static const char msg[] = "sites: done\n";
    if (write(1, msg, sizeof msg - 1) < 0) return 1;
    return 0;
}
