/*
 * record.c — the common tail of every interposed allocation and free:
 * unwind, intern the stack, publish one ring record.
 */
#include "shim.h"
#include "unwind.h"

extern HG_TLS const void *hg_swift_metadata;
extern HG_TLS size_t hg_swift_size;
extern HG_TLS const hg_unwind_start *hg_swift_start;

void hg_record_alloc(uint32_t kind, void *p, size_t size, const hg_unwind_start *st)
{
    if (HG_UNLIKELY(hg_thread_gen != g_hg.segment_gen))
        hg_thread_announce();

    uint32_t type = 0;
    if (HG_UNLIKELY(hg_swift_metadata != NULL) && hg_swift_size == size) {
        /* The block of a Swift object: start the stack at the code that
         * called swift_allocObject, and attach the type. */
        const void *md = hg_swift_metadata;
        st = hg_swift_start;
        hg_swift_metadata = NULL;
        type = hg_swift_type_id(md);
    }

    uintptr_t pcs[HG_MAX_FRAMES];
    int truncated = 0;
    /* The fallback unwinder and the first per-thread set-up may allocate. */
    hg_guard++;
    int n = hg_unwind(st, pcs, (int)g_hg.max_frames, &truncated);
    hg_guard--;
    uint32_t ref = 0;
    if (n > 0) {
        hg_guard++;
        ref = hg_stack_intern((const uint64_t *)pcs, (uint32_t)n, truncated);
        hg_guard--;
    }
    hg_emit(kind, (uint64_t)(uintptr_t)p, size, ref, type);
}

void hg_record_free(uint32_t kind, void *p)
{
    if (HG_UNLIKELY(hg_thread_gen != g_hg.segment_gen))
        hg_thread_announce();
    hg_emit(kind, (uint64_t)(uintptr_t)p, 0, 0, 0);
}
