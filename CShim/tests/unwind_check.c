/* unwind_check.c -- hg_unwind vs libunwind's unw_backtrace, site by site.
 * (libunwind is only the oracle here: the shim itself no longer links it.)
 *
 * Built by scripts/check-unwind with -O2 -fomit-frame-pointer, linking
 * unwind.c directly.  probe() plays the interposed malloc: it takes the start
 * state with HG_UNWIND_START, unwinds with hg_unwind, then asks libunwind from
 * the same frame and compares after dropping libunwind's leading frames (the
 * ones above the probe's caller).  Prints "N passed, M failed"; exits 1 on
 * any failure.  Optional arguments: small .so files exporting
 * `int hgdl_call(void (*cb)(void), int depth)` (see check-unwind), each
 * dlopen'd, called, dlclose'd and reopened a few times.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "unwind.h"

#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

/* noipa, not just noinline: IPA-SRA would drop unused return values and turn
 * the chains into tail calls, flattening the frames this test is about.
 * WITH_FP: the probes stand in for the shim's -fno-omit-frame-pointer code
 * (HG_UNWIND_START forces a frame pointer anyway). */
#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#define WITH_FP
#else
#define NOINLINE __attribute__((noipa))
#define WITH_FP  __attribute__((optimize("no-omit-frame-pointer")))
#endif

static _Atomic int g_pass, g_fail;
static int g_verbose;
static volatile int g_sink;

/* EXPECT_FAST: the hot loop alone; EXPECT_SLOW: the checked walk was needed
 * (signal frames); either way the stack must equal libunwind's. */
enum { EXPECT_FAST = 1, EXPECT_SLOW = 2, EXPECT_TRUNC = 4, EXPECT_CUT = 8 };

/* The slow-walk counter is global, so per-site fast/slow expectations are
 * only checked on the main thread; the threads are checked as a whole. */
static _Thread_local int t_in_threads;

typedef struct probe_out {
    uintptr_t pcs[HG_UNWIND_MAX_FRAMES];
    int n, truncated;
} probe_out;

static void fail(const char *site, const char *why, const uintptr_t *a, int na,
                 void *const *b, int nb) {
    atomic_fetch_add(&g_fail, 1);
    fprintf(stderr, "FAIL %s: %s (fast %d frames, libunwind %d)\n", site, why, na, nb);
    if (!g_verbose) return;
    int m = na > nb ? na : nb;
    for (int i = 0; i < m && i < 40; i++) {
        Dl_info di = {0};
        uintptr_t x = i < na ? a[i] : 0;
        uintptr_t y = i < nb ? (uintptr_t)b[i] : 0;
        dladdr((void *)(x ? x - 1 : y - 1), &di);
        fprintf(stderr, "  %2d %#14lx %#14lx %s%s\n", i, (unsigned long)x, (unsigned long)y,
                di.dli_sname ? di.dli_sname : "?", x != y ? "  <--" : "");
    }
}

