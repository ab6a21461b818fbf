/*
 * shim.h — internal state shared by the shim's files. Nothing here is
 * exported from the .so (built with -fvisibility=hidden).
 */
#ifndef HEAPGEN_SHIM_H
#define HEAPGEN_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "heapgen_protocol.h"

#define HG_EXPORT   __attribute__((visibility("default")))
#define HG_LIKELY(x)   __builtin_expect(!!(x), 1)
#define HG_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HG_TLS      __thread __attribute__((tls_model("initial-exec")))

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
    pid_t      collector_pid;
    int        sock_fd;
    int        seg_fd;         /* our memfd, kept for `heapgen mark PID`   */
    uint32_t   epoch;          /* bumped per segment and per dlclose: caches
                                  keyed on (value, epoch) forget old entries */
    uint32_t   segment_gen;    /* bumped per segment: per-thread "announced" */
} hg_shim;

extern hg_shim g_hg;
/* 0: not initialised, 1: initialising, 2: active, 3: inactive for good. */
extern volatile int g_hg_phase;

/* Non-zero while this thread runs shim code that may call back into the
 * allocator (libunwind's fallback, type-name look-ups, module scans).
 * Calls made then pass straight to glibc, untracked. */
extern HG_TLS int hg_guard;

static inline int hg_tracking(void)
{
    return HG_LIKELY(g_hg_phase == 2) && hg_guard == 0 && !g_hg.hdr->detached;
}

/* state.c */
void hg_init_slow(void);
int  hg_collector_alive(void);
void hg_detach(void);

/* ring.c */
int  hg_emit(uint32_t kind, uint64_t addr, uint64_t size, uint32_t ref, uint32_t aux);
void hg_thread_announce(void);
extern HG_TLS uint32_t hg_thread_gen;

/* arena / stacks.c */
uint32_t hg_arena_put(uint32_t tag, const void *a, uint32_t alen,
                      const void *b, uint32_t blen, uint32_t len_field);
/* The stack id of pcs[0..n) (innermost first); `truncated`: the unwinder
 * stopped at the frame limit. 0 (counted in stacks_lost) if it cannot be stored. */
uint32_t hg_stack_intern(const uint64_t *pcs, uint32_t n, int truncated);
void     hg_stacks_reset(void);

/* modules.c */
int  hg_modules_contain_all(const uint64_t *pcs, uint32_t n);
void hg_modules_scan(void);
void hg_modules_reset(void);
void hg_modules_fork_prepare(void);
void hg_modules_fork_parent(void);
void hg_modules_fork_child(void);

/* control.c */
void hg_control_fork_child(void);

/* swift.c */
uint32_t hg_swift_type_id(const void *metadata);
void     hg_swift_reset(void);

/* record.c: the shared tail of every interposed allocation. */
struct hg_unwind_start;
void hg_record_alloc(uint32_t kind, void *p, size_t size, const struct hg_unwind_start *st);
void hg_record_free(uint32_t kind, void *p);

#endif
