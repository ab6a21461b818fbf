/* allocator.c — what the shim says about the program's allocator
 * (hg_header.alloc_flags and its two paths, see "Allocators" in
 * heapgen_protocol.h), turned into the collector's one warning line. The
 * target may scribble on its header: the fields are copied once, strings
 * bounded by their arrays and cleaned of control bytes. */
#include "CHeapGenCollector.h"

#include <stdio.h>
#include <string.h>

static void clean_copy(char *dst, const char *src, size_t cap)
{
    size_t n = strnlen(src, cap - 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    dst[n] = '\0';
}

int hg_segment_allocator_warning(const hg_segment *seg, char *buf, size_t len)
{
    if (seg->base == NULL || seg->size < sizeof(hg_header) || len == 0)
        return 0;
    const hg_header *h = (const hg_header *)seg->base;
    uint32_t flags = __atomic_load_n(&h->alloc_flags, __ATOMIC_RELAXED);
    if ((flags & (HG_ALLOC_BYPASSED | HG_ALLOC_CXX_DIRECT)) == 0)
        return 0;
    char object[HG_ALLOC_PATH], bypass[HG_ALLOC_PATH];
    char raw[HG_ALLOC_PATH];
    memcpy(raw, h->alloc_object, sizeof raw);
    clean_copy(object, raw, sizeof object);
    memcpy(raw, h->alloc_bypass, sizeof raw);
    clean_copy(bypass, raw, sizeof bypass);
    if (flags & HG_ALLOC_BYPASSED) {
        snprintf(buf, len,
                 "process %d: malloc is defined by %s%s, ahead of heapgen: its allocations never reach "
                 "heapgen and are not recorded",
                 (int)seg->pid, bypass[0] ? "" : "the executable itself", bypass);
    } else {
        snprintf(buf, len,
                 "process %d: C++ operator new is served by %s directly, not through malloc: "
                 "blocks allocated with new are not recorded (their deletes may count as unknown frees)",
                 (int)seg->pid, object[0] ? object : "the program's allocator");
    }
    return 1;
}
