/* One program built twice at the same path: plain, then with -DMOVED, which puts two more
 * functions before the leaking one, so every address after them moves while the source
 * lines stay where they are (the #ifdef block is in both). Keeps 100 blocks of 64 bytes
 * from leak_block and 3 of 200 from keep_three; prints how many it kept. */
#include <stdio.h>
#include <stdlib.h>

#ifdef MOVED
__attribute__((noinline)) int pad_one(int x) { volatile int a[256]; for (int i = 0; i < 256; i++) a[i] = x * i; return a[x & 255]; }
__attribute__((noinline)) int pad_two(int x) { volatile int a[256]; for (int i = 0; i < 256; i++) a[i] = x + i; return a[x & 255] + pad_one(x); }
#endif

__attribute__((noinline)) void *leak_block(size_t n) {
    return malloc(n); /* LEAK_LINE */
}

__attribute__((noinline)) void *keep_three(size_t n) {
    return calloc(1, n); /* KEEP_LINE */
}

static void *kept[103];

int main(void) {
    int n = 0;
    for (int i = 0; i < 100; i++) kept[n++] = leak_block(64);
    for (int i = 0; i < 3; i++) kept[n++] = keep_three(200);
#ifdef MOVED
    if (pad_two(3) == -1) return 1;
#endif
    printf("kept %d\n", n);
    return 0;
}
