/*
 * swift.c — Swift object allocations carry their type.
 *
 * swift_allocObject(metadata, size, alignMask) is interposed: it notes the
 * metadata and its own caller's unwind state in thread-local storage and
 * calls the runtime's, which allocates through malloc (interposed too).
 * That malloc picks up the note, so the one allocation record carries the
 * type and a stack that starts in the Swift code that created the object
 * (not in the runtime). Type names are resolved once per metadata pointer
 * with swift_getTypeName in the target, where the metadata lives, and sent
 * as a TYPE_NAME record before the first use of the id.
 */
#include <dlfcn.h>
#include <string.h>
#include <sys/mman.h>
#include "shim.h"
#include "unwind.h"

typedef void *(*alloc_object_fn)(const void *, size_t, size_t);
typedef struct { const char *data; size_t length; } type_name_pair;
typedef type_name_pair (*get_type_name_fn)(const void *, int);
typedef size_t (*get_kind_fn)(const void *);

static alloc_object_fn real_alloc_object;
static get_type_name_fn get_type_name;
static get_kind_fn get_metadata_kind;

/* The note left for the nested malloc. */
HG_TLS const void *hg_swift_metadata;
HG_TLS size_t hg_swift_size;
HG_TLS const hg_unwind_start *hg_swift_start;

#define TYPES_BITS 16
#define TYPES_SIZE (1u << TYPES_BITS)
typedef struct { uint64_t key; uint64_t val; } type_entry; /* val: epoch<<32 | id */
static type_entry *types;
static uint32_t next_type_id;

/* A slow path (dlsym may allocate: recorded, nested). */
static void resolve_runtime(void)
{
    hg_guard_enter();
    if (!real_alloc_object)
        real_alloc_object = (alloc_object_fn)dlsym(RTLD_NEXT, "swift_allocObject");
    if (!get_type_name)
        get_type_name = (get_type_name_fn)dlsym(RTLD_DEFAULT, "swift_getTypeName");
    if (!get_metadata_kind)
        get_metadata_kind = (get_kind_fn)dlsym(RTLD_DEFAULT, "swift_getMetadataKind");
    if (!types) {
        void *m = mmap(NULL, sizeof(type_entry) * TYPES_SIZE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m != MAP_FAILED)
            types = m;
    }
    hg_guard_leave();
}

HG_EXPORT void *swift_allocObject(const void *metadata, size_t size, size_t align_mask)
{
    if (HG_UNLIKELY(!real_alloc_object)) {
        resolve_runtime();
        if (!real_alloc_object)
            return NULL;    /* no Swift runtime behind us: nothing sane to do */
    }
    if (!hg_tracking())
        return real_alloc_object(metadata, size, align_mask);
    hg_unwind_start st;
    HG_UNWIND_START(st);
    const void *saved_md = hg_swift_metadata;
    size_t saved_size = hg_swift_size;
    const hg_unwind_start *saved_st = hg_swift_start;
    hg_swift_metadata = metadata;
    hg_swift_size = size;
    hg_swift_start = &st;
    void *obj = real_alloc_object(metadata, size, align_mask);
    hg_swift_metadata = saved_md;
    hg_swift_size = saved_size;
    hg_swift_start = saved_st;
    return obj;
}

static const char *kind_name(size_t kind)
{
    switch (kind) {
    case 0x400: return "(closure context)";
    case 0x500: return "(box)";
    case 0x501: return "(error box)";
    case 0x502: return "(task)";
    case 0x503: return "(job)";
    default:    return "(heap object)";
    }
}

/* The id `metadata` already has in this epoch, or 0. Lock-free, no
 * allocation: what a nested call (hg_guard > 0) may use. */
uint32_t hg_swift_type_id_cached(const void *metadata)
{
    if (!types || !metadata)
        return 0;
    const uint64_t key = (uint64_t)(uintptr_t)metadata;
    const uint64_t epoch = g_hg.epoch;
    uint32_t i = (uint32_t)((key >> 4) * 0x9e3779b1u) >> (32 - TYPES_BITS);
    for (int probe = 0; probe < 64; probe++, i = (i + 1) & (TYPES_SIZE - 1)) {
        type_entry *e = &types[i];
        uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (k == key) {
            uint64_t v = __atomic_load_n(&e->val, __ATOMIC_ACQUIRE);
            if (v != 0 && (v >> 32) == epoch)
                return (uint32_t)v;
            return 0;   /* stale or being filled in */
        }
        if (k == 0)
            return 0;
    }
    return 0;
}

/* Returns the type id for `metadata`, announcing it first if new. The
 * naming is a slow path: swift_getTypeName takes the runtime's locks and
 * allocates (those allocations are recorded, nested). */
uint32_t hg_swift_type_id(const void *metadata)
{
    if (!types || !metadata)
        return 0;
    uint32_t cached = hg_swift_type_id_cached(metadata);
    if (cached != 0)
        return cached;
    const uint64_t key = (uint64_t)(uintptr_t)metadata;
    const uint64_t epoch = g_hg.epoch;
    uint32_t i;

    /* Miss: name it and announce it. */
    hg_guard_enter();
    const char *name = NULL;
    size_t len = 0;
    size_t kind = get_metadata_kind ? get_metadata_kind(metadata) : 0;
    if (kind < 0x400 && get_type_name) {
        type_name_pair p = get_type_name(metadata, 1);
        name = p.data;
        len = p.length;
    }
    if (name == NULL || len == 0) {
        name = kind_name(kind);
        len = strlen(name);
    }
    if (len > 4000)
        len = 4000;
    uint32_t id = __atomic_add_fetch(&next_type_id, 1, __ATOMIC_RELAXED);
    static const char nul = 0;
    uint32_t ref = hg_arena_put(HG_BLOB_STRING, name, (uint32_t)len, &nul, 1, (uint32_t)len + 1);
    hg_emit(HG_K_TYPE_NAME, key, 0, ref, id);
    hg_guard_leave();

    /* Publish only after the TYPE_NAME record: whoever finds the id emits
     * a record ordered after its definition. */
    i = (uint32_t)((key >> 4) * 0x9e3779b1u) >> (32 - TYPES_BITS);
    for (int probe = 0; probe < 64; probe++, i = (i + 1) & (TYPES_SIZE - 1)) {
        type_entry *e = &types[i];
        uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (k == 0) {
            uint64_t zero = 0;
            if (!__atomic_compare_exchange_n(&e->key, &zero, key, 0,
                                             __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                k = zero;
            else
                k = key;
        }
        if (k == key) {
            __atomic_store_n(&e->val, epoch << 32 | id, __ATOMIC_RELEASE);
            break;
        }
    }
    return id;
}

void hg_swift_reset(void)
{
    /* The epoch bump retires the cache; ids keep counting up. */
}