/* The stand-in for an interposed allocator entry point. */
static NOINLINE WITH_FP
void probe(const char *site, int max, int flags, probe_out *out) {
    hg_unwind_start st;
    HG_UNWIND_START(st);
    probe_out local;
    if (!out) out = &local;
    uint64_t fb0 = hg_unwind_slow_stacks(), cut0 = hg_unwind_cut_stacks();
    out->n = hg_unwind(&st, out->pcs, max, &out->truncated);
    uint64_t fb1 = hg_unwind_slow_stacks(), cut1 = hg_unwind_cut_stacks();

    void *ref[HG_UNWIND_MAX_FRAMES + 64];
    int nr = unw_backtrace(ref, (int)(sizeof ref / sizeof ref[0]));
    int first = -1;
    for (int i = 0; i < nr && i < 16; i++)
        if ((uintptr_t)ref[i] == st.pc) { first = i; break; }
    if (first < 0) { fail(site, "libunwind trace lacks the start pc", out->pcs, out->n, ref, nr); return; }
    void **r = ref + first;
    nr -= first;

    if (out->n < 1 || out->pcs[0] != st.pc) { fail(site, "pcs[0] != start pc", out->pcs, out->n, r, nr); return; }
    int want_n = nr > max ? max : nr;
    int want_trunc = nr > max ? HG_UNWIND_TRUNC_MAX : (flags & EXPECT_CUT) ? HG_UNWIND_TRUNC_CUT : 0;
    if ((cut1 != cut0) != !!(flags & EXPECT_CUT)) {
        fail(site, flags & EXPECT_CUT ? "expected a cut" : "stack cut short", out->pcs, out->n, r, nr);
        return;
    }
    if (out->n != want_n) { fail(site, "frame count differs", out->pcs, out->n, r, nr); return; }
    if (out->truncated != want_trunc) { fail(site, "truncated flag differs", out->pcs, out->n, r, nr); return; }
    for (int i = 0; i < want_n; i++)
        if (out->pcs[i] != (uintptr_t)r[i]) { fail(site, "pc differs", out->pcs, out->n, r, nr); return; }
    if ((flags & EXPECT_TRUNC) && !out->truncated) { fail(site, "expected truncation", out->pcs, out->n, r, nr); return; }
    if (!t_in_threads) {
        if ((flags & EXPECT_FAST) && fb1 != fb0) { fail(site, "hot loop left the stack to the slow walk", out->pcs, out->n, r, nr); return; }
        if ((flags & EXPECT_SLOW) && fb1 == fb0) { fail(site, "expected the slow walk", out->pcs, out->n, r, nr); return; }
    }
    atomic_fetch_add(&g_pass, 1);
}

/* A start state whose pc is in no object and whose RBP is garbage: the walk
 * must stop after it, cut short, without touching unmapped memory. */
static NOINLINE WITH_FP
void probe_wild(void) {
    hg_unwind_start st;
    HG_UNWIND_START(st);
    st.pc = 0x1000;               /* nothing mapped there */
    st.rbp = 0x5a5a5a5a5a5a5a58;  /* nor there */
    uint64_t c0 = hg_unwind_cut_stacks();
    uintptr_t pcs[64];
    int tr, n = hg_unwind(&st, pcs, 64, &tr);
    if (n == 1 && pcs[0] == 0x1000 && tr == HG_UNWIND_TRUNC_CUT && hg_unwind_cut_stacks() == c0 + 1) {
        atomic_fetch_add(&g_pass, 1);
    } else {
        atomic_fetch_add(&g_fail, 1);
        fprintf(stderr, "FAIL wild-start: n=%d truncated=%d\n", n, tr);
    }
}

/* ---- deep -O2 chains without frame pointers, assorted frame shapes ---- */

typedef struct chain_arg { const char *site; int max, flags; probe_out *out; } chain_arg;

static NOINLINE int c_leaf(const chain_arg *a, int x) {
    probe(a->site, a->max, a->flags, a->out);
    return x + g_sink;
}
/* pushes all six callee-saved registers, RBP among them as a plain register,
 * while its caller (c_bigframe <- c_alloca) has its CFA on RBP: the unwinder
 * must take RBP back from this frame's save slot */
