/* unwind.h -- stack unwinder for the shim's allocation wrappers.
 *
 * Walks the stack with per-return-address CFI rules computed once from
 * .eh_frame (found via _dl_find_object) and kept in a lock-free cache.
 * Signal frames (glibc's rt_sigreturn trampoline), frames without an FDE
 * (frame-pointer guess) and stacks the thread does not own are handled too;
 * where no sound rule is left (CFI we cannot express, memory that cannot be
 * read) the stack stops there and is reported cut short.
 *
 * Contract for the caller (the shim):
 *  - Calling hg_unwind_init() once early keeps the cache's mmap off the first
 *    malloc (it is also done lazily).
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
 * Async-signal-safety: hg_unwind takes no locks, never allocates, and never
 * opens, reads or writes a file descriptor (no libunwind: its memory
 * validation uses a pipe inside the target).  Memory outside the part of the
 * stack known to be mapped is read with process_vm_readv on ourselves, which
 * fails instead of faulting.  So it may run in a signal handler that
 * interrupted another hg_unwind on the same thread.
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

/* Only the CFI unwinder exists since libunwind left the shim; HEAPGEN_UNWIND
 * =libunwind (state.c still passes it on) has no effect any more. */
enum hg_unwind_mode {
    HG_UNWIND_FAST      = 0,
    HG_UNWIND_LIBUNWIND = 1,   /* accepted, ignored */
};

/* How a stack ended early (*truncated of hg_unwind). */
enum {
    HG_UNWIND_TRUNC_MAX = 1,   /* more frames than `max`                       */
    HG_UNWIND_TRUNC_CUT = 2,   /* the unwinder could not continue (counted)    */
};

/* mmap the rule cache, note RLIMIT_STACK.  Idempotent, thread-safe; 0 on
 * success, -1 if the cache could not be mapped (hg_unwind then still works,
 * computing rules on every call). */
int hg_unwind_init(void);

/* Unwind from `st`: write up to `max` (<= HG_UNWIND_MAX_FRAMES) return
 * addresses to pcs, pcs[0] = st->pc, and return how many.  Below a signal
 * frame the entry is the interrupted instruction's address itself.
 * *truncated is 0 for a complete stack, else HG_UNWIND_TRUNC_*. */
int hg_unwind(const hg_unwind_start *st, uintptr_t *pcs, int max, int *truncated);

/* hg_unwind for a caller that keeps something per stack (the shim: its
 * stack store ref). When the stack is one of the thread's memo entries
 * (unwind.c, "The memo of whole stacks"), *user points at that entry's two
 * words, which are zero when the entry was just (re)written, and the
 * thread's shadow stays busy (walks of signal handlers meanwhile use rules
 * only) until hg_unwind_memo_done(), which the caller must call then.
 * Otherwise *user is NULL and nothing is held. The frames are at *frames:
 * pcs, or the entry's own copy when the walk was answered from it (pcs is
 * not written then; the copy stays as it is until hg_unwind_memo_done). */
int hg_unwind_memo(const hg_unwind_start *st, uintptr_t *pcs, int max, int *truncated, uint64_t **user,
                   const uintptr_t **frames);
/* The calling thread's shadow's busy word (NULL: none attached). */
extern __thread uint32_t *hg_unwind_busy __attribute__((tls_model("initial-exec")));
/* Inline: on every allocation whose stack is a memo entry. */
static inline void hg_unwind_memo_done(void)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    *hg_unwind_busy = 0;
}
/* The calling thread's walks answered by a memo entry, and those that found
 * one's slots changed (for tests). */
void hg_unwind_memo_stats(unsigned long *hits, unsigned long *left);
/* The memo alone off (on by default; off with the shadow too): for
 * comparing (HEAPGEN_UNWIND_MEMO=0). */
void hg_unwind_set_memo(int on);

/* allowed 0: from now on make no system call (the program is entering a
 * seccomp sandbox): stacks that would need one to be walked safely are cut
 * there instead. 1: again (the kernel refused the filter). */
void hg_unwind_set_syscalls(int allowed);

/* Treat every cached rule as stale (call after dlclose). */
void hg_unwind_invalidate(void);

/* Stacks cut short (HG_UNWIND_TRUNC_CUT) so far. */
uint64_t hg_unwind_cut_stacks(void);

/* Stacks that needed the checked frame-by-frame walk (signal frames, frames
 * without CFI and an unusual frame pointer, memory off the known stack). */
uint64_t hg_unwind_slow_stacks(void);

/* Also count cut stacks into *counter (NULL: stop).  The shim points this at
 * its segment header's unwind_fallbacks (the field kept its name). */
void hg_unwind_set_fallback_sink(uint64_t *counter);

/* The calling thread's shadow and memo live in HG_UNWIND_THREAD_BYTES of
 * memory (64-byte aligned) its owner gives it, zeroed here; NULL takes it
 * back (walks then use rules only, as before the first attach). Not in
 * static TLS: that comes out of every thread's stack. */
#define HG_UNWIND_THREAD_BYTES 12288
void hg_unwind_attach(void *state);

/* The per-thread shadow of the last stack (unwind.c, "The shadow of the
 * last stack"): on by default.  Off, every frame is walked with its rule;
 * the stacks are the same either way (HEAPGEN_UNWIND_SHADOW=0 turns it off,
 * for comparing). */
void hg_unwind_set_shadow(int on);
int  hg_unwind_get_shadow(void);
/* The calling thread's walks so far that joined its kept frames, and those
 * of them that found a kept slot changed and went on by rules (for tests). */
void hg_unwind_shadow_stats(unsigned long *joined, unsigned long *left);

void hg_unwind_set_mode(int mode);
int  hg_unwind_get_mode(void);

#ifdef __cplusplus
}
#endif
#endif /* HG_UNWIND_H */
