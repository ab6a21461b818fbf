/* Loaded with dlopen by dlmain: 5 aligned_alloc(256, 1234) calls (nobody else
 * in that process uses aligned_alloc), kept live. */
#include <stdlib.h>

void *volatile dl_sink[8];

__attribute__((visibility("default"))) int dl_alloc(int n)
{
    for (int i = 0; i < n; i++) dl_sink[i & 7] = aligned_alloc(256, 1234);
    return n;
}
