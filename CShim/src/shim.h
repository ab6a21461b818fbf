/*
 * shim.h — internal state shared by the shim's files. Nothing here is
 * exported from the .so (built with -fvisibility=hidden).
 */
#ifndef HEAPGEN_SHIM_H
#define HEAPGEN_SHIM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "heapgen_protocol.h"
#include "heapgen_ring.h"

#define HG_EXPORT   __attribute__((visibility("default")))
#define HG_LIKELY(x)   __builtin_expect(!!(x), 1)
#define HG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HG_TLS      __thread __attribute__((tls_model("initial-exec")))

/* A descriptor the shim made, with the identity it had then: checked
 * (hg_fd_owned) before every use, because the program may have closed the
 * number and got it back for a file or socket of its own. */
typedef struct hg_owned_fd {
    int   fd;                  /* -1: none */
    dev_t dev;
    ino_t ino;
} hg_owned_fd;

/* The segment this process image writes to. Replaced wholesale in a
 * forked child, so every field is read through g_hg. */
typedef struct hg_shim {
    hg_header *hdr;
    hg_slot   *ring;
    uint8_t   *arena;
    uint8_t   *control;        /* control area (request + response regions) */
    uint64_t   control_size;
    uint64_t   ring_mask;
    uint32_t   ring_shift;     /* log2(ring_slots)                          */
    uint32_t   max_frames;
    uint64_t   arena_size;
    uint64_t   arena_half;     /* bytes of each half (see "Arena epochs")  */
    hg_owned_fd conn;          /* our connection, held until the verdict   */
    pid_t      pid;            /* the process this segment belongs to      */
    uint32_t   epoch;          /* bumped per segment and per dlclose: caches
                                  keyed on (value, epoch) forget old entries */
    uint32_t   segment_gen;    /* bumped per segment: per-thread "announced" */
} hg_shim;

extern hg_shim g_hg;
/* 0: not initialised, 1: initialising, 2: active, 3: inactive for good. */
extern volatile int g_hg_phase;

/* Depth of shim code on this thread's stack: the recording path and the
 * slow paths it may take (type-name look-ups through swift_getTypeName,
 * module scans, dlsym), which may call back into the allocator.  A call
 * made while it is non-zero -- from such a slow path, or from a signal
 * handler that interrupted the shim -- is recorded like any other (unwound,
 * interned, emitted) but takes no slow path: its Swift type is taken from
 * the cache only (else id 0), and a module scan it would need is left to
 * the next un-nested call (hg_modules_scan_pending).  Nothing is passed
 * through untracked, except beyond HG_MAX_NESTING levels, which are counted
 * as lost events. */
extern HG_TLS int hg_guard;
#define HG_MAX_NESTING 8
/* The frame that raised hg_guard from 0 (hg_guard_enter). A program that
 * siglongjmps out of a signal handler which interrupted the shim abandons
 * the shim's frames with hg_guard raised; every later call would be taken
 * as nested, and past HG_MAX_NESTING, lost. The next allocation made at or
 * above that frame, on the same stack, finds it gone (hg_guard_recover). */
extern HG_TLS uintptr_t hg_guard_frame;
static inline __attribute__((always_inline)) void hg_guard_enter(void)
{
    if (hg_guard++ == 0)
        hg_guard_frame = (uintptr_t)__builtin_frame_address(0);
}
static inline void hg_guard_leave(void)
{
    hg_guard--;
}
/* hg_guard on entry to an allocation, once abandoned levels are dropped
 * (record.c); `entry` as for hg_frame_gone. */
int hg_guard_recover(uintptr_t entry);

/* Non-zero in the process that owns g_hg's segment. It lives in a page
 * with MADV_WIPEONFORK, so it reads 0 in a child made by a raw clone()
 * (no fork handlers ran) until hg_new_process() has given the child a
 * segment of its own: a child never writes into its parent's ring. */
