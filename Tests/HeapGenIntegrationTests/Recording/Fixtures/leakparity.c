/*
 * leakparity.c: one leak case per argv[1], each with a known answer that
 * LeakSanitizer's and valgrind's own tests teach (compiler-rt test/lsan,
 * memcheck/tests/leak-*.c). No stdio: nothing else allocates.
 *
 *   deadframe   48 B whose only pointer is left in a returned frame (16 KiB below
 *               main, never overwritten): 1 leaked, 48 B
 *   register    72 B held only in a register of a spinning thread: none leaked
 *   vector      64 B held only in xmm7 of a spinning thread, and 80 B only in
 *               ymm6's upper half of another (when the CPU has AVX): none
 *               leaked (LeakSanitizer reads them too; valgrind: lost)
 *   tls         56 B held only in a __thread variable (main and a blocked thread): none
 *   interior    128 B held only by a pointer to its middle: none (valgrind: possibly lost)
 *   size N      one block of N bytes, the last carved from the top chunk: 1 leaked, N B
 *   cycle       three 32 B blocks pointing at each other in a ring: 3 leaked, 96 B
 *   ninetenths  10 blocks of 96 B from one site, one kept: 9 leaked, 864 B
 *   fork        the child leaks 200 B and exits normally; the parent leaks nothing
 *   forkinherit like deadframe, then 3 forked children exit normally: each inherited
 *               the lost 48 B block, and its scan finds it too
 *   fork_exit   like fork, but the child leaves with _exit(0), as forked children
 *               that skip their parent's cleanup do: still 200 B leaked
 *   traced      like fork, but the child is already ptraced by its parent (PTRACE_TRACEME)
 *               and leaks its 48 B in a dead frame: no one else may stop its threads
 *   blocked     threads blocked in read() and nanosleep() while a scan (asked for
 *               mid-run with heapgen_control, when heapgen runs it) stops them:
 *               they must not see it (each says so if its call returned early;
 *               main waits 200 ms after the scan so that they could)
 *   deadthreads 8 threads at once each leave a 48 B block's only pointer in
 *               their own frame and end (joined): glibc caches their stacks,
 *               whose stale frames are no roots: 8 leaked, 384 B
 *   deadtls     4 threads each keep a 56 B block in a __thread variable and
 *               end (joined): nothing can read those variables again: 4
 *               leaked, 224 B (LeakSanitizer too; valgrind still scans the
 *               ended threads' TLS and says still reachable)
 *   unjoined    a thread returns a 40 B block and ends, never joined: the
 *               value pthread_join would return is a root: none leaked
 *   altstack    a live thread holds 24 B in its stack frame and waits in a
 *               signal handler on an alternate stack (its SP is not in its
 *               stack): none leaked
 *   forkthreads a live thread holds 1,337 B in its stack frame; main forks, the
 *               child exits: in the child that thread's stack is a copy whose
 *               thread is gone, still holding the block: none leaked in either
 *   exitholes   100 B whose only pointers are left in a frame just below main's,
 *               which exit()'s own frames then overlay: 1 leaked, 100 B (main
 *               returns; exitholes_exit: main calls exit(); exitholes_quick: main
 *               calls quick_exit(), which runs only at_quick_exit handlers)
 *   leaderexit  like deadframe, but main leaves with pthread_exit() and a thread
 *               it started ends the process (exit() in that thread): the leader
 *               is a zombie whose memory is read through the live thread, and
 *               its stack is dead below argv: 1 leaked, 48 B
 *   exitreg     an 816 B array whose only pointer the function that calls
 *               exit() keeps in a callee-saved register across its calls (sshd's
 *               pollfd array in its accept loop): none leaked (valgrind too)
 *   none        blocks all kept in globals: none leaked
 */
#include <signal.h>
#include <pthread.h>
#include <time.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heapgen.h"

void *volatile keep[16];
__thread void *volatile tls_main;     /* extern and volatile: the stores stay */
__thread void *volatile tls_thread;
static volatile int ready;

