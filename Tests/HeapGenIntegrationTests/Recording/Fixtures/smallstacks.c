/*
 * smallstacks.c: threads on the smallest stack glibc allows
 * (PTHREAD_STACK_MIN, 16 KiB), each using most of it before it allocates,
 * in waves of 8 at once (THREADS = argv[1], default 64; LOCALS = argv[2]
 * bytes of locals, default 6144: natively up to ~8.5 KiB run on Debian 12's
 * glibc). Each thread mallocs 1000 + its index bytes at its deepest point,
 * frees it, and frees a block the main thread allocated for it. Prints what
 * it did (compared with and without heapgen).
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t locals = 6144;
static void *handoff[8];

__attribute__((noinline)) static long deep_in_small_stack(long index)
{
    volatile unsigned char *buf = __builtin_alloca(locals);
    memset((void *)buf, (int)index, locals);
    void *p = malloc(1000 + (size_t)index);
    if (p == NULL)
        return -1;
    memset(p, 1, 16);
    free(p);
    return buf[locals - 1] + buf[0];
}

static void *run(void *arg)
{
    long index = (long)(intptr_t)arg;
    long r = deep_in_small_stack(index);
    void *q = handoff[index % 8];
    handoff[index % 8] = NULL;
    free(q);
    return (void *)(intptr_t)r;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 64;
    if (argc > 2)
        locals = (size_t)atol(argv[2]);
    long sum = 0;
    for (int wave = 0; wave * 8 < threads; wave++) {
        pthread_t t[8];
        int made = 0;
        for (int i = 0; i < 8 && wave * 8 + i < threads; i++) {
            handoff[i] = malloc(64);
            pthread_attr_t a;
            pthread_attr_init(&a);
            if (pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN) != 0 ||
                pthread_create(&t[i], &a, run, (void *)(intptr_t)(wave * 8 + i)) != 0) {
                printf("wave %d: thread %d not created\n", wave, i);
                return 1;
            }
            pthread_attr_destroy(&a);
            made++;
        }
        for (int i = 0; i < made; i++) {
            void *r;
            pthread_join(t[i], &r);
            sum += (long)(intptr_t)r;
        }
    }
    printf("threads %d stack %ld locals %zu sum %ld\n", threads, (long)PTHREAD_STACK_MIN, locals, sum);
    return 0;
}
