/*
 * nextalloc.h — the allocator the program would have used without heapgen:
 * for each function of the malloc family, the next definition after the
 * shim in symbol-search order (what dlsym(RTLD_NEXT, name) would return).
 * interpose.c calls these pointers; nextalloc.c finds them.
 */
#ifndef HEAPGEN_NEXTALLOC_H
#define HEAPGEN_NEXTALLOC_H

#include <stddef.h>
#include "heapgen_protocol.h"

typedef struct hg_next_fns {
    void  *(*malloc)(size_t);
    void   (*free)(void *);
    void  *(*calloc)(size_t, size_t);
    void  *(*realloc)(void *, size_t);
    void  *(*reallocarray)(void *, size_t, size_t);
    int    (*posix_memalign)(void **, size_t, size_t);
    void  *(*aligned_alloc)(size_t, size_t);
    void  *(*memalign)(size_t, size_t);
    void  *(*valloc)(size_t);
    void  *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);
    void   (*free_sized)(void *, size_t);
    void   (*free_aligned_sized)(void *, size_t, size_t);
    /* jemalloc's non-standard API: NULL when the next allocator lacks it. */
    void  *(*mallocx)(size_t, int);
    void  *(*rallocx)(void *, size_t, int);
    size_t (*xallocx)(void *, size_t, size_t, int);
    size_t (*sallocx)(const void *, int);
    void   (*dallocx)(void *, int);
    void   (*sdallocx)(void *, size_t, int);
    size_t (*nallocx)(size_t, int);
} hg_next_fns;

/* Starts as trampolines that resolve on first use (the first call of any
 * family function, before any block is handed out), then holds the real
 * entry points. Read with plain loads: each pointer is written once with
 * the same value by whichever thread resolves first. */
extern hg_next_fns hg_next;

/* 1 when the next reallocarray is glibc's, which calls realloc through the
 * PLT (so it would come back into the shim and be recorded twice): the shim
 * then does glibc's overflow check itself and calls hg_next.realloc. */
extern int hg_next_reallocarray_via_realloc;

/* Resolves hg_next (idempotent, allocation-free, safe to race). */
void hg_next_resolve(void);
extern int hg_next_resolved;

/* For the entries that start NULL (reallocarray, free_sized, the jemalloc
 * API): resolve before reading them. */
static inline void hg_next_ensure(void)
{
    if (__builtin_expect(!__atomic_load_n(&hg_next_resolved, __ATOMIC_ACQUIRE), 0))
        hg_next_resolve();
}

/* Fills the allocator fields of a new segment's header (alloc_flags,
 * alloc_object, alloc_bypass) before the hello. */
void hg_next_describe(hg_header *h);

#endif
