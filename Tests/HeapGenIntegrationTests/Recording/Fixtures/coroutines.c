/* Coroutines (makecontext/swapcontext) on a malloc'd and on an mmap'd stack:
 * each round, coroutine k frees one of its 16 blocks and mallocs another
 * (1,000 + k bytes) through k + 1 calls of descend(), then swaps back to main.
 * Prints the number of coroutine allocations. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#define COROUTINES 4
#define ROUNDS 500
static ucontext_t main_context, contexts[COROUTINES];
static void *kept[COROUTINES][16];
static long allocations;

static __attribute__((noinline)) void *descend(int n, size_t size)
{
    void *p = n > 0 ? descend(n - 1, size) : malloc(size);
    __asm__ volatile("" : : "r"(p) : "memory");     /* no tail call */
    return p;
}

static void coroutine(int k)
{
    for (int round = 0; round < ROUNDS; round++) {
        free(kept[k][round % 16]);
        kept[k][round % 16] = descend(k, 1000 + (size_t)k);
        allocations++;
        swapcontext(&contexts[k], &main_context);
    }
}

int main(void)
{
    for (int k = 0; k < COROUTINES; k++) {
        const size_t size = 64 * 1024;
        void *stack = (k & 1) ? malloc(size)
                              : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        getcontext(&contexts[k]);
        contexts[k].uc_stack.ss_sp = stack;
        contexts[k].uc_stack.ss_size = size;
        contexts[k].uc_link = &main_context;
        makecontext(&contexts[k], (void (*)(void))coroutine, 1, k);
    }
    for (int round = 0; round < ROUNDS; round++)
        for (int k = 0; k < COROUTINES; k++)
            swapcontext(&main_context, &contexts[k]);
    for (int k = 0; k < COROUTINES; k++)
        for (int i = 0; i < 16; i++)
            free(kept[k][i]);
    printf("%ld\n", allocations);
    return 0;
}