static NOINLINE int c_saves(const chain_arg *a, int x) {
    int p = x * 3 + g_sink, q = x ^ g_sink, s = x - g_sink, t = x * x;
    int u = g_sink * 5, v = g_sink + x * 9, w = g_sink ^ 77;
    __asm__ volatile("mov $0x5a5a5a5a, %%ebp" ::: "rbp");   /* RBP now garbage */
    int r = c_leaf(a, x + 1);
    return r + p * q + s * t + (p ^ t) + u * v + w * (u - v) + (q | w);
}
/* big local array: sub $N, %rsp */
static NOINLINE int c_bigframe(const chain_arg *a, int x) {
    volatile char buf[3000];
    buf[x & 1023] = (char)x;
    return c_saves(a, x + 1) + buf[(x * 7) & 1023];
}
/* alloca: GCC must keep a frame pointer, CFA on RBP */
static NOINLINE int c_alloca(const chain_arg *a, int x) {
    char *p = __builtin_alloca((size_t)(x & 63) + 16);
    memset(p, x, 16);
    ((volatile char *)p)[3] = 1;
    return c_bigframe(a, x + 1) + p[3];
}
/* VLA, same story */
static NOINLINE int c_vla(const chain_arg *a, int x) {
    int n = (x & 31) + 8;
    volatile int v[n];
    v[n - 1] = x;
    return c_alloca(a, x + 1) + v[n - 1];
}
static NOINLINE int c_mid(const chain_arg *a, int x, int d);
static NOINLINE int c_plain(const chain_arg *a, int x, int d) {
    return c_mid(a, x + 1, d - 1) + 1;
}
static NOINLINE int c_mid(const chain_arg *a, int x, int d) {
    if (d <= 0) return c_vla(a, x) * 2;
    long l = g_sink + x;
    return c_plain(a, x + 1, d) + (int)(l >> 1);
}
static NOINLINE int run_chain(const char *site, int depth, int max, int flags, probe_out *out) {
    chain_arg a = { site, max, flags, out };
    return c_mid(&a, 1, depth) + g_sink;
}

/* ---- a call that is the last instruction of its function ----
 * The return address is then the first byte of whatever follows, so the rule
 * must be looked up for pc-1. */
static jmp_buf g_jb;
static NOINLINE __attribute__((noreturn)) void nr_leaf(const chain_arg *a) {
    c_leaf(a, 0);
    longjmp(g_jb, 1);
}
static NOINLINE void nr_caller(const chain_arg *a, int x) {
    volatile char buf[200];
    buf[x & 127] = 1;
    if (buf[x & 127] == 2) return;
    nr_leaf(a);
}
static NOINLINE void run_noreturn(const char *site, int flags) {
    chain_arg a = { site, 128, flags, NULL };
    if (!setjmp(g_jb)) nr_caller(&a, 1);
}

/* ---- recursion, for truncation ---- */

static NOINLINE int recurse(const chain_arg *a, int d) {
    if (d == 0) { probe(a->site, a->max, a->flags, a->out); return g_sink; }
    int r = recurse(a, d - 1);
    return r + d + g_sink;
}

/* ---- through glibc: qsort comparator ---- */

static const chain_arg *g_qsort_arg;
static int g_qsort_probes;
static int cmp_int(const void *x, const void *y) {
    if (g_qsort_probes < 3) { g_qsort_probes++; c_leaf(g_qsort_arg, 0); }
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}
static NOINLINE void run_qsort(const char *site, int flags) {
    chain_arg a = { site, 128, flags, NULL };
    int v[32];
    for (int i = 0; i < 32; i++) v[i] = (i * 7919) % 101;
    g_qsort_arg = &a;
    g_qsort_probes = 0;
    qsort(v, 32, sizeof v[0], cmp_int);
    g_sink += v[5];
}

/* ---- signal handler: the signal frame must come out complete ---- */

static volatile uintptr_t g_sig_ra;
static probe_out g_sig_out;
static void on_sig(int sig) {
    (void)sig;
    chain_arg a = { "signal-handler", 128, EXPECT_SLOW, &g_sig_out };
    c_saves(&a, 1);
}
static NOINLINE void raise_sig(void) {
    g_sig_ra = (uintptr_t)__builtin_return_address(0);
    raise(SIGUSR1);
    g_sink++;
}

/* ---- a coroutine: makecontext on a heap stack, which is no thread's ----
 * Its stack is unknown to the unwinder (every load goes through
 * process_vm_readv); the walk must still equal libunwind's.  It ends at
 * glibc's __start_context, the return address makecontext planted (no call
 * precedes it), where libunwind stops too: complete, not cut short. */

