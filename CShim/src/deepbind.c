/*
 * deepbind.c — dlopen, so that libraries loaded with RTLD_DEEPBIND still
 * allocate through the shim.
 *
 * RTLD_DEEPBIND puts a library's own lookup scope (itself and what it
 * loads with it, libc among them) ahead of the global one, so its calls to
 * malloc & co bind to libc's and bypass LD_PRELOAD: heapgen would miss its
 * allocations and, worse, its frees of blocks it got from the shim, and a
 * freed block would stay "live" (a false leak). heaptrack meets the same
 * problem; here, after such a dlopen, the allocation imports of every
 * object the call loaded are bound to what the global scope defines (the
 * shim's functions, or an allocator the executable itself defines, exactly
 * what a library loaded without RTLD_DEEPBIND would call): their GOT
 * entries (R_X86_64_JUMP_SLOT and R_X86_64_GLOB_DAT relocations) are
 * overwritten, under a temporary mprotect where RELRO made them read-only.
 *
 * Limits: allocations made by the library's constructors, which run inside
 * dlopen, are not seen (their frees later are untracked frees, ignored).
 * Only RTLD_DEEPBIND calls take the slow path; every other dlopen is a tail
 * call, so glibc sees the program's own code as the caller (its RUNPATH and
 * $ORIGIN). For a RTLD_DEEPBIND call the caller glibc sees is the shim, so a
 * bare library name is first looked for along the calling object's own
 * search path (caller_path), as glibc would have.
 */
#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "shim.h"

typedef void *(*dlopen_fn)(const char *, int);

/* The imports rebound: the allocation family the shim interposes. */
static const char *const rebound[] = {
    "malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size",
    "free_sized", "free_aligned_sized",
};
#define REBOUND_COUNT (sizeof rebound / sizeof rebound[0])

static dlopen_fn real_dlopen(void)
{
    static dlopen_fn real;
    if (HG_UNLIKELY(real == NULL)) {
        hg_guard_enter();
        real = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
        hg_guard_leave();
    }
    return real;
}

static int count_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info;
    (void)size;
    (*(size_t *)arg)++;
    return 0;
}

/* A dynamic-section pointer: glibc relocates most of them in place, but not
 * on every architecture or for every object; an unrelocated one is below
 * the load bias. */
static uintptr_t dyn_ptr(ElfW(Addr) bias, ElfW(Addr) value)
{
    return value < bias ? bias + value : value;
}

typedef struct patch_ctx {
    size_t first;           /* objects from this index on were loaded by the call */
    size_t index;
    void *targets[REBOUND_COUNT];
} patch_ctx;

/* Writes `value` to the GOT slot `slot`, making its page writable for the
 * moment if it lies in the object's RELRO region. */
static void write_slot(void **slot, void *value, uintptr_t relro_start, uintptr_t relro_end)
{
    if (*slot == value)
        return;
    uintptr_t at = (uintptr_t)slot;
    int relro = at >= relro_start && at < relro_end;
    long page = sysconf(_SC_PAGESIZE);
    void *base = (void *)(at & ~(uintptr_t)(page - 1));
    if (relro && mprotect(base, (size_t)page, PROT_READ | PROT_WRITE) != 0)
        return;             /* cannot write: leave the binding as it is */
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    if (relro)
        (void)mprotect(base, (size_t)page, PROT_READ);
}

static void patch_relocations(const ElfW(Rela) *rela, size_t bytes, ElfW(Addr) bias,
                              const ElfW(Sym) *symtab, const char *strtab, const patch_ctx *ctx,
                              uintptr_t relro_start, uintptr_t relro_end)
{
    for (size_t i = 0; i < bytes / sizeof *rela; i++) {
        unsigned long type = ELF64_R_TYPE(rela[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        unsigned long sym = ELF64_R_SYM(rela[i].r_info);
        if (sym == 0)
            continue;
        const char *name = strtab + symtab[sym].st_name;
        if (symtab[sym].st_shndx != SHN_UNDEF)
            continue;       /* the object defines it itself: its own allocator */
        for (size_t k = 0; k < REBOUND_COUNT; k++) {
            if (ctx->targets[k] != NULL && strcmp(name, rebound[k]) == 0) {
                write_slot((void **)(bias + rela[i].r_offset), ctx->targets[k], relro_start, relro_end);
                break;
            }
        }
    }
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    patch_ctx *ctx = arg;
    if (ctx->index++ < ctx->first)
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    uintptr_t relro_start = 0, relro_end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        else if (ph->p_type == PT_GNU_RELRO) {
            relro_start = info->dlpi_addr + ph->p_vaddr;
            relro_end = relro_start + ph->p_memsz;
        }
    }
    if (dyn == NULL)
        return 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmprel_bytes = 0, rela_bytes = 0;
    int pltrel_is_rela = 1;
    ElfW(Addr) bias = info->dlpi_addr;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_ptr(bias, d->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const char *)dyn_ptr(bias, d->d_un.d_ptr); break;
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_ptr(bias, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: jmprel_bytes = d->d_un.d_val; break;
        case DT_PLTREL: pltrel_is_rela = d->d_un.d_val == DT_RELA; break;
        case DT_RELA: rela = (const ElfW(Rela) *)dyn_ptr(bias, d->d_un.d_ptr); break;
        case DT_RELASZ: rela_bytes = d->d_un.d_val; break;
        default: break;
        }
    }
    if (symtab == NULL || strtab == NULL)
        return 0;
    if (jmprel != NULL && pltrel_is_rela)
        patch_relocations(jmprel, jmprel_bytes, bias, symtab, strtab, ctx, relro_start, relro_end);
    if (rela != NULL)
        patch_relocations(rela, rela_bytes, bias, symtab, strtab, ctx, relro_start, relro_end);
    return 0;
}

