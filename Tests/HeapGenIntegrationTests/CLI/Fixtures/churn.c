/* churn: N malloc/free pairs (argv[1]) through one call site, with a line on
 * standard output and one on standard error, to watch heapgen's progress
 * lines and to check that the program's own output passes through. */
#include <stdio.h>
#include <stdlib.h>

void *volatile sink;

__attribute__((noinline)) static void *make(size_t n) { return malloc(n); }

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    printf("churn: start %ld\n", n);
    fflush(stdout);
    fprintf(stderr, "churn: on stderr\n");
    for (long i = 0; i < n; i++) {
        sink = make(16 + (size_t)(i % 200));
        free(sink);
    }
    printf("churn: done\n");
    return 3;
}
