/*
 * deepmain.c: loads argv[1] (deepplugin.c) with RTLD_NOW | RTLD_DEEPBIND
 * (argv[2] == "plain": without RTLD_DEEPBIND), lets it allocate and free,
 * frees the block it returns, and has it free a block of ours. Nothing
 * leaks. Exit 0 on success.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    int flags = RTLD_NOW | RTLD_LOCAL;
    if (!(argc > 2 && strcmp(argv[2], "plain") == 0)) flags |= RTLD_DEEPBIND;
    void *h = dlopen(argv[1], flags);
    if (!h) return 3;
    void *(*work)(void) = (void *(*)(void))dlsym(h, "plugin_work");
    void (*release)(void *) = (void (*)(void *))dlsym(h, "plugin_free");
    if (!work || !release) return 4;
    void *theirs = work();
    free(theirs);
    void *ours = malloc(64);
    memset(ours, 7, 64);
    release(ours);
    return 0;
}
