/*
 * nextalloc.c — finds the allocator the program would have used without
 * heapgen, so the shim wraps it instead of replacing it: for each function of
 * the malloc family, the next definition after the shim in symbol-search
 * order (RTLD_NEXT semantics). A program linked with libjemalloc keeps
 * jemalloc's blocks, sizes and statistics; a glibc program calls glibc's
 * malloc through one indirect call, as before through the PLT.
 *
 * How: our own lookup over the loaded objects (dl_iterate_phdr, which walks
 * the link map in load order) and each object's .dynsym through DT_GNU_HASH
 * or DT_HASH, skipping the shim and everything before it. Why not
 * dlsym(RTLD_NEXT): dlsym may allocate (its error state for a missing symbol
 * such as mallocx in a glibc program, the dlerror string, a stale error it
 * frees), and that allocation would land in the malloc we are still looking
 * for; the usual cure, a bootstrap buffer whose blocks free() must recognise
 * and ignore, leaves blocks that no allocator owns and a dlerror() state the
 * program could see. Our lookup allocates nothing, takes only the loader's
 * recursive list lock, and can also answer the questions the warnings need
 * (who defines malloc before us, who serves operator new).
 *
 * Load order equals search order for the objects loaded at start-up (the
 * loader maps them breadth-first in the order it searches them, preloads
 * right after the executable); resolution happens at the first call of any
 * family function, which is during start-up, before any dlopen, and in any
 * case before any block is handed out.
 *
 * Every lookup follows the loader's rules for an unversioned reference:
 * defined, global or weak, not a hidden (non-default) version; an IFUNC is
 * resolved by calling its resolver.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include "shim.h"
#include "nextalloc.h"

extern void *__libc_malloc(size_t);
extern void  __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* The names looked up, in hg_next_fns order (then the extra probes). */
enum {
    N_MALLOC, N_FREE, N_CALLOC, N_REALLOC, N_REALLOCARRAY, N_POSIX_MEMALIGN,
    N_ALIGNED_ALLOC, N_MEMALIGN, N_VALLOC, N_PVALLOC, N_MALLOC_USABLE_SIZE,
    N_FREE_SIZED, N_FREE_ALIGNED_SIZED,
    N_MALLOCX, N_RALLOCX, N_XALLOCX, N_SALLOCX, N_DALLOCX, N_SDALLOCX, N_NALLOCX,
    N_FAMILY,                   /* end of hg_next_fns */
    N_GLIBC = N_FAMILY,         /* marks glibc's libc (not __libc_malloc:
                                   gperftools' tcmalloc exports that too) */
    N_OPERATOR_NEW,             /* _Znwm: who serves C++ new */
    N_COUNT
};

static const char *const names[N_COUNT] = {
    "malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size",
    "free_sized", "free_aligned_sized",
    "mallocx", "rallocx", "xallocx", "sallocx", "dallocx", "sdallocx", "nallocx",
    "gnu_get_libc_version", "_Znwm",
};

int hg_next_reallocarray_via_realloc;
int hg_next_resolved;

/* ---------------------------------------------------------------- ELF */

typedef struct elf_obj {
    uintptr_t base;
    const ElfW(Sym) *symtab;
    const char *strtab;
    size_t strsz;
    const uint32_t *gnu_hash;
    const uint32_t *sysv_hash;
    const ElfW(Versym) *versym;
} elf_obj;

/* The loader rewrites most DT_* pointers to run-time addresses; the vDSO's
 * (read-only) dynamic section keeps link-time offsets. */
static uintptr_t dyn_ptr(uintptr_t base, ElfW(Addr) p)
{
    return p < base ? base + p : p;
}

static int elf_open(const struct dl_phdr_info *info, elf_obj *o)
{
    memset(o, 0, sizeof *o);
    o->base = info->dlpi_addr;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (dyn == NULL)
        return 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB:   o->symtab = (const ElfW(Sym) *)dyn_ptr(o->base, dyn->d_un.d_ptr); break;
        case DT_STRTAB:   o->strtab = (const char *)dyn_ptr(o->base, dyn->d_un.d_ptr); break;
        case DT_STRSZ:    o->strsz = dyn->d_un.d_val; break;
        case DT_GNU_HASH: o->gnu_hash = (const uint32_t *)dyn_ptr(o->base, dyn->d_un.d_ptr); break;
        case DT_HASH:     o->sysv_hash = (const uint32_t *)dyn_ptr(o->base, dyn->d_un.d_ptr); break;
        case DT_VERSYM:   o->versym = (const ElfW(Versym) *)dyn_ptr(o->base, dyn->d_un.d_ptr); break;
        default: break;
        }
    }
    return o->symtab && o->strtab && (o->gnu_hash || o->sysv_hash);
}

