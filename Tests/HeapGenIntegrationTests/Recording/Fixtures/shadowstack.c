/* Allocation patterns that reuse stack frames in every way the unwinder's
 * per-thread shadow of the last stack must notice: call paths of varying
 * depth from one loop, the same frame reached from two callers, longjmp out
 * of a deep chain, a coroutine's stack (swapcontext), a signal handler that
 * allocates on top of an allocating chain, dlclose/dlopen of a library that
 * allocates (argv[1]), and threads doing the same.  Each site's size tells
 * it apart (ShadowStackTests compares the stacks with the shadow on and off).
 * Built -O2 without frame pointers. */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <ucontext.h>

#define NOINLINE __attribute__((noinline))
void *volatile sink;
static volatile int pad_sink;

/* Ten frames between every site and malloc: the differences below lie
 * outside the frames a walk takes by rule before it joins the shadow. */
static NOINLINE void *ten(size_t n, int d) {
    void *p = d == 0 ? malloc(n) : ten(n, d - 1);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}
static NOINLINE void *leaf(size_t n) { void *p = ten(n, 10); sink = p; return p; }
static NOINLINE void *hop(size_t n, int d) {
    void *p = d <= 1 ? leaf(n) : hop(n, d - 1);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}
/* same shape, so mid's frame sits at the same SP under both */
static NOINLINE void *mid(size_t n) { void *p = leaf(n); __asm__ volatile("" : : "r"(p) : "memory"); return p; }
static NOINLINE void *via_a(size_t n) { volatile int pad[4]; pad[n & 3] = 1; void *p = mid(n); return pad[n & 3] ? p : 0; }
static NOINLINE void *via_b(size_t n) { volatile int pad[4]; pad[n & 3] = 2; void *p = mid(n + 1); return pad[n & 3] ? p : 0; }

static __thread jmp_buf jb;   /* each thread jumps to its own setjmp */
static NOINLINE void deep_jump(int d) {
    if (d == 0) { free(leaf(3001)); if (!pad_sink) longjmp(jb, 1); }
    else deep_jump(d - 1);
    pad_sink++;
}

static void on_sig(int sig) { (void)sig; free(hop(4001, 2)); }

static ucontext_t uc_main, uc_co;
static void co_body(void) {
    for (int i = 0; i < 50; i++) {
        free(hop(5001 + (size_t)(i % 3), 1 + i % 3));
        swapcontext(&uc_co, &uc_main);
    }
}

static void *work(void *arg) {
    uint64_t x = 0x9E3779B97F4A7C15ull * (1 + (uintptr_t)arg);
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        int d = 1 + (int)(x % 6);
        free(hop(1000 + (size_t)d, d));
        free((x >> 8) & 1 ? via_a(2000) : via_b(2000));
        if (i % 500 == 0) {
            if (!setjmp(jb)) deep_jump(3 + i % 4);
            free(hop(3002, 3));
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    signal(SIGUSR1, on_sig);
    for (int i = 0; i < 20; i++) {           /* signal on top of an allocating chain */
        free(hop(4002, 3));
        raise(SIGUSR1);
        free(hop(4003, 3));
    }
    static char costack[256 * 1024];
    getcontext(&uc_co);
    uc_co.uc_stack.ss_sp = costack;
    uc_co.uc_stack.ss_size = sizeof costack;
    uc_co.uc_link = &uc_main;
    makecontext(&uc_co, co_body, 0);
    for (int i = 0; i < 50; i++) {
        swapcontext(&uc_main, &uc_co);
        free(hop(5004, 1 + i % 3));           /* main stack between coroutine turns */
    }
    for (int round = 0; round < 3 && argc > 1; round++) {
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) return 3;
        int (*f)(int) = (int (*)(int))dlsym(h, "dl_alloc");
        if (!f || f(5) != 5) return 4;
        dlclose(h);
    }
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, (void *)i);
    work((void *)9);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    return 0;
}