extern volatile uint32_t *g_hg_armed;
int hg_new_process(void);

/* The hot-path check: one load of a read-mostly word. */
static inline int hg_same_process(void)
{
    return HG_LIKELY(*g_hg_armed != 0) || hg_new_process();
}

static inline int hg_tracking(void)
{
    return HG_LIKELY(g_hg_phase == 2) && hg_same_process() && !g_hg.hdr->detached;
}

/* state.c */
void hg_init_slow(void);
void hg_detach(void);

/* exec.c: finds the C library's exec functions (at start-up). */
void hg_exec_init(void);

/* sandbox.c: 1 once the program installed a seccomp filter; from then on
 * the shim's waits make no system call (see sandbox.c). */
extern int g_hg_sandboxed;
/* 1 if this call entered the sandbox (0: it was in already). */
int hg_enter_sandbox(void);
/* Sleep about ns (in a sandbox: spin). */
void hg_pause(uint64_t ns);
/* sched_yield (in a sandbox: a 1 us spin). */
void hg_yield(void);
static inline int hg_sandboxed(void)
{
    return HG_UNLIKELY(__atomic_load_n(&g_hg_sandboxed, __ATOMIC_RELAXED) != 0);
}

/* 1 once the shim is active (g_hg_phase 2); the first call in a process
 * image sets it up. */
static inline int hg_ready(void)
{
    if (HG_UNLIKELY(g_hg_phase != 2)) {
        if (g_hg_phase == 0)
            hg_init_slow();
        if (g_hg_phase != 2)
            return 0;
    }
    return 1;
}

/* The shim's waits and its few system calls (nanosleep, poll, connect,
 * sendmsg, close) are cancellation points; what it wraps (malloc, free,
 * fork, ...) is not. A thread cancelled in there would lose the block it
 * just allocated, or never free the one it frees. So those stretches run
 * with cancellation disabled; a pending cancel acts at the program's next
 * cancellation point, as without heapgen. (Setting the state is a
 * compare-and-swap on the thread's own word: fine in a signal handler.) */
static inline int hg_cancel_off(void)
{
    int old = PTHREAD_CANCEL_ENABLE;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    return old;
}
static inline void hg_cancel_restore(int old)
{
    if (old != PTHREAD_CANCEL_DISABLE)
        pthread_setcancelstate(old, NULL);
}

/* transport.c */
int   hg_transport_configure(void);
pid_t hg_transport_collector_pid(void);
const char *hg_transport_segment_name(void);
int   hg_connect(hg_owned_fd *out);
int   hg_send_hello(const hg_owned_fd *conn, int memfd, const hg_hello *hello);
int   hg_collector_alive(void);
int   hg_fd_owned(const hg_owned_fd *o);
int   hg_fd_adopt(hg_owned_fd *o, int fd);
void  hg_fd_release(hg_owned_fd *o);

/* environ.c: what descendants inherit (HEAPGEN_FOLLOW) */
void hg_env_configure(void);
int  hg_env_follow_fork(void);
int  hg_env_follow_exec(void);
void hg_env_scrub(void);
/* 1 when envp still preloads this library and names the collector's socket. */
int  hg_env_carries_us(char *const *envp);
/* Whether the program an exec starts could load this library by the path
 * LD_PRELOAD gives (not after a chroot, or in a mount namespace without it:
 * the loader would print an error on the program's stderr). */
int  hg_env_shim_reachable(void);
/* `envp` as the program would have it without heapgen (the collector's
 * variables out, the user's own LD_PRELOAD back), in `room` (cap entries,
 * the terminating NULL included); `envp` itself if it does not fit. */
char *const *hg_env_untraced(char *const *envp, char **room, size_t cap);

/* wait.c: children's exit statuses (HG_K_CHILD_EXIT) */
void hg_wait_init(void);

