/*
 * record.c — the common tail of every interposed allocation and free:
 * unwind, intern the stack, publish one ring record.
 *
 * Re-entrant: a signal handler that interrupts this path, or an allocation
 * made by one of its slow paths (swift_getTypeName, dlsym), runs through it
 * again, nested.  Everything a nested call does is lock-free and allocation-
 * free (the unwinder, the stack store, the ring); the slow paths are taken
 * only by the outermost call (hg_guard == 0 on entry): see shim.h.
 */
#include "shim.h"
#include "unwind.h"

/* Unwinds from st into pcs (room for max frames), interns the stack and
 * publishes the allocation. Entered with hg_guard raised by one. */
static inline __attribute__((always_inline))
void record(uint32_t kind, void *p, size_t size, const hg_unwind_start *st, uint32_t type, int nested,
            uintptr_t *pcs, int max)
{
    int truncated = 0;
    uint64_t *memo;
    const uintptr_t *frames;
    int n = hg_unwind_memo(st, pcs, max, &truncated, &memo, &frames);
    uint32_t ref = 0;
    if (memo != NULL) {
        /* A stack the thread walked before: its ref too, while the arena
         * still holds it (else interned once more and kept). */
        ref = hg_stack_memo_get(memo);
        if (ref == 0) {
            ref = hg_stack_intern((const uint64_t *)frames, (uint32_t)n, truncated);
            hg_stack_memo_put(memo, ref);
        }
    } else if (n > 0) {
        ref = hg_stack_intern((const uint64_t *)frames, (uint32_t)n, truncated);
    }
    hg_guard_leave();
    /* A scan the stack store asked for while guarded (a frame in a module
     * loaded since the last scan): announce the module before the event
     * that refers to it.  A nested call leaves it to the outermost one. */
    if (!nested)
        hg_modules_scan_pending();
    /* The arena began another epoch while this thread was between
     * interning and publishing (preempted, a module scan): the collector may
     * release the stack's half before it reads our record, and the shim then
     * write over it. Store the stack again in the current epoch. What is
     * left: a switch in the few instructions before the claim, and then a
     * collector a whole half and its release grace behind. */
    if (HG_UNLIKELY(ref != 0 && hg_stack_stale(ref))) {
        hg_guard_enter();
        ref = hg_stack_intern((const uint64_t *)frames, (uint32_t)n, truncated);
        hg_guard_leave();
    }
    /* (The memo entry's frames were in use until here.) */
    if (memo != NULL)
        hg_unwind_memo_done();
    hg_emit_event(kind, (uint64_t)(uintptr_t)p, size, ref, type, st->cfa);
}

/* Without a frame buffer of the thread's (nested two deep in the shim, or
 * none to be had): 64 frames on this stack. Out of line, so the common
 * path's frame stays small. */
#define HG_SMALL_FRAMES 64
static void __attribute__((noinline))
record_small(uint32_t kind, void *p, size_t size, const hg_unwind_start *st, uint32_t type, int nested)
{
    uintptr_t pcs[HG_SMALL_FRAMES];
    const int max = g_hg.max_frames < HG_SMALL_FRAMES ? (int)g_hg.max_frames : HG_SMALL_FRAMES;
    record(kind, p, size, st, type, nested, pcs, max);
}

/* See hg_guard_frame (shim.h). A call nested in the shim runs below the
 * frame that raised the guard, on the same stack or on a signal stack; this
 * one, at or above it on the same stack, means that frame and every level
 * raised below it are gone: the guard, the memo's and the frame buffers'
 * busy marks are dropped. (A ring slot they left claimed is filled by the
 * next emit: hg_emit_held.) */
int hg_guard_recover(uintptr_t entry)
{
    if (hg_guard < 0)           /* a level left by a frame taken for gone, which was not */
        hg_guard = 0;
    if (hg_guard == 0 || !hg_frame_gone(entry, hg_guard_frame))
        return hg_guard;
    hg_guard = 0;
    hg_frames_busy = 0;
    if (hg_unwind_busy != NULL)
        hg_unwind_memo_done();  /* the busy mark a memo hit leaves */
    return 0;
}

void hg_record_alloc(uint32_t kind, void *p, size_t size, const hg_unwind_start *st)
{
    if (HG_UNLIKELY(hg_thread_gen != g_hg.segment_gen))
        hg_thread_announce();

    int nested = hg_guard;
    if (HG_UNLIKELY(nested != 0))
        nested = hg_guard_recover(st->cfa);
    hg_guard_enter();
    uint32_t type = 0;
    if (HG_UNLIKELY(hg_swift_metadata != NULL) && hg_swift_size == size) {
        /* The block of a Swift object: start the stack at the code that
         * called swift_allocObject, and attach the type. */
        const void *md = hg_swift_metadata;
        st = hg_swift_start;
        hg_swift_metadata = NULL;
        type = nested ? hg_swift_type_id_cached(md) : hg_swift_type_id(md);
    }
    uintptr_t *pcs = hg_thread_frames_take();
    if (HG_UNLIKELY(pcs == NULL)) {
        record_small(kind, p, size, st, type, nested);
        return;
    }
    record(kind, p, size, st, type, nested, pcs, (int)g_hg.max_frames);
    hg_thread_frames_give();
}

void hg_record_lost(void)
{
    if (g_hg_phase == 2 && g_hg.hdr != NULL)
        __atomic_fetch_add(&g_hg.hdr->lost_events, 1, __ATOMIC_RELAXED);
}
