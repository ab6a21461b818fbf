/*
 * leakowner.c: direct and indirect leaks, and suppressions that follow the
 * owner (LeakSanitizer's and valgrind's split). No stdio: nothing else allocates.
 *
 *   owner     owner_function's 48 B block (a direct leak) holds the only pointer
 *             to make_payload's 200 B block (an indirect leak, allocated from
 *             another path: setup, not owner_function, is on its stack); nothing
 *             else points at either: definitely lost 48 B in 1, indirectly 200 B in 1
 *   chain     owner_function's 48 B block -> make_payload's 200 B -> 24 B from
 *             make_tail, and a cycle of two 32 B blocks from make_pair:
 *             direct 48 + 32 B in 2 blocks, indirect 200 + 24 + 32 B in 3
 *   lsan      like owner, and the program defines __lsan_default_suppressions()
 *             returning "leak:owner_function\n"
 */
#include <stdlib.h>
#include <string.h>

struct owner { void *volatile payload; char name[40]; };   /* volatile: the store stays */

__attribute__((noipa)) void *make_payload(size_t size) {
    void *p = malloc(size);
    memset(p, 7, size);
    return p;
}

__attribute__((noipa)) void *make_tail(void) {
    void *p = malloc(24);
    memset(p, 0, 24);
    return p;
}

/* Allocates the owner, gives it the payload, and drops the owner's pointer. */
__attribute__((noipa)) void owner_function(void *payload) {
    struct owner *volatile o = malloc(sizeof *o);
    memset(o, 0, sizeof *o);
    o->payload = payload;
}

/* The payload's stack does not hold owner_function: only the owner relation
 * can suppress it with leak:owner_function. */
__attribute__((noipa)) void setup(int chain) {
    void *payload = make_payload(200);
    if (chain) *(void *volatile *)payload = make_tail();
    owner_function(payload);
}

/* Two 32 B blocks pointing at each other, nothing else at them. */
__attribute__((noipa)) void make_pair(void) {
    void *volatile *a = malloc(32), *volatile *b = malloc(32);
    memset((void *)a, 0, 32); memset((void *)b, 0, 32);
    a[0] = (void *)b; b[0] = (void *)a;
}

#ifdef LEAKOWNER_LSAN
const char *__lsan_default_suppressions(void) { return "leak:owner_function\n"; }
#endif

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "owner";
    if (strcmp(mode, "chain") == 0) {
        setup(1);
        make_pair();
    } else {
        setup(0);
    }
    return 0;
}
