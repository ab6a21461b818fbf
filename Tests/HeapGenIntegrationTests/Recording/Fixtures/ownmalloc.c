/* ownmalloc: the executable defines malloc & co itself (a bump allocator);
 * the linker exports them (libc defines them too), so every call in the
 * process binds to them, ahead of any preloaded library: heapgen cannot see
 * these allocations. heapgen must say so on its own stderr, never in the
 * program's output. */
#include <stdio.h>
#include <string.h>

static _Alignas(16) unsigned char heap[4 << 20];
static size_t used;
unsigned long own_calls;

void *malloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n > sizeof heap - used)
        return NULL;
    own_calls++;
    void *p = heap + used;
    used += n;
    return p;
}

void free(void *p) { (void)p; }

void *calloc(size_t a, size_t b)
{
    void *p = malloc(a * b);
    if (p)
        memset(p, 0, a * b);
    return p;
}

void *realloc(void *old, size_t n)
{
    void *p = malloc(n);
    if (p && old)
        memcpy(p, old, n);   /* bump heap: reading past old's end stays inside heap */
    return p;
}

int main(void)
{
    char *s = malloc(64);
    strcpy(s, "own allocator");
    printf("%s\n", s);
    fprintf(stderr, "program's own stderr line\n");
    for (int i = 0; i < 100; i++) {
        void *volatile q = malloc(32);
        free(q);
    }
    printf("calls served by the program's malloc: %s\n", own_calls >= 101 ? "101 or more" : "too few");
    return 0;
}
