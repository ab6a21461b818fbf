/* dlopen(argv[1]), dl_alloc(5), dlclose. Exit 0 on success. */
#include <dlfcn.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) return 3;
    int (*f)(int) = (int (*)(int))dlsym(h, "dl_alloc");
    if (!f || f(5) != 5) return 4;
    if (dlclose(h) != 0) return 5;
    return 0;
}
