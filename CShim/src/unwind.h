/* unwind.h -- fast stack unwinder for the shim's allocation wrappers.
 *
 * The fast path walks the stack with per-return-address CFI rules that are
 * computed once from .eh_frame (found via _dl_find_object) and kept in a
 * lock-free cache.  Anything the fast path cannot prove it handles correctly
 * (signal frames, DWARF expressions, CFA on some other register, a failed
 * bounds check, no FDE) makes the whole stack be redone with libunwind's
 * unw_backtrace, so results are always complete; the fallback is counted.
 *
 * Contract for the caller (the shim):
 *  - Call hg_unwind_init() once before the first hg_unwind() (it is also
 *    done lazily, but doing it early keeps the mmap off the first malloc).
 *  - hg_unwind() must run under the shim's reentrancy guard: the first call
 *    on each thread fetches the thread's stack bounds with
 *    pthread_getattr_np(), which allocates (and on the main thread opens
 *    /proc/self/maps), and the libunwind fallback may allocate too.  Nested
 *    malloc/free calls made from there must pass straight to the real
 *    allocator without unwinding.  hg_unwind_thread_init() does the per-thread
 *    part explicitly, for a shim that wants it at thread start instead.
 *  - Take the start state with HG_UNWIND_START() directly in the interposed
 *    function (malloc, free, ...), never in a helper: it reads that
 *    function's own frame.  The function must keep a frame pointer (the shim
 *    builds with -fno-omit-frame-pointer; __builtin_frame_address(0) forces
 *    one anyway) and must not be inlined into another interposed function.
 *    hg_unwind() itself may be called from a helper, as long as the
 *    interposed function's frame is still live.
 *  - After dlclose() call hg_unwind_invalidate(): cached rules are keyed by
 *    address and the range may be reused by the next mapping.
 *
 * Async-signal-safety: the fast path (cache hit or miss) takes no locks and
 * never allocates.  The first call on a thread and the libunwind fallback are
 * only as safe as pthread_getattr_np / unw_backtrace.
 */
#ifndef HG_UNWIND_H
#define HG_UNWIND_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HG_UNWIND_MAX_FRAMES 256

/* Frame 0 of the unwind: the interposed function's caller. */
typedef struct hg_unwind_start {
    uintptr_t pc;   /* return address into the caller (pcs[0])            */
    uintptr_t cfa;  /* the interposed function's CFA = caller's SP        */
    uintptr_t rbp;  /* caller's RBP (saved by the interposed function)    */
} hg_unwind_start;

/* Fill `st` from the enclosing function's frame-pointer frame.
 * [rbp] = saved caller RBP, [rbp+8] = return address, rbp+16 = CFA. */
#define HG_UNWIND_START(st) do {                                        \
        void *hg_fa__ = __builtin_frame_address(0);                     \
        (st).pc  = (uintptr_t)__builtin_return_address(0);              \
        (st).cfa = (uintptr_t)hg_fa__ + 16;                             \
        (st).rbp = *(const uintptr_t *)hg_fa__;                         \
    } while (0)

enum hg_unwind_mode {
    HG_UNWIND_FAST      = 0,   /* cached CFI rules, libunwind fallback (default) */
    HG_UNWIND_LIBUNWIND = 1,   /* always unw_backtrace (for comparisons)          */
};

/* mmap the rule cache and set libunwind's caching policy.  Idempotent,
 * thread-safe; 0 on success, -1 if the cache could not be mapped (hg_unwind
 * then still works, computing rules on every call). */
int hg_unwind_init(void);

/* Fetch the calling thread's stack bounds (allocates; see above).  Called by
 * hg_unwind() on a thread's first use if the shim has not called it. */
void hg_unwind_thread_init(void);

/* Unwind from `st`: write up to `max` (<= HG_UNWIND_MAX_FRAMES) return
 * addresses to pcs, pcs[0] = st->pc, and return how many.  *truncated is set
 * to 1 if the stack had more frames than `max`, else 0. */
int hg_unwind(const hg_unwind_start *st, uintptr_t *pcs, int max, int *truncated);

/* Treat every cached rule as stale (call after dlclose). */
void hg_unwind_invalidate(void);

/* Stacks the fast path handed to libunwind (not counting HG_UNWIND_LIBUNWIND
 * mode). */
uint64_t hg_unwind_fallbacks(void);

/* Also count fallbacks into *counter (NULL: stop). The shim points this at
 * its segment header. */
void hg_unwind_set_fallback_sink(uint64_t *counter);

/* Fallbacks where libunwind's stack did not contain st->pc near its top, so
 * the leading shim frames were dropped by a fixed count instead (subset of
 * hg_unwind_fallbacks; expected to stay 0). */
uint64_t hg_unwind_fallbacks_unaligned(void);

void hg_unwind_set_mode(int mode);
int  hg_unwind_get_mode(void);

#ifdef __cplusplus
}
#endif
#endif /* HG_UNWIND_H */