static ucontext_t g_uc_main, g_uc_co;
static void co_entry(void) {
    chain_arg a = { "coroutine-stack", 128, 0, NULL };
    c_saves(&a, 1);
}
static void run_coroutine(void) {
    const size_t size = 1 << 20;
    char *stack = malloc(size);
    if (!stack || getcontext(&g_uc_co) != 0) { atomic_fetch_add(&g_fail, 1); return; }
    g_uc_co.uc_stack.ss_sp = stack;
    g_uc_co.uc_stack.ss_size = size;
    g_uc_co.uc_link = &g_uc_main;
    makecontext(&g_uc_co, co_entry, 0);
    swapcontext(&g_uc_main, &g_uc_co);
    free(stack);
}

/* ---- the shadow of the last stack ----
 * Walks that share a frame (same pc, SP, RBP) with the last one but differ
 * outside it: the kept frames must be re-read, not trusted.  sh_a and sh_b
 * have the same shape, so sh_mid's frame lands at the same SP under both,
 * with the same return address into sh_mid's caller... only the slots above
 * differ.  The longjmp case leaves a kept stack behind on the abandoned
 * frames, then walks a different path over the same addresses. */

/* ten frames between the allocation and the frames that differ: a walk
 * joins the shadow below them, then must find the slots changed */
static NOINLINE int sh_deep(const chain_arg *a, int x, int d) {
    if (d == 0) return c_leaf(a, x + 1) + 1;
    return sh_deep(a, x + 1, d - 1) + g_sink;
}
static NOINLINE int sh_mid(const chain_arg *a, int x) {
    return sh_deep(a, x, 10) + 1;
}
static NOINLINE int sh_a(const chain_arg *a, int x) {
    volatile int pad[8];
    pad[x & 7] = x;
    return sh_mid(a, x + 1) + pad[x & 7];
}
static NOINLINE int sh_b(const chain_arg *a, int x) {
    volatile int pad[8];
    pad[x & 7] = x;
    return sh_mid(a, x + 2) + pad[x & 7];
}
static NOINLINE int sh_via(const chain_arg *a, int which) {
    return which ? sh_b(a, 1) : sh_a(a, 1);
}
static jmp_buf g_sh_jb;
static volatile int g_sink_never;
static NOINLINE void sh_jump_leaf(const chain_arg *a) {
    probe(a->site, a->max, a->flags, a->out);
    if (!g_sink_never) longjmp(g_sh_jb, 1);
}
static NOINLINE int sh_jump_deep(const chain_arg *a, int d) {
    if (d == 0) { sh_deep(a, 0, 10); sh_jump_leaf(a); return 0; }
    return sh_jump_deep(a, d - 1) + g_sink;
}
/* Walks the shadow or a memo entry took whole from a kept frame on, and
 * those that found a kept slot changed, together: which of the two answers
 * a repeated stack depends on which is on. */
static void taken_stats(unsigned long *taken, unsigned long *left) {
    unsigned long j, l, h, ml;
    hg_unwind_shadow_stats(&j, &l);
    hg_unwind_memo_stats(&h, &ml);
    *taken = j + h;
    *left = l + ml;
}
static int g_memo_on;

static NOINLINE void run_shadow(void) {
    chain_arg a = { "shadow-same-frame-other-caller", 128, EXPECT_FAST, NULL };
    unsigned long j0, l0, j1, l1, h0, ml0, h1, ml1;
    hg_unwind_shadow_stats(&j0, &l0);
    hg_unwind_memo_stats(&h0, &ml0);
    for (int i = 0; i < 8; i++) sh_via(&a, i & 1);
    for (int i = 0; i < 8; i++) sh_via(&a, (i >> 1) & 1);
    chain_arg b = { "shadow-after-longjmp", 128, EXPECT_FAST, NULL };
    for (int i = 0; i < 6; i++) {
        if (!setjmp(g_sh_jb)) sh_jump_deep(&b, 3 + (i % 3));
        run_chain("shadow-after-longjmp-chain", i % 4, 128, EXPECT_FAST, NULL);
    }
    hg_unwind_shadow_stats(&j1, &l1);
    hg_unwind_memo_stats(&h1, &ml1);
    /* With the shadow on, the walks must have joined it, and left it again
     * where the frames above differ; off, neither. The memo the same: the
     * same start under the other caller must be found changed. */
    int on = hg_unwind_get_shadow();
    if (on ? (j1 > j0 && l1 > l0) : (j1 == j0 && l1 == l0)) {
        atomic_fetch_add(&g_pass, 1);
    } else {
        atomic_fetch_add(&g_fail, 1);
        fprintf(stderr, "FAIL shadow: joined %lu, left %lu (shadow %s)\n", j1 - j0, l1 - l0, on ? "on" : "off");
    }
    int memo = on && g_memo_on;
    if (memo ? (h1 > h0 && ml1 > ml0) : (h1 == h0 && ml1 == ml0)) {
        atomic_fetch_add(&g_pass, 1);
    } else {
        atomic_fetch_add(&g_fail, 1);
        fprintf(stderr, "FAIL memo: hits %lu, left %lu (memo %s)\n", h1 - h0, ml1 - ml0, memo ? "on" : "off");
    }
}

