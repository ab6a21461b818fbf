// Symbolication fixture (C, -O2 -g, no frame pointers). Lines tagged MARK are looked up by the tests.
#include <stdio.h>
#include <stdlib.h>

static inline int scale_value(int x) {
    int y = x * 3 + 7;           /* MARK: scale_value body */
    if (y > 100) y = printf("%d\n", y) + y; /* MARK: scale_value printf */
    return y;
}

__attribute__((noinline)) int compute_total(int *values, int n) {
    int sum = 0;                 /* MARK: compute_total start */
    for (int i = 0; i < n; i++)
        sum += scale_value(values[i]); /* MARK: compute_total call */
    return sum;
}

__attribute__((noinline)) void *make_buffer(size_t n) {
    void *p = malloc(n);         /* MARK: make_buffer malloc */
    if (p) ((char *)p)[0] = 1;
    return p;
}

int main(int argc, char **argv) {
    int v[4] = {argc, 2, 3, 4};
    void *p = make_buffer(64);
    printf("%d %p\n", compute_total(v, 4), p); /* MARK: main call */
    return 0;
}
