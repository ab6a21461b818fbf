/*
 * recursive.c: one allocation point reached by many stacks. descend() keeps a
 * 12-byte block at each of 12 recursion depths (12 stacks, 144 B); ten other
 * functions keep one 20-byte block each (one stack each). Live at exit, by
 * place in the source: descend 144 B in 12 blocks, then the ten 20 B sites.
 */
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noipa))

void *volatile kept[32];

NOINLINE void descend(int depth) {
    void *p = malloc(12);                       /* DESCEND */
    memset(p, depth, 12);
    kept[depth] = p;
    if (depth < 11) descend(depth + 1);
}

#define KEEP_ONE(n) NOINLINE void keep_##n(void) { kept[12 + n] = malloc(20); }
KEEP_ONE(0) KEEP_ONE(1) KEEP_ONE(2) KEEP_ONE(3) KEEP_ONE(4)
KEEP_ONE(5) KEEP_ONE(6) KEEP_ONE(7) KEEP_ONE(8) KEEP_ONE(9)

int main(void) {
    descend(0);
    keep_0(); keep_1(); keep_2(); keep_3(); keep_4();
    keep_5(); keep_6(); keep_7(); keep_8(); keep_9();
    return 0;
}