/* ring.c: a producer's wait for the collector (room in the ring, a half
 * of the stack arena), one shape for both: counted in header.wait_count and
 * wait_ns, the program's errno left as it was (free must not change it:
 * POSIX 2024, glibc; the sleeps and kill() below may), the collector's
 * liveness checked every 20 ms (in a sandbox: by its progress). */
typedef struct hg_collector_wait {
    uint64_t start, last_check;
    uint64_t progress, last_progress;   /* in a sandbox: the collector's, and when it last changed */
    unsigned yields;            /* hg_yield this many times, then sleep 50 us a time */
    int saved_errno;
    int cancel_state;           /* hg_cancel_off's, restored at the end */
} hg_collector_wait;
void hg_collector_wait_begin(hg_collector_wait *w, unsigned yields);
/* One pause; 0 when the collector is gone (seen at most every 20 ms).
 * *elapsed: ns since the wait began. */
int  hg_collector_wait_pause(hg_collector_wait *w, uint64_t *elapsed);
void hg_collector_wait_end(hg_collector_wait *w);

int  hg_emit(uint32_t kind, uint64_t addr, uint64_t size, uint32_t ref, uint32_t aux);
/* 1 if this thread holds a claimed, unpublished ring slot (we are nested in
 * our own emit, e.g. in a signal handler): the collector cannot get past it. */
int  hg_holds_slot(void);
void hg_thread_announce(void);
extern HG_TLS uint32_t hg_thread_gen;
/* 1 + the lowest ring position this thread holds claimed and unpublished
 * (0: none), marked when the claim is of two slots; see ring.c.
 * hg_held_frame: the frame that set it. */
extern HG_TLS uint64_t hg_held;
extern HG_TLS uintptr_t hg_held_frame;
#define HG_HELD_WIDE    (1ull << 62)
#define HG_HELD_POS(h)  ((h) & ~HG_HELD_WIDE)
/* A store to hg_held that a signal handler must find where the code puts
 * it: volatile, or the compiler drops the one before the claim as dead (the
 * next one overwrites it), and a handler that ran between the claim and the
 * publication took itself for not nested and could wait for room behind
 * our own slot forever. The claim (a locked RMW) keeps the stores around it
 * on their sides; the one after the publication needs a signal fence. */
static inline __attribute__((always_inline)) void hg_held_set(uint64_t v)
{
    *(volatile uint64_t *)&hg_held = v;
}
/* The mark before claiming n slots at pos: the caller's frame, the mark, and
 * the frame again (a handler that emitted in between left its own frame
 * there, and one that runs after the mark must find ours). Always inline:
 * the frame is the caller's. */
static inline __attribute__((always_inline)) void hg_held_mark(uint64_t pos, uint64_t n)
{
    const uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
    *(volatile uintptr_t *)&hg_held_frame = frame;
    hg_held_set((pos + 1) | ((n - 1) * HG_HELD_WIDE));
    *(volatile uintptr_t *)&hg_held_frame = frame;
}
/* In an interposed function (always inline): the program's stack pointer at
 * its call, the entry hg_frame_gone compares (the CFA, as HG_UNWIND_START's). */
#define HG_ENTRY_CFA() ((uintptr_t)__builtin_frame_address(0) + 16)
/* A longjmp out of a signal handler that interrupted the shim abandons its
 * frames, and what they held (hg_held, hg_guard). 1 if `entry`, the stack
 * pointer of the program's call into the shim now (its CFA), shows that the
 * frame `then` that took them is gone: a call nested in it (a handler's)
 * is made below it on the same stack, or on a signal stack; one at or above
 * it on the same stack can only come after it was left. */
int hg_frame_gone(uintptr_t entry, uintptr_t then);
/* hg_emit with hg_held set: first, if the frame that claimed it is gone,
 * fills the abandoned slot with NOP records so the collector gets past it.
 * `entry`: as for hg_frame_gone. */
int hg_emit_held(uint32_t kind, uint64_t addr, uint64_t size, uint32_t ref, uint32_t aux, uintptr_t entry);

