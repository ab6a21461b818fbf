/* See include/CHeapGenTestingStart.h. */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "CHeapGenTestingStart.h"

#ifndef RTLD_DEFAULT
#define RTLD_DEFAULT ((void *)0)
#endif

typedef long (*hg_control_fn)(const char *, char *, size_t);

static long start_result = -ENOSYS;

/* Early, but after the preloaded shim's own constructor (its library is
 * initialised before the program's). */
__attribute__((constructor)) static void hg_testing_start(void)
{
    hg_control_fn control = (hg_control_fn)dlsym(RTLD_DEFAULT, "heapgen_control");
    if (control == NULL)
        return;
    char answer[256];
    start_result = control("{\"op\":\"track\"}", answer, sizeof answer);
}

long hg_testing_start_result(void)
{
    return start_result;
}

long hg_testing_thread_id(void)
{
    return syscall(SYS_gettid);
}