/* glibc's search path for a bare name dlopen'd by `handle`'s object, in
 * order (DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH, the default directories;
 * $ORIGIN expanded), into `buf` (`cap` bytes, on the caller's stack). */
static int search_path(void *handle, Dl_serinfo *buf, size_t cap)
{
    Dl_serinfo size;
    if (dlinfo(handle, RTLD_DI_SERINFOSIZE, &size) != 0 || size.dls_size > cap)
        return 0;
    buf->dls_size = size.dls_size;
    buf->dls_cnt = size.dls_cnt;
    return dlinfo(handle, RTLD_DI_SERINFO, buf) == 0;
}

static int in_search_path(const Dl_serinfo *path, const char *dir)
{
    for (unsigned i = 0; i < path->dls_cnt; i++)
        if (strcmp(path->dls_serpath[i].dls_name, dir) == 0)
            return 1;
    return 0;
}

/* Where glibc would find a bare `name` dlopen'd from the object holding
 * `caller` when that object's own directories (its RPATH or RUNPATH) find it
 * first: 1 with the path in `out`. 0 when a directory the shim's search has
 * too comes first with the file, or none has it: the shim's dlopen(name) then
 * finds what the caller's would (the same directories, then ld.so.cache). */
static int caller_path(const void *caller, const char *name, char *out, size_t cap)
{
    Dl_info info;
    struct link_map *theirs_map = NULL, *ours_map = NULL;
    if (dladdr1(caller, &info, (void **)&theirs_map, RTLD_DL_LINKMAP) == 0 || theirs_map == NULL
        || dladdr1((const void *)caller_path, &info, (void **)&ours_map, RTLD_DL_LINKMAP) == 0 || ours_map == NULL
        || theirs_map == ours_map)
        return 0;
    union { Dl_serinfo s; char bytes[4096]; } theirs, ours;
    if (!search_path(theirs_map, &theirs.s, sizeof theirs) || !search_path(ours_map, &ours.s, sizeof ours))
        return 0;
    const size_t name_len = strlen(name);
    for (unsigned i = 0; i < theirs.s.dls_cnt; i++) {
        const char *dir = theirs.s.dls_serpath[i].dls_name;
        const size_t dir_len = strlen(dir);
        if (dir_len + 1 + name_len + 1 > cap)
            continue;
        memcpy(out, dir, dir_len);
        out[dir_len] = '/';
        memcpy(out + dir_len + 1, name, name_len + 1);
        if (access(out, F_OK) != 0)
            continue;
        return !in_search_path(&ours.s, dir);
    }
    return 0;
}

/* The RTLD_DEEPBIND path: load, then bind the new objects' allocation imports. */
static void *deepbind_open(dlopen_fn real, const char *file, int flags, const void *caller)
{
    size_t before = 0;
    dl_iterate_phdr(count_object, &before);
    char path[PATH_MAX];
    if (file != NULL && strchr(file, '/') == NULL) {
        hg_guard_enter();
        const int found = caller_path(caller, file, path, sizeof path);
        hg_guard_leave();
        if (found)
            file = path;
    }
    void *handle = real(file, flags);
    if (handle == NULL)
        return NULL;
    patch_ctx ctx = { .first = before };
    hg_guard_enter();
    for (size_t k = 0; k < REBOUND_COUNT; k++)
        ctx.targets[k] = dlsym(RTLD_DEFAULT, rebound[k]);
    hg_guard_leave();
    dl_iterate_phdr(patch_object, &ctx);
    return handle;
}

HG_EXPORT void *dlopen(const char *file, int flags)
{
    dlopen_fn real = real_dlopen();
    if (HG_UNLIKELY(real == NULL))
        return NULL;
#ifdef __x86_64__
    if (HG_UNLIKELY(flags & RTLD_DEEPBIND))
        return deepbind_open(real, file, flags, __builtin_return_address(0));
#endif
    /* A tail call: glibc takes its caller from the return address. */
    return real(file, flags);
}
