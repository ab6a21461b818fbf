/* dlcycle: dlopen, call, dlclose a library LOADS times; each load allocates PER blocks
 * that the program keeps (LOADS × PER blocks live at exit, all from the library).
 *
 *   dlcycle LIB LOADS PER [mark]
 *
 * With "mark", one generation mark after each load (the library's site then grows by PER
 * blocks in every cycle). Prints "kept N blocks" and exits 0. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "heapgen.h"

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: dlcycle LIB LOADS PER [mark]\n"); return 2; }
    int loads = atoi(argv[2]), per = atoi(argv[3]);
    int mark = argc > 4 && strcmp(argv[4], "mark") == 0;
    void **kept = malloc(sizeof(void *) * (size_t)loads * (size_t)per);
    if (mark) HEAPGEN_MARK("start");
    for (int k = 0; k < loads; k++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) { fprintf(stderr, "dlopen: %s\n", dlerror()); return 1; }
        void (*keep)(void **, int) = (void (*)(void **, int))dlsym(h, "dlcycle_keep");
        if (!keep) { fprintf(stderr, "dlsym: %s\n", dlerror()); return 1; }
        keep(kept + (size_t)k * per, per);
        dlclose(h);
        if (mark) HEAPGEN_MARK("cycle");
    }
    printf("kept %d blocks\n", loads * per);
    return 0;
}