/* No general-purpose register keeps a copy (malloc returned it in rax). */
#define CLEAR_CALLER_SAVED() \
    __asm__ volatile("xor %%eax, %%eax\n\txor %%ecx, %%ecx\n\txor %%edx, %%edx\n\t"          \
                     "xor %%esi, %%esi\n\txor %%edi, %%edi\n\txor %%r8d, %%r8d\n\t"          \
                     "xor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\txor %%r11d, %%r11d"          \
                     : : : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11")

/* Leaves its block's only pointer in its own frame, then returns. */
__attribute__((noipa)) void leave_in_frame(void) {
    void *volatile local = malloc(48);
    memset(local, 1, 48);
}

/* Calls leave_in_frame 16 KiB deeper than main, below anything exit() and
 * the scan request later put on the stack: the stale pointer stays in the
 * dead part of the stack. */
__attribute__((noipa)) void deep_frame(void) {
    volatile char pad[16384];
    pad[0] = 1;
    leave_in_frame();
    pad[1] = pad[0];
}

/* Holds a 72 B block in r12 only, forever. */
static void *register_holder(void *arg) {
    (void)arg;
    register void *held __asm__("r12") = malloc(72);
    __asm__ volatile("" : "+r"(held));
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    CLEAR_CALLER_SAVED();
    for (;;) __asm__ volatile("pause" : : "r"(held));
    return NULL;
}

static volatile int vector_ready;

/* Holds a block in a vector register only, forever: 64 B in xmm7, or with
 * `upper` (non-NULL) 80 B in the upper half of ymm6. */
static void *vector_holder(void *upper) {
    register void *held __asm__("r12") = malloc(upper ? 80 : 64);
    if (upper)
        __asm__ volatile("vmovq %%r12, %%xmm0\n\tvinsertf128 $1, %%xmm0, %%ymm6, %%ymm6\n\t"
                         "vpxor %%xmm0, %%xmm0, %%xmm0\n\txor %%r12d, %%r12d"
                         : "+r"(held) : : "xmm0", "xmm6");
    else
        __asm__ volatile("movq %%r12, %%xmm7\n\txor %%r12d, %%r12d" : "+r"(held) : : "xmm7");
    CLEAR_CALLER_SAVED();
    __atomic_fetch_add(&vector_ready, 1, __ATOMIC_RELEASE);
    for (;;) __asm__ volatile("pause");
    return NULL;
}

static void *tls_holder(void *arg) {
    (void)arg;
    tls_thread = malloc(56);
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    for (;;) pause();
    return NULL;
}

__attribute__((noipa)) void make_cycle(void) {
    void **a = malloc(32), **b = malloc(32), **c = malloc(32);
    memset(a, 0, 32); memset(b, 0, 32); memset(c, 0, 32);
    a[0] = b; b[0] = c; c[0] = a;
    keep[15] = a;       /* escapes: the compiler keeps the mallocs */
    keep[15] = NULL;
}

__attribute__((noipa)) void *one_of_ten(void) {
    return malloc(96);
}

__attribute__((noipa)) void lose(size_t n) {
    void *volatile p = malloc(n);
    memset(p, 2, n);
}

/* Overwrites the stack below the caller: no stale copy of a pointer survives there. */
__attribute__((noipa)) void scrub(void) {
    volatile char junk[8192];
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = 0;
}

static int pipe_fds[2];

static void *blocked_reader(void *arg) {
    char c;
    if (read(pipe_fds[0], &c, 1) < 0) write(1, "read interrupted\n", 17);
    else write(1, "read returned\n", 14);
    return arg;
}

static void *blocked_sleeper(void *arg) {
    struct timespec t = { 30, 0 };
    if (nanosleep(&t, NULL) != 0) write(1, "sleep interrupted\n", 18);
    return arg;
}

static void *leave_and_end(void *arg) {
    leave_in_frame();
    return arg;
}

static void *keep_in_tls(void *arg) {
    tls_thread = malloc(56);
    memset(tls_thread, 5, 56);
    return arg;
}

static void *return_block(void *arg) {
    void *p = malloc(40);
    memset(p, 3, 40);
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    return p;
}

/* Leaves 128 copies of a 100 B block's only pointer in its frame, right
 * below main's: after it returns, exit() and its handlers run over that
 * stack, and the copies they do not overwrite lie between their frames. */
__attribute__((noipa)) void spray_below_main(void) {
    void *volatile slots[128];
    void *p = malloc(100);
    memset(p, 8, 100);
    for (int i = 0; i < 128; i++) slots[i] = p;
    (void)slots[0];
}

/* The pointer lives in a callee-saved register across the calls, and is in
 * that register, nowhere else, when exit() is called. */
__attribute__((noipa, noreturn)) void exit_holding_in_register(void) {
    struct timespec *times = calloc(102, 8);
    times[0].tv_nsec = 1000;
    for (int i = 0; i < 3; i++)
        nanosleep(times, NULL);
    scrub();
    exit(0);
}

static void *hold_and_wait(void *arg) {
    (void)arg;
    void *volatile held = malloc(1337);
    memset(held, 6, 1337);
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    for (;;) pause();
    return held;
}

static void *end_process_later(void *arg) {
    (void)arg;
    /* A new thread can start with the pointer in xmm7 (natively too: seen
     * with glibc 2.36), where the scan would find it, as LeakSanitizer's. */
    __asm__ volatile("pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\tpxor %%xmm2, %%xmm2\n\t"
                     "pxor %%xmm3, %%xmm3\n\tpxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
                     "pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7"
                     : : : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7");
    struct timespec d = { 0, 50000000 };    /* main is gone by then */
    nanosleep(&d, NULL);
    return NULL;                            /* the last thread: glibc calls exit(0) */
}

static void wait_on_altstack(int sig) {
    (void)sig;
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    for (;;) pause();
}

static void *hold_then_signal(void *arg) {
    (void)arg;
    void *volatile held = malloc(24);
    memset(held, 4, 24);
    static char alt[65536];
    stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt };
    sigaltstack(&ss, NULL);
    raise(SIGUSR1);             /* the handler never returns */
    return held;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "none";
    if (strcmp(mode, "deadframe") == 0) {
        deep_frame();
        return 0;               /* no scrub: the dead frame keeps the pointer */
    } else if (strcmp(mode, "register") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, register_holder, NULL);
        while (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {}
        scrub();
        exit(0);
    } else if (strcmp(mode, "vector") == 0) {
        pthread_t a, b;
        int want = 1;
        pthread_create(&a, NULL, vector_holder, NULL);
        if (__builtin_cpu_supports("avx")) {
            pthread_create(&b, NULL, vector_holder, (void *)1);
            want = 2;
        }
        while (__atomic_load_n(&vector_ready, __ATOMIC_ACQUIRE) < want) {}
        scrub();
        exit(0);
    } else if (strcmp(mode, "tls") == 0) {
        tls_main = malloc(56);
        pthread_t t;
        pthread_create(&t, NULL, tls_holder, NULL);
        while (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {}
        scrub();
        exit(0);
    } else if (strcmp(mode, "interior") == 0) {
        char *p = malloc(128);
        keep[0] = p + 64;
    } else if (strcmp(mode, "size") == 0 && argc > 2) {
        lose((size_t)strtoul(argv[2], NULL, 10));
    } else if (strcmp(mode, "cycle") == 0) {
        make_cycle();
    } else if (strcmp(mode, "ninetenths") == 0) {
        for (int i = 0; i < 10; i++) {
            void *volatile p = one_of_ten();
            if (i == 3) keep[0] = p;
        }
    } else if (strcmp(mode, "forkinherit") == 0) {
        deep_frame();
        for (int k = 0; k < 3; k++) {
            pid_t child = fork();
            if (child == 0) exit(0);
            int status = 0;
            waitpid(child, &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 9;
        }
        return 0;
    } else if (strcmp(mode, "fork") == 0 || strcmp(mode, "fork_exit") == 0) {
        keep[1] = malloc(40);
        pid_t child = fork();
        if (child == 0) {
            lose(200);
            scrub();
            if (strcmp(mode, "fork_exit") == 0) _exit(0);
            exit(0);
        }
        int status = 0;
        waitpid(child, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 9;
    } else if (strcmp(mode, "blocked") == 0) {
        if (pipe(pipe_fds) != 0) return 7;
        keep[0] = malloc(24);
        pthread_t a, b;
        pthread_create(&a, NULL, blocked_reader, NULL);
        pthread_create(&b, NULL, blocked_sleeper, NULL);
        struct timespec t = { 0, 50000000 };
        nanosleep(&t, NULL);
        if (heapgen_control) {      /* weak: NULL without heapgen */
            char answer[512];
            long n = heapgen_control("{\"op\":\"scan\"}", answer, sizeof answer);
            if (n > 0) {            /* the answer to stderr: stdout stays the program's */
                write(2, answer, strnlen(answer, sizeof answer));
                write(2, "\n", 1);
            }
        }
        t.tv_nsec = 200000000;      /* a thread the scan woke would speak now */
        nanosleep(&t, NULL);
        write(1, "main done\n", 10);
    } else if (strcmp(mode, "traced") == 0) {
        pid_t child = fork();
        if (child == 0) {
            if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) _exit(8);
            deep_frame();
            exit(0);
        }
        int status = 0;
        waitpid(child, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 9;
    } else if (strcmp(mode, "deadthreads") == 0) {
        pthread_t t[8];
        for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, leave_and_end, NULL);
        for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    } else if (strcmp(mode, "deadtls") == 0) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, keep_in_tls, NULL);
        for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    } else if (strcmp(mode, "unjoined") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, return_block, NULL);
        while (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {}
        struct timespec d = { 0, 100000000 };   /* time to end */
        nanosleep(&d, NULL);
    } else if (strcmp(mode, "exitholes") == 0) {
        spray_below_main();
        return 0;               /* no scrub: the holes are the point */
    } else if (strcmp(mode, "exitholes_exit") == 0) {
        spray_below_main();
        exit(0);
    } else if (strcmp(mode, "exitholes_quick") == 0) {
        spray_below_main();
        quick_exit(0);
    } else if (strcmp(mode, "leaderexit") == 0) {
        deep_frame();
        CLEAR_CALLER_SAVED();
        pthread_t t;
        pthread_create(&t, NULL, end_process_later, NULL);
        pthread_exit(NULL);
    } else if (strcmp(mode, "forkthreads") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, hold_and_wait, NULL);
        while (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {}
        pid_t child = fork();
        if (child == 0) exit(0);
        int status = 0;
        waitpid(child, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 9;
        exit(0);
    } else if (strcmp(mode, "exitreg") == 0) {
        exit_holding_in_register();
    } else if (strcmp(mode, "altstack") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = wait_on_altstack;
        sa.sa_flags = SA_ONSTACK;
        sigaction(SIGUSR1, &sa, NULL);
        pthread_t t;
        pthread_create(&t, NULL, hold_then_signal, NULL);
        while (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {}
        scrub();
        exit(0);
    } else {
        for (int i = 0; i < 4; i++) keep[i] = malloc(24 + 8 * i);
    }
    scrub();
    return 0;
}