/* hg_emit's common case, inlined into the allocation and free paths: not
 * nested in an emit of our own, room in the ring, the claim won at the
 * first try. Anything else is hg_emit's (it waits, retries, counts what
 * it loses). Out of line, hg_emit's call and register saves were 34 of
 * its 55 instructions an event. */
static inline __attribute__((always_inline))
int hg_emit_event(uint32_t kind, uint64_t addr, uint64_t size, uint32_t ref, uint32_t aux, uintptr_t entry)
{
    hg_header *h = g_hg.hdr;
    hg_slot *ring = g_hg.ring;
    const uint64_t mask = g_hg.ring_mask;
    const uint32_t shift = g_hg.ring_shift;
    const uint64_t n = hg_ring_record_slots(addr, size, aux);
    uint64_t pos = hg_ring_head(h);
    if (HG_LIKELY(hg_held == 0) && HG_LIKELY(hg_ring_has_room(h, pos, n, mask))) {
        hg_held_mark(pos, n);
        if (HG_LIKELY(hg_ring_claim(h, &pos, n))) {
            hg_ring_publish(ring, mask, pos, shift, kind, addr, size, ref, aux);
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
            hg_held_set(0);
            return 1;
        }
        hg_held_set(0);
    }
    if (HG_UNLIKELY(hg_held != 0))
        return hg_emit_held(kind, addr, size, ref, aux, entry);
    return hg_emit(kind, addr, size, ref, aux);
}

/* arena / stacks.c */
uint32_t hg_arena_put(uint32_t tag, const void *a, uint32_t alen,
                      const void *b, uint32_t blen, uint32_t len_field);
/* The stack id of pcs[0..n) (innermost first); `truncated`: the unwinder
 * stopped at the frame limit. 0 (counted in stacks_lost) if it cannot be stored. */
uint32_t hg_stack_intern(const uint64_t *pcs, uint32_t n, int truncated);
/* The arena epoch the shim stores stacks in now. */
static inline uint64_t hg_arena_epoch_now(void)
{
    return __atomic_load_n(&g_hg.hdr->arena_state, __ATOMIC_RELAXED) >> HG_ARENA_EPOCH_SHIFT;
}
/* 1 when the arena has begun another epoch since `ref` (a tagged ref) was
 * interned: the collector may release its half before it reads the record.
 * (Inline, like hg_stack_memo_get: both run on every allocation.) */
static inline int hg_ref_of_epoch(uint32_t ref, uint64_t epoch)
{
    return ((epoch - (ref >> HG_REF_OFFSET_BITS)) & 0xff) == 0;
}
static inline int hg_stack_stale(uint32_t ref)
{
    return !hg_ref_of_epoch(ref, hg_arena_epoch_now());
}
/* The calling thread's hint for building stacks (its last built one) lives
 * in HG_STACK_THREAD_BYTES of memory (8-aligned) it is given; NULL takes
 * it back. */
#define HG_STACK_THREAD_BYTES 3136
void hg_stack_attach(void *state);
/* A stack's ref kept in two words beside it (hg_unwind_memo's): put after
 * interning, get returns it while it is still the stack's (else 0). */
void hg_stack_memo_put(uint64_t w[2], uint32_t ref);
static inline uint32_t hg_stack_memo_get(const uint64_t w[2])
{
    if (w[0] != hg_arena_epoch_now() + 1 || (uint32_t)(w[1] >> 32) != __atomic_load_n(&g_hg.epoch, __ATOMIC_ACQUIRE))
        return 0;
    return (uint32_t)w[1];
}

/* thread.c: a frame buffer (HG_MAX_FRAMES) of the calling thread, from
 * the block that also holds its unwinder and stack-store state (attached
 * on the first call): one for a call and one for a call nested in it (a
 * signal handler's, or the shim's own slow path's); NULL deeper, or with no
 * block. Give it back when done (nested calls end first). Inline: on every
 * allocation. */
