/* probe_jemalloc: a glibc program that looks for jemalloc's API at run time
 * (dlsym, as a weak reference would). Without heapgen there is none. Under
 * heapgen the shim's definitions are found (a library cannot export a name
 * only sometimes); they answer like an allocator that cannot serve the
 * request, and whatever they free is recorded. No stdio buffer: the report
 * goes through write(2). */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out[1024];
static size_t len;

static void say(const char *line)
{
    size_t n = strlen(line);
    memcpy(out + len, line, n);
    len += n;
}

int main(void)
{
    void *(*mallocx_)(size_t, int) = (void *(*)(size_t, int))dlsym(RTLD_DEFAULT, "mallocx");
    void *(*rallocx_)(void *, size_t, int) = (void *(*)(void *, size_t, int))dlsym(RTLD_DEFAULT, "rallocx");
    size_t (*xallocx_)(void *, size_t, size_t, int) = (size_t (*)(void *, size_t, size_t, int))dlsym(RTLD_DEFAULT, "xallocx");
    size_t (*sallocx_)(const void *, int) = (size_t (*)(const void *, int))dlsym(RTLD_DEFAULT, "sallocx");
    size_t (*nallocx_)(size_t, int) = (size_t (*)(size_t, int))dlsym(RTLD_DEFAULT, "nallocx");
    void (*dallocx_)(void *, int) = (void (*)(void *, int))dlsym(RTLD_DEFAULT, "dallocx");
    void (*sdallocx_)(void *, size_t, int) = (void (*)(void *, size_t, int))dlsym(RTLD_DEFAULT, "sdallocx");
    void (*free_sized_)(void *, size_t) = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
    if (!mallocx_ || !rallocx_ || !xallocx_ || !sallocx_ || !nallocx_ || !dallocx_ || !sdallocx_) {
        say("no jemalloc API\n");
    } else {
        errno = 0;
        say(mallocx_(100, 0) == NULL && errno == ENOMEM ? "mallocx: NULL, ENOMEM\n" : "mallocx: unexpected\n");
        char *b = malloc(100);
        strcpy(b, "kept");
        errno = 0;
        say(rallocx_(b, 200, 0) == NULL && errno == ENOMEM && strcmp(b, "kept") == 0
            ? "rallocx: NULL, ENOMEM, block unchanged\n" : "rallocx: unexpected\n");
        say(xallocx_(b, 4096, 0, 0) == malloc_usable_size(b) ? "xallocx: not resized\n" : "xallocx: unexpected\n");
        say(sallocx_(b, 0) == malloc_usable_size(b) ? "sallocx: usable size\n" : "sallocx: unexpected\n");
        say(nallocx_(100, 0) == 0 ? "nallocx: 0\n" : "nallocx: unexpected\n");
        dallocx_(b, 0);
        sdallocx_(malloc(10), 10, 0);
        say("dallocx, sdallocx: freed\n");
    }
    if (free_sized_) {
        free_sized_(malloc(20), 20);
        say("free_sized: freed\n");
    } else {
        say("no free_sized\n");
    }
    return write(1, out, len) == (ssize_t)len ? 0 : 1;
}
