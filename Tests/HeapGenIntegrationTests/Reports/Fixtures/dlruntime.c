/*
 * dlruntime.c: loads libstdc++ at run time, as the java launcher's LoadJavaVM loads libjvm
 * (and with it libstdc++): libstdc++'s constructor allocates its emergency pool below the
 * program's own dlopen call. Then keeps 2 blocks of its own and prints "loaded".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

void *volatile kept[2];

__attribute__((noinline)) static void *load_runtime(void) {
    return dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
}

int main(void) {
    kept[0] = malloc(40);
    kept[1] = malloc(40);
    puts(load_runtime() ? "loaded" : "not loaded");
    return 0;
}
