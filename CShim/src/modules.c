/*
 * modules.c — tells the collector which ELF objects are mapped where, with
 * build ids and paths, so stacks can be symbolicated after the process is
 * gone. Scans run at start, when a new stack holds an address outside every
 * known module (a dlopen, including glibc's internal ones), and after
 * dlclose. All storage is static: no allocation. A scan is a slow path
 * (scan_lock, the loader's lock): asked for while nested in the shim
 * (hg_guard > 0) it is deferred to the next un-nested allocation.
 */
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "shim.h"

#define MAX_MODULES 2048
#define MAX_SEGS    16
#define MAX_BUILDID 64

typedef struct module {
    uint64_t bias, lo, hi;
    int      live, seen;
} module;

static module mods[MAX_MODULES];
static int nmods;
static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;

int hg_modules_contain_all(const uint64_t *pcs, uint32_t n)
{
    int count = __atomic_load_n(&nmods, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t pc = pcs[i];
        int found = 0;
        for (int m = 0; m < count; m++) {
            if (mods[m].live && pc >= mods[m].lo && pc < mods[m].hi) {
                found = 1;
                break;
            }
        }
        if (!found)
            return 0;
    }
    return 1;
}

static uint32_t read_build_id(const struct dl_phdr_info *info, uint8_t *out)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_filesz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const uint8_t *name = p + sizeof *nh;
            const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
            const uint8_t *next = desc + ((nh->n_descsz + 3) & ~3u);
            if (next > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= MAX_BUILDID) {
                memcpy(out, desc, nh->n_descsz);
                return nh->n_descsz;
            }
            p = next;
        }
    }
    return 0;
}

/* The main program's path, read at start-up (hg_modules_init): the first
 * scan may come much later, when /proc is out of reach (after a chroot) or
 * the file is gone. */
static char exe_path[4096];
static size_t exe_len;

void hg_modules_init(void)
{
    ssize_t r = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_len = r > 0 ? (size_t)r : 0;
}

static void announce(const struct dl_phdr_info *info)
{
    /* One flat buffer: fixed part, segments, build id, path (8-aligned parts). */
    _Alignas(8) uint8_t buf[sizeof(hg_module_blob) + MAX_SEGS * sizeof(hg_module_seg)
                            + MAX_BUILDID + 4104];
    uint32_t nsegs = 0;
    uint8_t *segs = buf + sizeof(hg_module_blob);
    for (int i = 0; i < info->dlpi_phnum && nsegs < MAX_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        hg_module_seg seg = { ph->p_vaddr, ph->p_memsz, ph->p_flags, 0 };
        memcpy(segs + nsegs * sizeof seg, &seg, sizeof seg);
        nsegs++;
    }
    uint8_t *tail = segs + nsegs * sizeof(hg_module_seg);
    uint32_t bid = read_build_id(info, tail);
    uint32_t bid_padded = (bid + 7) & ~7u;
    memset(tail + bid, 0, bid_padded - bid);

    char *path = (char *)tail + bid_padded;
    const char *name = info->dlpi_name;
    size_t plen;
    if (name == NULL || name[0] == '\0') {
        /* The main program has no name in the link map: the path read at
         * start-up, or (that read failed) read now. */
        if (exe_len == 0)
            hg_modules_init();
        plen = exe_len;
        memcpy(path, exe_path, plen);
    } else {
        plen = strnlen(name, 4095);
        memcpy(path, name, plen);
    }
    path[plen] = '\0';
    uint32_t path_len = (uint32_t)plen + 1;
    uint32_t path_padded = (path_len + 7) & ~7u;
    memset(path + path_len, 0, path_padded - path_len);

    hg_module_blob mb = { info->dlpi_addr, nsegs, bid, path_len, 0 };
    memcpy(buf, &mb, sizeof mb);
    uint32_t total = (uint32_t)((uint8_t *)path + path_padded - buf);
    uint32_t ref = hg_arena_put(HG_BLOB_MODULE, buf, total, NULL, 0, total);
    hg_emit(HG_K_MODULE_LOAD, info->dlpi_addr, 0, ref, 0);
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size; (void)arg;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo) lo = a;
        if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    }
    if (hi == 0)
        return 0;
    for (int m = 0; m < nmods; m++) {
        if (mods[m].live && mods[m].bias == info->dlpi_addr && mods[m].lo == lo) {
            mods[m].seen = 1;
            return 0;
        }
    }
    if (nmods >= MAX_MODULES)
        return 0;
    announce(info);
    mods[nmods] = (module){ info->dlpi_addr, lo, hi, 1, 1 };
    __atomic_store_n(&nmods, nmods + 1, __ATOMIC_RELEASE);
    return 0;
}

/* Set when a scan was wanted while this or another thread was nested in
 * the shim (a signal handler may have interrupted a scan holding scan_lock,
 * or the loader's lock): the next un-nested record runs it. */
int hg_modules_scan_wanted;

void hg_modules_scan(void)
{
    if (hg_guard > 0) {
        __atomic_store_n(&hg_modules_scan_wanted, 1, __ATOMIC_RELAXED);
        return;
    }
    __atomic_store_n(&hg_modules_scan_wanted, 0, __ATOMIC_RELAXED);
    hg_guard_enter();
    pthread_mutex_lock(&scan_lock);
    for (int m = 0; m < nmods; m++)
        mods[m].seen = 0;
    dl_iterate_phdr(scan_one, NULL);
    for (int m = 0; m < nmods; m++) {
        if (mods[m].live && !mods[m].seen) {
            mods[m].live = 0;
            hg_emit(HG_K_MODULE_UNLOAD, mods[m].bias, 0, 0, 0);
        }
    }
    pthread_mutex_unlock(&scan_lock);
    hg_guard_leave();
}

/* A new segment (forked child) knows nothing yet. */
void hg_modules_reset(void)
{
    __atomic_store_n(&nmods, 0, __ATOMIC_RELEASE);
}

void hg_modules_fork_prepare(void) { pthread_mutex_lock(&scan_lock); }
void hg_modules_fork_parent(void)  { pthread_mutex_unlock(&scan_lock); }
void hg_modules_fork_child(void)
{
    pthread_mutex_init(&scan_lock, NULL);
}