#define HG_FRAME_LEVELS 2
extern HG_TLS uintptr_t *hg_frames;      /* level 0's; NULL: no block (yet, or any more) */
extern HG_TLS int hg_frames_busy;        /* levels in use */
uintptr_t *hg_thread_attach(void);
static inline uintptr_t *hg_thread_frames_take(void)
{
    uintptr_t *f = hg_frames;
    if (HG_UNLIKELY(f == NULL))
        return hg_frames_busy == 0 ? hg_thread_attach() : NULL;
    const int level = hg_frames_busy;
    if (HG_UNLIKELY(level >= HG_FRAME_LEVELS))
        return NULL;
    hg_frames_busy = level + 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return f + (size_t)level * HG_MAX_FRAMES;
}
static inline void hg_thread_frames_give(void)
{
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    hg_frames_busy--;
}

/* modules.c */
int  hg_modules_contain_all(const uint64_t *pcs, uint32_t n);
/* The text the executable's __lsan_default_suppressions() returns, or NULL
 * (lsansupp.c; called at exit, before the leak scan). */
const char *hg_lsan_default_suppressions(void);
/* state.c: --retention-at. Is `label` one of HEAPGEN_RETENTION_AT's? Then
 * hg_retention_scan asks the collector for the graph (the caller waits); `ra`
 * and `ra_slot`: heapgen_mark's return address into the program and where it is. */
int hg_retention_at(const char *label, size_t len);
void hg_retention_scan(const char *label, size_t len, uintptr_t ra, uintptr_t ra_slot);

/* Reads the main program's path now, for the scans to come. */
void hg_modules_init(void);
/* Scans now, or (nested: hg_guard > 0) marks a scan as pending. */
void hg_modules_scan(void);
/* Runs a pending scan; only where hg_guard == 0. Inline: every allocation
 * asks. */
extern int hg_modules_scan_wanted;
static inline void hg_modules_scan_pending(void)
{
    if (HG_UNLIKELY(__atomic_load_n(&hg_modules_scan_wanted, __ATOMIC_RELAXED)))
        hg_modules_scan();
}
void hg_modules_reset(void);
void hg_modules_fork_prepare(void);
void hg_modules_fork_parent(void);
void hg_modules_fork_child(void);

/* control.c; heapgen_control is also the exported API (heapgen.h, where the
 * program sees it weak): declared here as the shim's own, strong. */
void hg_control_fork_child(void);
long heapgen_control(const char *request, char *response, size_t capacity);
long hg_control_from_handler(const char *request, char *response, size_t capacity);

/* swift.c. swift_allocObject leaves the object's metadata, size and
 * unwind start here for the malloc it is about to call (record.c). */
struct hg_unwind_start;
extern HG_TLS const void *hg_swift_metadata;
extern HG_TLS size_t hg_swift_size;
extern HG_TLS const struct hg_unwind_start *hg_swift_start;
uint32_t hg_swift_type_id(const void *metadata);        /* may name it: slow path */
uint32_t hg_swift_type_id_cached(const void *metadata); /* cache only, else 0     */
void     hg_swift_reset(void);

/* record.c: the shared tail of every interposed allocation. */
void hg_record_alloc(uint32_t kind, void *p, size_t size, const struct hg_unwind_start *st);
/* A free (or a realloc's old block): before the allocator runs. Inline: a
 * free is about half of a program's allocator calls and needs no stack. */
static inline __attribute__((always_inline)) void hg_record_free(uint32_t kind, void *p)
{
    if (HG_UNLIKELY(hg_thread_gen != g_hg.segment_gen))
        hg_thread_announce();
    hg_emit_event(kind, (uint64_t)(uintptr_t)p, 0, 0, 0, HG_ENTRY_CFA());
}
/* An allocation or free that cannot be recorded (nesting too deep): counted. */
void hg_record_lost(void);

#endif