/* ---- threads ---- */

/* Each thread's shadow and memo (the shim keeps them in its thread blocks). */
static _Thread_local _Alignas(64) unsigned char t_unwind_state[HG_UNWIND_THREAD_BYTES];

static void *thread_main(void *arg) {
    long id = (long)arg;
    t_in_threads = 1;
    hg_unwind_attach(t_unwind_state);
    for (int i = 0; i < 300; i++) {
        run_chain("thread-chain", (int)(id + i) % 9, 64, 0, NULL);
        chain_arg a = { "thread-recursion", 32, 0, NULL };
        recurse(&a, 20 + (i % 30));
        if (i % 97 == 0) hg_unwind_invalidate();
    }
    return NULL;
}

/* ---- timing ---- */

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double t_fast, t_raw, t_cold;
static int t_frames;

/* Best of several rounds: the machine is shared, the minimum is the cost. */
#define TIME_BEST(result, rounds, iters, body) do {                     \
        double best_ = 1e30;                                            \
        for (int r_ = 0; r_ < (rounds); r_++) {                         \
            double t0_ = now_ns();                                      \
            for (int i_ = 0; i_ < (iters); i_++) { body; }              \
            double t_ = (now_ns() - t0_) / (iters);                     \
            if (t_ < best_) best_ = t_;                                 \
        }                                                               \
        (result) = best_;                                               \
    } while (0)

static NOINLINE WITH_FP
void probe_time(const char *site, int max, int flags, probe_out *out) {
    (void)site; (void)flags; (void)out;
    hg_unwind_start st;
    HG_UNWIND_START(st);
    uintptr_t pcs[HG_UNWIND_MAX_FRAMES];
    void *raw[HG_UNWIND_MAX_FRAMES];
    int tr, n = 0;
    t_frames = hg_unwind(&st, pcs, max, &tr);
    TIME_BEST(t_fast, 7, 20000, n += hg_unwind(&st, pcs, max, &tr));
    TIME_BEST(t_raw, 7, 3000, n += unw_backtrace(raw, max));
    TIME_BEST(t_cold, 3, 300, hg_unwind_invalidate(); n += hg_unwind(&st, pcs, max, &tr));
    g_sink += n;
}
static NOINLINE int t_leaf(int x) { probe_time("timing", 64, 0, NULL); return x + g_sink; }
static NOINLINE int t_chain(int d, int x) {
    if (d == 0) return t_leaf(x) + 1;
    int r = t_chain(d - 1, x + 1);
    return r + x + g_sink;
}

/* ---- dlopen / dlclose ---- */

