/*
 * interpose.c — the allocation entry points, plus dlclose and the public
 * heapgen_mark.
 *
 * Every wrapper calls the allocator the program would have used without
 * heapgen: the next definition after the shim in symbol order (glibc's, or
 * libjemalloc's in a program linked with it; see nextalloc.c), so blocks,
 * sizes and the allocator's own statistics stay its own. Frees are published
 * before the real free runs and allocations after the real allocator
 * returned: see heapgen_protocol.h for why.
 *
 * The family: malloc, free, calloc, realloc, reallocarray, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc, malloc_usable_size (forwarded),
 * free_sized / free_aligned_sized (C23; glibc 2.36 has neither: then free),
 * and jemalloc's non-standard API, recorded under the nearest standard name
 * (the trace has no codes of its own for them): mallocx as malloc, rallocx
 * as realloc, xallocx as realloc at the same address (a successful in-place
 * resize is a free + allocation of the new requested size; a failed one
 * changes nothing), dallocx / sdallocx as free; sallocx and nallocx are
 * forwarded.
 *
 * A shared library cannot export a symbol only sometimes, so a program
 * without jemalloc still finds mallocx & co in the shim (a weak reference or
 * dlsym(RTLD_DEFAULT, "mallocx") is no longer NULL). They then answer as an
 * allocator that cannot serve the request: mallocx/rallocx return NULL with
 * errno ENOMEM, nallocx 0 ("size out of range"), xallocx the unchanged
 * usable size ("cannot resize in place"), sallocx the usable size;
 * dallocx/sdallocx free the block. A program that trusts the probe alone
 * would take its jemalloc path and see allocation failures; programs that
 * also probe mallctl (folly, for one) see no jemalloc, as without heapgen.
 *
 * C++ operator new/delete are not interposed: libstdc++'s call malloc and
 * are recorded there. An allocator that defines its own (libjemalloc,
 * libtcmalloc), bound ahead of libstdc++, serves new without malloc: the
 * shim detects that case and the collector warns (HG_ALLOC_CXX_DIRECT).
 * tcmalloc's tc_* entry points are likewise not wrapped.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "shim.h"
#include "nextalloc.h"
#include "unwind.h"

/* First call in a process image sets everything up. Calls nested in the
 * shim (its slow paths, or a signal handler that interrupted it) are
 * recorded too (see hg_guard in shim.h); only a runaway nesting passes
 * through, counted as lost. */
static inline int active(void)
{
    if (!hg_ready())
        return 0;
    if (HG_UNLIKELY(hg_guard >= HG_MAX_NESTING) &&
        hg_guard_recover(HG_ENTRY_CFA()) >= HG_MAX_NESTING) {
        hg_record_lost();
        return 0;
    }
    return hg_same_process() && !g_hg.hdr->detached;
}

