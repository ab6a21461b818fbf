/* dlcycle_lib: a library the dlcycle program loads, calls and unloads again and again.
 * dlcycle_keep allocates N blocks of 40 + i % 3 bytes and hands them to the program, which
 * keeps them: every block is live at exit, allocated from this library's code in whichever
 * load of it was current. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void *dlcycle_block(int i) {
    void *p = malloc(40 + i % 3);
    if (p) memset(p, i, 40);
    return p;
}

void dlcycle_keep(void **out, int n) {
    for (int i = 0; i < n; i++) out[i] = dlcycle_block(i);
}
