/*
 * strayfree.c: frees of addresses that are not live, as LeakSanitizer's double_free
 * tests and valgrind's "Invalid free()" cases make them.
 *   strayfree double          free a 16-byte block twice (glibc aborts: SIGABRT)
 *   strayfree interior        free a pointer 16 bytes into a live 64-byte block (SIGABRT)
 *   strayfree realloc-freed   realloc a freed 16-byte block (glibc lets it pass)
 *   strayfree foreign         free a block from __libc_malloc, which heapgen does not see
 *   strayfree child           a forked child does realloc-freed; the parent waits and is clean
 * Each prints its mode first and "survived" if the C library let it live.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);

__attribute__((noinline)) static void release(void *p) { free(p); }
__attribute__((noinline)) static void *resize(void *p, size_t n) { return realloc(p, n); }
void *volatile sink;

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    printf("mode %s\n", mode);
    fflush(stdout);
    if (strcmp(mode, "double") == 0) {
        void *p = malloc(16);                       /* ALLOC double */
        release(p);
        release(p);
    } else if (strcmp(mode, "interior") == 0) {
        char *p = malloc(64);                       /* ALLOC interior */
        sink = p;
        release(p + 16);
    } else if (strcmp(mode, "realloc-freed") == 0) {
        void *p = malloc(16);                       /* ALLOC realloc-freed */
        release(p);
        sink = resize(p, 32);
    } else if (strcmp(mode, "child") == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            void *p = malloc(24);                   /* ALLOC child */
            release(p);
            sink = resize(p, 40);
            _exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
    } else if (strcmp(mode, "foreign") == 0) {
        void *p = __libc_malloc(48);
        release(p);
    }
    printf("survived\n");
    return 0;
}