static const char *sym_name(const elf_obj *o, const ElfW(Sym) *s)
{
    return s->st_name < o->strsz ? o->strtab + s->st_name : "";
}

/* A definition an unversioned reference would bind to. */
static int sym_usable(const elf_obj *o, uint32_t i, const char *name)
{
    const ElfW(Sym) *s = &o->symtab[i];
    if (s->st_shndx == SHN_UNDEF || s->st_value == 0)
        return 0;
    int bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
    if (bind != STB_GLOBAL && bind != STB_WEAK)
        return 0;
    if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
        return 0;
    if (o->versym && (o->versym[i] & 0x8000))
        return 0;       /* name@VERSION: only for references asking for it */
    return strcmp(sym_name(o, s), name) == 0;
}

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (uint8_t)*s;
    return h;
}

static uint32_t sysv_hash(const char *s)
{
    uint32_t h = 0;
    for (; *s; s++) {
        h = (h << 4) + (uint8_t)*s;
        uint32_t g = h & 0xf0000000u;
        if (g)
            h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

static const ElfW(Sym) *elf_lookup(const elf_obj *o, const char *name)
{
    if (o->gnu_hash) {
        const uint32_t *h = o->gnu_hash;
        uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2], shift = h[3];
        if (nbuckets == 0 || bloom_size == 0)
            return NULL;
        const ElfW(Addr) *bloom = (const ElfW(Addr) *)&h[4];
        const uint32_t *buckets = (const uint32_t *)&bloom[bloom_size];
        const uint32_t *chain = &buckets[nbuckets];
        const unsigned bits = sizeof(ElfW(Addr)) * 8;
        uint32_t hash = gnu_hash(name);
        ElfW(Addr) word = bloom[(hash / bits) % bloom_size];
        ElfW(Addr) mask = ((ElfW(Addr))1 << (hash % bits)) | ((ElfW(Addr))1 << ((hash >> shift) % bits));
        if ((word & mask) != mask)
            return NULL;
        uint32_t i = buckets[hash % nbuckets];
        if (i < symoffset)
            return NULL;
        for (;; i++) {
            uint32_t h2 = chain[i - symoffset];
            if ((hash | 1) == (h2 | 1) && sym_usable(o, i, name))
                return &o->symtab[i];
            if (h2 & 1)
                return NULL;
        }
    }
    const uint32_t *h = o->sysv_hash;
    uint32_t nbucket = h[0];
    if (nbucket == 0)
        return NULL;
    const uint32_t *bucket = &h[2], *chain = &bucket[nbucket];
    for (uint32_t i = bucket[sysv_hash(name) % nbucket]; i != 0 && i < h[1]; i = chain[i])
        if (sym_usable(o, i, name))
            return &o->symtab[i];
    return NULL;
}

static void *sym_address(const elf_obj *o, const ElfW(Sym) *s)
{
    uintptr_t a = o->base + s->st_value;
    if (ELF64_ST_TYPE(s->st_info) == STT_GNU_IFUNC)
        a = (uintptr_t)((void *(*)(void))a)();
    return (void *)a;
}

/* Does the object reference (undefined) a C++ operator new? The undefined
 * symbols are the ones DT_GNU_HASH leaves out (before symoffset); with only
 * DT_HASH, every symbol is checked. */
static int elf_uses_operator_new(const elf_obj *o)
{
    uint32_t n = o->gnu_hash ? o->gnu_hash[1] : o->sysv_hash[1];
    for (uint32_t i = 1; i < n; i++) {
        const ElfW(Sym) *s = &o->symtab[i];
        if (s->st_shndx != SHN_UNDEF)
            continue;
        const char *nm = sym_name(o, s);
        if (strncmp(nm, "_Znw", 4) == 0 || strncmp(nm, "_Zna", 4) == 0)
            return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- scan */

typedef struct scan {
    int describe;                 /* also gather what hg_next_describe needs */
    int index, self;              /* object counter; the shim's index (-1 until seen) */
    void *fn[N_COUNT];            /* next definitions after the shim */
    int where[N_COUNT];           /* their object indexes */
    const char *where_name[N_COUNT];
    /* describe only */
    int bypass;                   /* malloc or free defined before the shim */
    const char *bypass_name;
    int new_first;                /* index of the first definer of _Znwm, any position */
    const char *new_first_name;
    int new_users;                /* objects referencing operator new, other than its definers */
} scan;

static int scan_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    scan *s = arg;
    int index = s->index++;
    if (s->self < 0) {
        /* Is this the shim? (the object holding this very function) */
        uintptr_t me = (uintptr_t)&scan_object;
        for (int i = 0; i < info->dlpi_phnum; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
            if (ph->p_type == PT_LOAD && me >= lo && me < lo + ph->p_memsz) {
                s->self = index;
                return 0;
            }
        }
    }
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    if (strncmp(name, "linux-vdso", 10) == 0 || strncmp(name, "linux-gate", 10) == 0)
        return 0;
    elf_obj o;
    if (!elf_open(info, &o))
        return 0;
    if (s->describe) {
        const ElfW(Sym) *nw = elf_lookup(&o, names[N_OPERATOR_NEW]);
        if (nw && s->new_first < 0) {
            s->new_first = index;
            s->new_first_name = name;
        }
        if (!nw && elf_uses_operator_new(&o))
            s->new_users++;
    }
    if (s->self < 0) {
        /* Before the shim: the program's calls bind here, not to us. */
        if (s->describe && !s->bypass &&
            (elf_lookup(&o, names[N_MALLOC]) || elf_lookup(&o, names[N_FREE]))) {
            s->bypass = 1;
            s->bypass_name = name;
        }
        return 0;
    }
    for (int k = 0; k < N_COUNT; k++) {
        if (s->fn[k] != NULL)
            continue;
        const ElfW(Sym) *sym = elf_lookup(&o, names[k]);
        if (sym) {
            s->fn[k] = sym_address(&o, sym);
            s->where[k] = index;
            s->where_name[k] = name;
        }
    }
    return 0;
}

static void run_scan(scan *s, int describe)
{
    memset(s, 0, sizeof *s);
    s->describe = describe;
    s->self = -1;
    s->new_first = -1;
    for (int k = 0; k < N_COUNT; k++)
        s->where[k] = -1;
    dl_iterate_phdr(scan_object, s);
}

/* ------------------------------------------------- fallbacks, trampolines */

/* Used only if a core function has no definition after the shim (then glibc's
 * is the only sane choice). */
static int fallback_posix_memalign(void **out, size_t align, size_t n)
{
    if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0 || align == 0)
        return EINVAL;
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

static size_t fallback_usable_size(void *p)
{
    (void)p;
    return 0;
}

/* hg_next starts here: the first call of a core function resolves the
 * table, then goes on to the real function. The jemalloc entries start
 * NULL; their wrappers call hg_next_ensure() first. */
static void *boot_malloc(size_t n) { hg_next_resolve(); return hg_next.malloc(n); }
static void boot_free(void *p) { hg_next_resolve(); hg_next.free(p); }
static void *boot_calloc(size_t a, size_t b) { hg_next_resolve(); return hg_next.calloc(a, b); }
static void *boot_realloc(void *p, size_t n) { hg_next_resolve(); return hg_next.realloc(p, n); }
static int boot_posix_memalign(void **o, size_t a, size_t n) { hg_next_resolve(); return hg_next.posix_memalign(o, a, n); }
static void *boot_aligned_alloc(size_t a, size_t n) { hg_next_resolve(); return hg_next.aligned_alloc(a, n); }
static void *boot_memalign(size_t a, size_t n) { hg_next_resolve(); return hg_next.memalign(a, n); }
static void *boot_valloc(size_t n) { hg_next_resolve(); return hg_next.valloc(n); }
static void *boot_pvalloc(size_t n) { hg_next_resolve(); return hg_next.pvalloc(n); }
static size_t boot_usable_size(void *p) { hg_next_resolve(); return hg_next.malloc_usable_size(p); }

hg_next_fns hg_next = {
    .malloc = boot_malloc,
    .free = boot_free,
    .calloc = boot_calloc,
    .realloc = boot_realloc,
    .posix_memalign = boot_posix_memalign,
    .aligned_alloc = boot_aligned_alloc,
    .memalign = boot_memalign,
    .valloc = boot_valloc,
    .pvalloc = boot_pvalloc,
    .malloc_usable_size = boot_usable_size,
};

#define STORE(field, value) __atomic_store_n(&hg_next.field, (value), __ATOMIC_RELAXED)

void hg_next_resolve(void)
{
    if (__atomic_load_n(&hg_next_resolved, __ATOMIC_ACQUIRE))
        return;
    scan s;
    run_scan(&s, 0);
    void **f = s.fn;
    /* glibc's reallocarray calls realloc through the PLT: see nextalloc.h. */
    __atomic_store_n(&hg_next_reallocarray_via_realloc,
                     f[N_REALLOCARRAY] == NULL || s.where[N_REALLOCARRAY] == s.where[N_GLIBC],
                     __ATOMIC_RELAXED);
    STORE(reallocarray, (void *(*)(void *, size_t, size_t))f[N_REALLOCARRAY]);
    STORE(free_sized, (void (*)(void *, size_t))f[N_FREE_SIZED]);
    STORE(free_aligned_sized, (void (*)(void *, size_t, size_t))f[N_FREE_ALIGNED_SIZED]);
    STORE(mallocx, (void *(*)(size_t, int))f[N_MALLOCX]);
    STORE(rallocx, (void *(*)(void *, size_t, int))f[N_RALLOCX]);
    STORE(xallocx, (size_t (*)(void *, size_t, size_t, int))f[N_XALLOCX]);
    STORE(sallocx, (size_t (*)(const void *, int))f[N_SALLOCX]);
    STORE(dallocx, (void (*)(void *, int))f[N_DALLOCX]);
    STORE(sdallocx, (void (*)(void *, size_t, int))f[N_SDALLOCX]);
    STORE(nallocx, (size_t (*)(size_t, int))f[N_NALLOCX]);
    STORE(malloc_usable_size, f[N_MALLOC_USABLE_SIZE] ? (size_t (*)(void *))f[N_MALLOC_USABLE_SIZE]
                                                    : fallback_usable_size);
    STORE(calloc, f[N_CALLOC] ? (void *(*)(size_t, size_t))f[N_CALLOC] : __libc_calloc);
    STORE(realloc, f[N_REALLOC] ? (void *(*)(void *, size_t))f[N_REALLOC] : __libc_realloc);
    STORE(posix_memalign, f[N_POSIX_MEMALIGN] ? (int (*)(void **, size_t, size_t))f[N_POSIX_MEMALIGN]
                                              : fallback_posix_memalign);
    STORE(aligned_alloc, f[N_ALIGNED_ALLOC] ? (void *(*)(size_t, size_t))f[N_ALIGNED_ALLOC] : __libc_memalign);
    STORE(memalign, f[N_MEMALIGN] ? (void *(*)(size_t, size_t))f[N_MEMALIGN] : __libc_memalign);
    STORE(valloc, f[N_VALLOC] ? (void *(*)(size_t))f[N_VALLOC] : __libc_valloc);
    STORE(pvalloc, f[N_PVALLOC] ? (void *(*)(size_t))f[N_PVALLOC] : __libc_pvalloc);
    /* malloc and free last and together: a block from one allocator must
     * never reach the other's free. */
    if (f[N_MALLOC] == NULL || f[N_FREE] == NULL || s.where[N_MALLOC] != s.where[N_FREE]) {
        f[N_MALLOC] = (void *)__libc_malloc;
        f[N_FREE] = (void *)__libc_free;
    }
    STORE(free, (void (*)(void *))f[N_FREE]);
    STORE(malloc, (void *(*)(size_t))f[N_MALLOC]);
    __atomic_store_n(&hg_next_resolved, 1, __ATOMIC_RELEASE);
}

static void copy_name(char *dst, const char *src)
{
    size_t n = strnlen(src, HG_ALLOC_PATH - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* The description of this process image, made once: a forked child has the
 * same objects, and should not walk the loader's list from a fork handler. */
static int described;
static uint32_t desc_flags;
static char desc_object[HG_ALLOC_PATH], desc_bypass[HG_ALLOC_PATH];

static void describe_image(void)
{
    hg_next_resolve();
    scan s;
    run_scan(&s, 1);
    uint32_t flags = 0;
    if (s.bypass) {
        flags |= HG_ALLOC_BYPASSED;
        copy_name(desc_bypass, s.bypass_name);
    }
    int a = s.where[N_MALLOC];
    if (a >= 0) {
        copy_name(desc_object, s.where_name[N_MALLOC]);
        if (a != s.where[N_GLIBC])
            flags |= HG_ALLOC_FOREIGN;
        /* C++ new bound to the allocator itself (ahead of libstdc++), and
         * something uses it: those blocks never pass through malloc. */
        if (a != s.where[N_GLIBC] && s.new_first == a && s.new_users > 0)
            flags |= HG_ALLOC_CXX_DIRECT;
    }
    desc_flags = flags;
}

void hg_next_describe(hg_header *h)
{
    if (!described) {
        describe_image();
        described = 1;
    }
    h->alloc_flags = desc_flags;
    memcpy(h->alloc_object, desc_object, sizeof desc_object);
    memcpy(h->alloc_bypass, desc_bypass, sizeof desc_bypass);
}