static NOINLINE void dl_cb(void) {
    chain_arg a = { "dlopen-lib", 128, EXPECT_FAST, NULL };
    c_leaf(&a, 0);
}
static void run_dl(const char *path) {
    for (int round = 0; round < 3; round++) {
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) { fprintf(stderr, "FAIL dlopen %s: %s\n", path, dlerror()); atomic_fetch_add(&g_fail, 1); return; }
        int (*fn)(void (*)(void), int) = (int (*)(void (*)(void), int))dlsym(h, "hgdl_call");
        if (!fn) { fprintf(stderr, "FAIL dlsym hgdl_call\n"); atomic_fetch_add(&g_fail, 1); dlclose(h); return; }
        unsigned long j0 = 0, l0 = 0, j1, l1;
        for (int i = 0; i < 3; i++) {
            g_sink += fn(dl_cb, 4 + round);
            if (i == 0) taken_stats(&j0, &l0);
        }
        /* The second and third calls walk the first one's stack again: in
         * the library built without unwind tables, frames that follow RBP
         * (no FDE) depend on an RBP the -O2 callback frames pass on
         * unchanged; the shadow (or the memo) must take them, every check
         * passing. */
        taken_stats(&j1, &l1);
        if (hg_unwind_get_shadow() && (j1 - j0 < 2 || l1 != l0)) {
            atomic_fetch_add(&g_fail, 1);
            fprintf(stderr, "FAIL dlopen-lib shadow (%s): joined %lu, left %lu\n", path, j1 - j0, l1 - l0);
        } else {
            atomic_fetch_add(&g_pass, 1);
        }
        dlclose(h);
        hg_unwind_invalidate();
    }
}

