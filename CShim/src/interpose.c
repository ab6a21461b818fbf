/*
 * interpose.c — the glibc allocation entry points, plus dlclose and the
 * public heapgen_mark.
 *
 * Every wrapper calls glibc's exported __libc_* functions directly, so
 * there is no dlsym bootstrap problem and nothing allocates before we can
 * record. Frees are published before the real free runs and allocations
 * after the real allocator returned: see heapgen_protocol.h for why.
 *
 * posix_memalign and aligned_alloc have no __libc_ twin; both are built on
 * __libc_memalign with POSIX's argument rules.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "shim.h"
#include "unwind.h"

extern void *__libc_malloc(size_t);
extern void  __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* First call in a process image sets everything up. Calls nested in the
 * shim (its slow paths, or a signal handler that interrupted it) are
 * recorded too (see hg_guard in shim.h); only a runaway nesting passes
 * through, counted as lost. */
static inline int active(void)
{
    if (HG_UNLIKELY(g_hg_phase != 2)) {
        if (g_hg_phase == 0)
            hg_init_slow();
        if (g_hg_phase != 2)
            return 0;
    }
    if (HG_UNLIKELY(hg_guard >= HG_MAX_NESTING)) {
        hg_record_lost();
        return 0;
    }
    return !g_hg.hdr->detached;
}

HG_EXPORT void *malloc(size_t n)
{
    if (!active())
        return __libc_malloc(n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = __libc_malloc(n);
    if (p)
        hg_record_alloc(HG_K_MALLOC, p, n, &st);
    return p;
}

HG_EXPORT void free(void *p)
{
    if (!active()) {
        __libc_free(p);
        return;
    }
    if (p == NULL) {
        __atomic_fetch_add(&g_hg.hdr->free_null, 1, __ATOMIC_RELAXED);
        return;
    }
    hg_record_free(HG_K_FREE, p);
    __libc_free(p);
}

HG_EXPORT void *calloc(size_t nmemb, size_t size)
{
    if (!active())
        return __libc_calloc(nmemb, size);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = __libc_calloc(nmemb, size);
    if (p)
        hg_record_alloc(HG_K_CALLOC, p, nmemb * size, &st);
    return p;
}

/* realloc and reallocarray: the old block is published as freed first; if
 * the call fails it is announced live again (REALLOC_UNDO). */
static void *realloc_common(void *old, size_t n, uint32_t kind, const hg_unwind_start *st)
{
    if (old == NULL) {
        void *p = __libc_realloc(NULL, n);
        if (p)
            hg_record_alloc(kind, p, n, st);
        return p;
    }
    hg_record_free(HG_K_REALLOC_FREE, old);
    void *p = __libc_realloc(old, n);
    if (p != NULL)
        hg_record_alloc(kind, p, n, st);
    else if (n != 0)
        hg_record_free(HG_K_REALLOC_UNDO, old);   /* failed: old block lives on */
    /* n == 0 and NULL: glibc freed the block, which is what we published. */
    return p;
}

HG_EXPORT void *realloc(void *old, size_t n)
{
    if (!active())
        return __libc_realloc(old, n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    return realloc_common(old, n, HG_K_REALLOC_NEW, &st);
}

HG_EXPORT void *reallocarray(void *old, size_t nmemb, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(nmemb, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!active())
        return __libc_realloc(old, n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    return realloc_common(old, n, HG_K_REALLOCARRAY, &st);
}

HG_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0 || align == 0)
        return EINVAL;
    if (!active()) {
        void *p = __libc_memalign(align, n);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    hg_record_alloc(HG_K_POSIX_MEMALIGN, p, n, &st);
    *out = p;
    return 0;
}

HG_EXPORT void *aligned_alloc(size_t align, size_t n)
{
    if (!active())
        return __libc_memalign(align, n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = __libc_memalign(align, n);
    if (p)
        hg_record_alloc(HG_K_ALIGNED_ALLOC, p, n, &st);
    return p;
}

HG_EXPORT void *memalign(size_t align, size_t n)
{
    if (!active())
        return __libc_memalign(align, n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = __libc_memalign(align, n);
    if (p)
        hg_record_alloc(HG_K_MEMALIGN, p, n, &st);
    return p;
}

HG_EXPORT void *valloc(size_t n)
{
    if (!active())
        return __libc_valloc(n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = __libc_valloc(n);
    if (p)
        hg_record_alloc(HG_K_VALLOC, p, n, &st);
    return p;
}

HG_EXPORT void *pvalloc(size_t n)
{
    if (!active())
        return __libc_pvalloc(n);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    void *p = __libc_pvalloc(n);
    if (p)
        hg_record_alloc(HG_K_PVALLOC, p, n, &st);
    return p;
}

/* dlclose may unmap code: forget cached unwind rules and stacks (their
 * addresses may name different code later) and announce the unload. */
typedef int (*dlclose_fn)(void *);
HG_EXPORT int dlclose(void *handle)
{
    static dlclose_fn real;
    if (!real) {
        hg_guard++;
        real = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
        hg_guard--;
        if (!real)
            return -1;
    }
    int r = real(handle);
    if (g_hg_phase == 2 && hg_guard == 0 && !g_hg.hdr->detached) {
        __atomic_add_fetch(&g_hg.epoch, 1, __ATOMIC_RELEASE);
        hg_unwind_invalidate();
        hg_modules_scan();
    }
    return r;
}

HG_EXPORT void heapgen_mark(const char *label)
{
    if (!active())
        return;
    if (HG_UNLIKELY(hg_thread_gen != g_hg.segment_gen))
        hg_thread_announce();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (label == NULL)
        label = "";
    size_t len = strnlen(label, 4000);
    static const char nul = 0;
    uint32_t ref = hg_arena_put(HG_BLOB_STRING, label, (uint32_t)len, &nul, 1, (uint32_t)len + 1);
    hg_emit(HG_K_MARK, 0, ns, ref, 0);
}

HG_EXPORT int heapgen_is_tracing(void)
{
    return active();
}
