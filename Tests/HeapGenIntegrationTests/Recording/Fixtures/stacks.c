/* Known call path for the stack test: main → outer → middle → leaf_alloc →
 * malloc(4242), -O2 -g, no frame pointers. Each function does work after its
 * call so none is a tail call. */
#include <stdlib.h>

void *volatile sink[16];
volatile int counter;

__attribute__((noinline)) void *leaf_alloc(int i)
{
    void *p = malloc(4242);
    sink[i & 15] = p;
    counter++;
    return p;
}

__attribute__((noinline)) void *middle(int i)
{
    void *p = leaf_alloc(i + 1);
    counter += 2;
    return p;
}

__attribute__((noinline)) void *outer(int i)
{
    void *p = middle(i * 2);
    counter += 3;
    return p;
}

int main(void)
{
    for (int i = 0; i < 3; i++) {
        void *p = outer(i);
        counter += (int)((unsigned long)p & 1);
    }
    return 0;
}