int main(int argc, char **argv) {
    g_verbose = getenv("HG_UNWIND_VERBOSE") != NULL;
    hg_unwind_init();
    hg_unwind_attach(t_unwind_state);
    /* check-unwind runs everything with the shadow stack and the memo on,
     * with the shadow alone, and with neither */
    const char *shadow = getenv("HG_UNWIND_SHADOW");
    if (shadow && strcmp(shadow, "0") == 0) hg_unwind_set_shadow(0);
    const char *memo = getenv("HG_UNWIND_MEMO");
    g_memo_on = !(memo && strcmp(memo, "0") == 0);
    if (!g_memo_on) hg_unwind_set_memo(0);
    printf("unwind: shadow stack %s, memo %s\n", hg_unwind_get_shadow() ? "on" : "off",
           hg_unwind_get_shadow() && g_memo_on ? "on" : "off");

    /* chains of several depths, cold then warm cache */
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d <= 12; d += 3)
            run_chain("chain", d, 128, EXPECT_FAST, NULL);
    run_chain("chain-max-equal", 2, 11, EXPECT_FAST, NULL);   /* around the exact length */
    run_chain("chain-max-small", 6, 5, EXPECT_FAST | EXPECT_TRUNC, NULL);
    /* A complete walk is kept, then the same stack is walked with room for
     * fewer frames: a join takes only the kept frames that fit, checked. */
    {
        unsigned long j0 = 0, l0 = 0, j1, l1;
        for (int i = 0; i <= 30; i++) {
            run_chain("chain-kept", 6, 128, EXPECT_FAST, NULL);
            if (i == 0) {   /* the first leaves the last stack's frames: count from here */
                taken_stats(&j0, &l0);
                continue;
            }
            run_chain("chain-join-at-max", 6, 2 + (i - 1) % 15, EXPECT_FAST, NULL);
        }
        taken_stats(&j1, &l1);
        /* on: every walk after the first joins (or is the memo's), and no
         * check fails */
        int on = hg_unwind_get_shadow();
        if (on ? (j1 - j0 == 60 && l1 == l0) : (j1 == j0 && l1 == l0)) {
            atomic_fetch_add(&g_pass, 1);
        } else {
            atomic_fetch_add(&g_fail, 1);
            fprintf(stderr, "FAIL join-at-max: joined %lu, left %lu (shadow %s)\n", j1 - j0, l1 - l0, on ? "on" : "off");
        }
    }

    /* recursion: 200 deep truncated at 64, complete at 256 */
    chain_arg ra = { "recursion-200-max64", 64, EXPECT_FAST | EXPECT_TRUNC, NULL };
    recurse(&ra, 200);
    chain_arg rb = { "recursion-200-max256", 256, EXPECT_FAST, NULL };
    recurse(&rb, 200);
    chain_arg rc = { "recursion-300-max256", 256, EXPECT_FAST | EXPECT_TRUNC, NULL };
    recurse(&rc, 300);

    run_qsort("qsort-comparator", EXPECT_FAST);
    run_noreturn("call-at-function-end", EXPECT_FAST);

    /* signal handler: the checked walk crosses the signal frame */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
    sigaction(SIGUSR1, &sa, NULL);
    raise_sig();
    {
        int seen = 0;
        for (int i = 0; i < g_sig_out.n; i++) seen |= g_sig_out.pcs[i] == g_sig_ra;
        if (seen) atomic_fetch_add(&g_pass, 1);
        else { atomic_fetch_add(&g_fail, 1); fprintf(stderr, "FAIL signal-handler: stack stops at the signal frame\n"); }
    }
    /* the same handler on an alternate signal stack: the walk changes stacks */
    {
        static char alt[64 * 1024] __attribute__((aligned(16)));
        stack_t ss = { .ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0 };
        sigaltstack(&ss, NULL);
        sa.sa_flags = SA_ONSTACK;
        sigaction(SIGUSR1, &sa, NULL);
        memset(&g_sig_out, 0, sizeof g_sig_out);
        raise_sig();
        int seen = 0;
        for (int i = 0; i < g_sig_out.n; i++) seen |= g_sig_out.pcs[i] == g_sig_ra;
        if (seen) atomic_fetch_add(&g_pass, 1);
        else { atomic_fetch_add(&g_fail, 1); fprintf(stderr, "FAIL signal-altstack: stack stops at the signal frame\n"); }
        ss.ss_flags = SS_DISABLE;
        sigaltstack(&ss, NULL);
        sa.sa_flags = 0;
        sigaction(SIGUSR1, &sa, NULL);
    }

    run_coroutine();
    run_shadow();

    /* invalidation, then the same sites again (stale entries get recycled) */
    hg_unwind_invalidate();
    run_chain("chain-after-invalidate", 5, 128, EXPECT_FAST, NULL);

    probe_wild();

    /* shared libraries built on the fly by check-unwind (C, C++ with EH) */
    for (int i = 1; i < argc; i++) run_dl(argv[i]);

    /* threads, concurrently (shared cache, invalidations mixed in); each
     * compares every stack itself, and none may need the slow walk */
    enum { NT = 4 };
    pthread_t th[NT];
    uint64_t fb_threads = hg_unwind_slow_stacks();
    for (long i = 0; i < NT; i++) pthread_create(&th[i], NULL, thread_main, (void *)i);
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    if (hg_unwind_slow_stacks() != fb_threads) {
        atomic_fetch_add(&g_fail, 1);
        fprintf(stderr, "FAIL threads: %llu slow walks\n",
                (unsigned long long)(hg_unwind_slow_stacks() - fb_threads));
    }

    /* timing: a ~12-frame stack, and a 40-frame one for the per-frame slope */
    uint64_t fb = hg_unwind_slow_stacks();
    t_chain(28, 0);
    double deep_fast = t_fast, deep_lu = t_raw;
    int deep_frames = t_frames;
    t_chain(7, 0);
    printf("unwind: %d-frame stack: fast %.1f ns, libunwind %.1f ns, cold cache %.0f ns; "
           "%d frames: fast %.1f ns, libunwind %.1f ns; fast %.2f ns/frame\n",
           t_frames, t_fast, t_raw, t_cold, deep_frames, deep_fast, deep_lu,
           (deep_fast - t_fast) / (deep_frames - t_frames));
    if (hg_unwind_slow_stacks() != fb) {
        atomic_fetch_add(&g_fail, 1);
        fprintf(stderr, "FAIL timing: the hot loop left the stack to the slow walk\n");
    }
    printf("unwind: slow walks %llu, cut short %llu\n",
           (unsigned long long)hg_unwind_slow_stacks(), (unsigned long long)hg_unwind_cut_stacks());
    int p = atomic_load(&g_pass), f = atomic_load(&g_fail);
    printf("%d passed, %d failed\n", p, f);
    return f ? 1 : 0;
}