HG_EXPORT void *malloc(size_t n)
{
    if (!active())
        return hg_next.malloc(n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = hg_next.malloc(n);
    if (p)
        hg_record_alloc(HG_K_MALLOC, p, n, &st);
    return p;
}

HG_EXPORT void free(void *p)
{
    if (!active()) {
        hg_next.free(p);
        return;
    }
    if (p == NULL) {
        __atomic_fetch_add(&g_hg.hdr->free_null, 1, __ATOMIC_RELAXED);
        return;
    }
    hg_record_free(HG_K_FREE, p);
    hg_next.free(p);
}

HG_EXPORT void *calloc(size_t nmemb, size_t size)
{
    if (!active())
        return hg_next.calloc(nmemb, size);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = hg_next.calloc(nmemb, size);
    if (p)
        hg_record_alloc(HG_K_CALLOC, p, nmemb * size, &st);
    return p;
}

/* The call behind realloc and reallocarray: the allocator's own
 * reallocarray when it has one, else realloc (what glibc's does). */
static void *realloc_call(void *old, size_t n, size_t nmemb, size_t size, int array)
{
    if (array && !hg_next_reallocarray_via_realloc)
        return hg_next.reallocarray(old, nmemb, size);
    return hg_next.realloc(old, n);
}

/* realloc and reallocarray: the old block is published as freed first; if
 * the call fails it is announced live again (REALLOC_UNDO). */
static void *realloc_common(void *old, size_t n, uint32_t kind, const hg_unwind_start *st,
                            size_t nmemb, size_t size)
{
    int array = kind == HG_K_REALLOCARRAY;
    if (old == NULL) {
        void *p = realloc_call(NULL, n, nmemb, size, array);
        if (p)
            hg_record_alloc(kind, p, n, st);
        return p;
    }
    hg_record_free(HG_K_REALLOC_FREE, old);
    void *p = realloc_call(old, n, nmemb, size, array);
    if (p != NULL)
        hg_record_alloc(kind, p, n, st);
    else if (n != 0)
        hg_record_free(HG_K_REALLOC_UNDO, old);   /* failed: old block lives on */
    /* n == 0 and NULL: the allocator freed the block, which is what we published. */
    return p;
}

HG_EXPORT void *realloc(void *old, size_t n)
{
    if (!active())
        return hg_next.realloc(old, n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    return realloc_common(old, n, HG_K_REALLOC_NEW, &st, 0, 0);
}

HG_EXPORT void *reallocarray(void *old, size_t nmemb, size_t size)
{
    hg_next_ensure();
    size_t n;
    if (__builtin_mul_overflow(nmemb, size, &n)) {
        if (!hg_next_reallocarray_via_realloc)
            return hg_next.reallocarray(old, nmemb, size);  /* its own error */
        errno = ENOMEM;
        return NULL;
    }
    if (!active())
        return realloc_call(old, n, nmemb, size, 1);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    return realloc_common(old, n, HG_K_REALLOCARRAY, &st, nmemb, size);
}

HG_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (!active())
        return hg_next.posix_memalign(out, align, n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p;
    int rc = hg_next.posix_memalign(&p, align, n);
    if (rc != 0)
        return rc;
    hg_record_alloc(HG_K_POSIX_MEMALIGN, p, n, &st);
    *out = p;
    return 0;
}

HG_EXPORT void *aligned_alloc(size_t align, size_t n)
{
    if (!active())
        return hg_next.aligned_alloc(align, n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = hg_next.aligned_alloc(align, n);
    if (p)
        hg_record_alloc(HG_K_ALIGNED_ALLOC, p, n, &st);
    return p;
}

HG_EXPORT void *memalign(size_t align, size_t n)
{
    if (!active())
        return hg_next.memalign(align, n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = hg_next.memalign(align, n);
    if (p)
        hg_record_alloc(HG_K_MEMALIGN, p, n, &st);
    return p;
}

HG_EXPORT void *valloc(size_t n)
{
    if (!active())
        return hg_next.valloc(n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = hg_next.valloc(n);
    if (p)
        hg_record_alloc(HG_K_VALLOC, p, n, &st);
    return p;
}

HG_EXPORT void *pvalloc(size_t n)
{
    if (!active())
        return hg_next.pvalloc(n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = hg_next.pvalloc(n);
    if (p) {
        /* The block is the whole pages: pvalloc rounds the size up (0 to one
         * page), and the program may use all of it. */
        const size_t page = (size_t)sysconf(_SC_PAGESIZE);
        hg_record_alloc(HG_K_PVALLOC, p, n == 0 ? page : (n + page - 1) & ~(page - 1), &st);
    }
    return p;
}

/* Sizes are the allocator's: a block from jemalloc must be measured by
 * jemalloc (redis calls this on every allocation). */
HG_EXPORT size_t malloc_usable_size(void *p)
{
    return hg_next.malloc_usable_size(p);
}

/* Frees that bypass free(): published first, like free. */
static inline int record_free_call(void *p)
{
    if (!active() || p == NULL)
        return 0;
    hg_record_free(HG_K_FREE, p);
    return 1;
}

HG_EXPORT void free_sized(void *p, size_t size)
{
    hg_next_ensure();
    record_free_call(p);
    if (hg_next.free_sized)
        hg_next.free_sized(p, size);
    else
        hg_next.free(p);
}

HG_EXPORT void free_aligned_sized(void *p, size_t align, size_t size)
{
    hg_next_ensure();
    record_free_call(p);
    if (hg_next.free_aligned_sized)
        hg_next.free_aligned_sized(p, align, size);
    else
        hg_next.free(p);
}

/* ---- jemalloc's non-standard API (absent next: see the top of this file) */

HG_EXPORT void *mallocx(size_t size, int flags)
{
    hg_next_ensure();
    if (HG_UNLIKELY(hg_next.mallocx == NULL)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!active())
        return hg_next.mallocx(size, flags);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = hg_next.mallocx(size, flags);
    if (p)
        hg_record_alloc(HG_K_MALLOC, p, size, &st);
    return p;
}

HG_EXPORT void *rallocx(void *old, size_t size, int flags)
{
    hg_next_ensure();
    if (HG_UNLIKELY(hg_next.rallocx == NULL)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!active() || old == NULL)
        return hg_next.rallocx(old, size, flags);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    hg_record_free(HG_K_REALLOC_FREE, old);
    void *p = hg_next.rallocx(old, size, flags);
    if (p)
        hg_record_alloc(HG_K_REALLOC_NEW, p, size, &st);
    else
        hg_record_free(HG_K_REALLOC_UNDO, old);
    return p;
}

/* In place: the address stays this caller's throughout, so both records
 * can follow the call. Resized (result >= size): the block now has the new
 * requested size, as after a realloc that did not move. */
HG_EXPORT size_t xallocx(void *p, size_t size, size_t extra, int flags)
{
    hg_next_ensure();
    if (HG_UNLIKELY(hg_next.xallocx == NULL))
        return p ? hg_next.malloc_usable_size(p) : 0;
    if (!active() || p == NULL)
        return hg_next.xallocx(p, size, extra, flags);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    size_t r = hg_next.xallocx(p, size, extra, flags);
    if (r >= size) {
        hg_record_free(HG_K_REALLOC_FREE, p);
        hg_record_alloc(HG_K_REALLOC_NEW, p, size, &st);
    }
    return r;
}

HG_EXPORT size_t sallocx(const void *p, int flags)
{
    hg_next_ensure();
    if (HG_UNLIKELY(hg_next.sallocx == NULL))
        return p ? hg_next.malloc_usable_size((void *)p) : 0;
    return hg_next.sallocx(p, flags);
}

HG_EXPORT size_t nallocx(size_t size, int flags)
{
    hg_next_ensure();
    if (HG_UNLIKELY(hg_next.nallocx == NULL))
        return 0;
    return hg_next.nallocx(size, flags);
}

HG_EXPORT void dallocx(void *p, int flags)
{
    hg_next_ensure();
    record_free_call(p);
    if (HG_LIKELY(hg_next.dallocx != NULL))
        hg_next.dallocx(p, flags);
    else
        hg_next.free(p);
}

HG_EXPORT void sdallocx(void *p, size_t size, int flags)
{
    hg_next_ensure();
    record_free_call(p);
    if (HG_LIKELY(hg_next.sdallocx != NULL))
        hg_next.sdallocx(p, size, flags);
    else
        hg_next.free(p);
}

/* dlclose may unmap code: forget cached unwind rules and stacks (their
 * addresses may name different code later) and announce the unload. */
typedef int (*dlclose_fn)(void *);
HG_EXPORT int dlclose(void *handle)
{
    static dlclose_fn real;
    if (!real) {
        hg_guard_enter();
        real = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
        hg_guard_leave();
        if (!real)
            return -1;
    }
    int r = real(handle);
    if (hg_tracking()) {
        __atomic_add_fetch(&g_hg.epoch, 1, __ATOMIC_RELEASE);
        hg_unwind_invalidate();
        hg_modules_scan();
    }
    return r;
}

HG_EXPORT void heapgen_mark(const char *label)
{
    /* For --retention-at: the return address into the program, and where it
     * is (the frame address forces a frame record here; the address sits
     * right above it). Taken here, not in the unlikely branch, which the
     * compiler may move into a function of its own (heapgen_mark.cold). */
    void **frame = __builtin_frame_address(0);
    uintptr_t ra = (uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" : : "r"(frame), "r"(ra));
    if (!active())
        return;
    if (HG_UNLIKELY(hg_thread_gen != g_hg.segment_gen))
        hg_thread_announce();
    uint64_t ns = hg_clock_ns();
    if (label == NULL)
        label = "";
    size_t len = strnlen(label, 4000);
    static const char nul = 0;
    uint32_t ref = hg_arena_put(HG_BLOB_STRING, label, (uint32_t)len, &nul, 1, (uint32_t)len + 1);
    hg_emit(HG_K_MARK, 0, ns, ref, 0);
    if (HG_UNLIKELY(hg_retention_at(label, len)))
        hg_retention_scan(label, len, ra, (uintptr_t)(frame + 1));
}

HG_EXPORT int heapgen_is_tracing(void)
{
    return active();
}
