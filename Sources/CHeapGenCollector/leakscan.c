/* Conservative reachability scan of a traced process at exit (heapgen
 * record --leaks): which live blocks does nothing reference any more?
 * See hg_leak_scan in CHeapGenCollector.h; the threads are stopped (and their
 * registers read) by leakscan_threads.c. */
#include "CHeapGenCollector.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>

#define SCAN_CHUNK (1u << 20)   /* bytes read per process_vm_readv */

typedef struct scan_state {
    pid_t pid;
    const uint64_t *addrs, *sizes;
    size_t n;
    uint64_t lo, hi;            /* [addrs[0], end of the last block) */
    uint8_t *marked;
    size_t *work;               /* worklist of block indices (each pushed once) */
    size_t work_len;
    uint64_t *buf;
    uint64_t max_bytes, deadline;
    int starts_only;            /* allocator data: only a block's start is a reference */
    size_t leader;              /* classify pass: the direct block whose marking runs, else (size_t)-1 */
    uint64_t *owners;           /* classify pass: owner index of each indirect block */
    hg_scan_result *r;
} scan_state;

/* One root mapping; `allocator` marks libc's writable data (its malloc state). */
typedef struct root_region {
    uint64_t start, end;
    uint64_t low_sp;            /* lowest stack pointer inside, or UINT64_MAX */
    int allocator;
} root_region;

static inline uint64_t block_end(const scan_state *s, size_t i)
{
    uint64_t size = s->sizes[i] ? s->sizes[i] : 1;
    return s->addrs[i] + size;
}

/* Index of the block containing `p`, or (size_t)-1. */
static inline size_t find_block(const scan_state *s, uint64_t p)
{
    size_t lo = 0, hi = s->n;          /* first index with addr > p */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->addrs[mid] <= p) lo = mid + 1; else hi = mid;
    }
    if (lo == 0) return (size_t)-1;
    size_t i = lo - 1;
    return p < block_end(s, i) ? i : (size_t)-1;
}

/* True if [start, end) overlaps a live block. */
static int overlaps_block(const scan_state *s, uint64_t start, uint64_t end)
{
    size_t lo = 0, hi = s->n;          /* first block whose end > start */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (block_end(s, mid) <= start) lo = mid + 1; else hi = mid;
    }
    return lo < s->n && s->addrs[lo] < end;
}

static void scan_words(scan_state *s, const uint64_t *words, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        uint64_t p = words[k];
        if (p < s->lo || p >= s->hi) continue;
        size_t i = find_block(s, p);
        if (i == (size_t)-1) continue;
        if (s->leader != (size_t)-1) {
            /* classify pass: an unreached block (a former leader included) joins
             * the running leader's clique; reachable and indirect blocks stay. */
            if (s->marked[i] != 0 || i == s->leader) continue;
            s->marked[i] = 2;
            s->owners[i] = s->leader;
            s->work[s->work_len++] = i;
            continue;
        }
        if (s->marked[i]) continue;
        /* glibc's main_arena.top and bins hold chunk headers: the header of the
         * chunk after block i lies inside block i's last 8 bytes whenever its size
         * is 8 modulo 16 or so. The allocator holds no interior pointers of its own. */
        if (s->starts_only && p != s->addrs[i]) continue;
        s->marked[i] = 1;
        s->r->marked++;
        s->work[s->work_len++] = i;
    }
}

/* Reads and scans [start, end) of the target. 0 ok, -1 stop (error/cap). */
static int scan_range(scan_state *s, uint64_t start, uint64_t end)
{
    start = (start + 7) & ~7ull;
    while (start + 8 <= end) {
        uint64_t len = end - start;
        if (len > SCAN_CHUNK) len = SCAN_CHUNK;
        len &= ~7ull;
        if (s->r->scanned_bytes + len > s->max_bytes) { s->r->aborted = 1; return -1; }
        if (hg_clock_ns() > s->deadline) { s->r->aborted = 2; return -1; }
        struct iovec local = { s->buf, (size_t)len };
        struct iovec remote = { (void *)(uintptr_t)start, (size_t)len };
        ssize_t got = process_vm_readv(s->pid, &local, 1, &remote, 1, 0);
        if (got < 0) {
            if (errno == EFAULT || errno == EIO) {
                /* unmapped or unreadable page (device memory, a race): skip a page */
                uint64_t next = (start | 4095) + 1;
                if (next > end) next = end;
                s->r->unreadable += next - start;
                start = next;
                continue;
            }
            if (errno == EINTR) continue;
            s->r->error = errno;
            return -1;
        }
        if (got == 0) {         /* nothing readable here: skip a page */
            uint64_t next = (start | 4095) + 1;
            if (next > end) next = end;
            s->r->unreadable += next - start;
            start = next;
            continue;
        }
        s->r->scanned_bytes += (uint64_t)got;
        scan_words(s, s->buf, (size_t)got / 8);
        start += (uint64_t)got & ~7ull;
        if (got < 8) start += 8;
    }
    return 0;
}

/* True for a mapping of glibc's own libc (libc.so.6, libc-2.xx.so). */
static int is_libc_path(const char *line)
{
    const char *slash = strrchr(line, '/');
    if (slash == NULL) return 0;
    return strncmp(slash + 1, "libc.so", 7) == 0 || strncmp(slash + 1, "libc-", 5) == 0;
}

/* The root mapping holding `sp`, or -1. */
static long region_of(const root_region *regions, size_t count, uint64_t sp)
{
    for (size_t k = 0; k < count; k++)
        if (sp >= regions[k].start && sp < regions[k].end) return (long)k;
    return -1;
}

int hg_leak_scan(pid_t pid, const uint64_t *addrs, const uint64_t *sizes, size_t n,
                 uint8_t *marked, uint64_t *owners, uint64_t max_bytes, uint64_t max_ns,
                 uint64_t requester_sp, hg_scan_result *result)
{
    memset(result, 0, sizeof *result);
    uint64_t t0 = hg_clock_ns();
    scan_state s = { 0 };
    s.pid = pid;
    s.addrs = addrs;
    s.sizes = sizes;
    s.n = n;
    s.marked = marked;
    s.max_bytes = max_bytes;
    s.deadline = t0 + max_ns;
    s.r = result;
    s.leader = (size_t)-1;
    s.owners = owners;
    if (n > 0) {
        memset(marked, 0, n);
        s.lo = addrs[0];
        s.hi = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t e = block_end(&s, i);
            if (e > s.hi) s.hi = e;
        }
    }
    s.work = malloc((n ? n : 1) * sizeof(size_t));
    s.buf = malloc(SCAN_CHUNK);
    hg_thread_state *threads = calloc(HG_SCAN_MAX_THREADS, sizeof *threads);
    if (s.work == NULL || s.buf == NULL || threads == NULL) {
        result->error = ENOMEM;
        free(s.work);
        free(s.buf);
        free(threads);
        result->elapsed_ns = hg_clock_ns() - t0;
        return -1;
    }

    /* Stop the threads first, then read the map: a thread started (and its
     * stack mapped) meanwhile is stopped too, and its stack is in the map.
     * Their registers are roots, and their stacks count from the stack
     * pointer up (LeakSanitizer and valgrind do the same). */
    int stopped = hg_threads_stop(pid, threads, HG_SCAN_MAX_THREADS);
    if (stopped < 0) {
        result->ptrace_error = -stopped;
        stopped = 0;
    }
    result->threads_stopped = (uint32_t)stopped;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (dir != NULL) {
        struct dirent *d;
        while ((d = readdir(dir)) != NULL)
            if (d->d_name[0] != '.') result->threads++;
        closedir(dir);
    }
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *maps = fopen(path, "re");
    if (maps == NULL) {
        result->error = errno;
        hg_threads_resume(threads, stopped);
        free(threads);
        free(s.work);
        free(s.buf);
        result->elapsed_ns = hg_clock_ns() - t0;
        return -1;
    }

    /* Roots. Read the whole map first: scanning takes time, keep the file short-lived. */
    size_t cap = 64, count = 0;
    root_region *regions = malloc(cap * sizeof *regions);
    char *line = NULL;
    size_t line_cap = 0;
    uint64_t libc_end = 0;          /* end of libc's last file mapping: its .bss follows */
    while (regions && getline(&line, &line_cap, maps) > 0) {
        unsigned long long start, end;
        char perms[8] = { 0 };
        int consumed = 0;
        if (sscanf(line, "%llx-%llx %7s %*s %*s %*s%n", &start, &end, perms, &consumed) < 3)
            continue;
        int libc = is_libc_path(line);
        const char *rest = line + consumed;
        while (*rest == ' ') rest++;
        /* libc's .bss: the anonymous mapping right after its file mappings */
        int allocator = libc || (start == libc_end && (*rest == '\n' || *rest == '\0'));
        if (libc) libc_end = end;
        if (perms[0] != 'r' || perms[1] != 'w')
            continue;
        if (strstr(line, "/memfd:heapgen") != NULL)
            continue;
        if (n > 0 && overlaps_block(&s, start, end))
            continue;
        if (count == cap) {
            cap *= 2;
            void *grown = realloc(regions, cap * sizeof *regions);
            if (!grown) { free(regions); regions = NULL; break; }
            regions = grown;
        }
        regions[count].start = start;
        regions[count].end = end;
        regions[count].low_sp = UINT64_MAX;
        regions[count].allocator = allocator;
        count++;
    }
    free(line);
    fclose(maps);
    int rc = 0;
    if (regions == NULL) {
        result->error = ENOMEM;
        rc = -1;
    }

    if (rc == 0) {
        /* A region holding stack pointers is live from the lowest of them up
         * (threads sharing one mapping keep every live frame). Without ptrace,
         * only the requester's SP is known. */
        for (int t = 0; t <= stopped; t++) {
            uint64_t sp = t < stopped ? threads[t].sp : requester_sp;
            if (t == stopped && (stopped > 0 || sp == 0)) break;
            long k = region_of(regions, count, sp);
            if (k >= 0 && sp < regions[k].low_sp) regions[k].low_sp = sp;
        }
        for (size_t k = 0; k < count; k++) {
            uint64_t live = regions[k].low_sp & ~7ull;
            if (regions[k].low_sp != UINT64_MAX && live > regions[k].start) {
                result->dead_stack_bytes += live - regions[k].start;
                regions[k].start = live;
            }
        }
        for (int t = 0; t < stopped; t++)
            scan_words(&s, threads[t].regs, HG_SCAN_REG_WORDS);
    }
    for (size_t k = 0; rc == 0 && k < count; k++) {
        result->root_regions++;
        uint64_t before = result->scanned_bytes;
        s.starts_only = regions[k].allocator;
        rc = scan_range(&s, regions[k].start, regions[k].end);
        s.starts_only = 0;
        result->root_bytes += result->scanned_bytes - before;
    }
    free(regions);

    /* Mark: scan every reached block, transitively. */
    while (rc == 0 && s.work_len > 0) {
        size_t i = s.work[--s.work_len];
        rc = scan_range(&s, addrs[i], addrs[i] + sizes[i]);
    }
    /* Direct and indirect leaks, valgrind's rule (memcheck's lc_scan cliques):
     * each unreached block not yet indirect, in address order, marks the
     * unreached blocks it reaches as indirect, owned by it. A leader reached
     * by a later one becomes indirect too (its clique follows the chain), so
     * a cycle of unreached blocks is one direct leak (the first in address
     * order that no other reaches) and the rest indirect. */
    if (rc == 0 && owners != NULL) {
        for (size_t i = 0; i < n; i++) owners[i] = i;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (marked[i] != 0) continue;
            s.leader = i;
            rc = scan_range(&s, addrs[i], addrs[i] + sizes[i]);
            while (rc == 0 && s.work_len > 0) {
                size_t j = s.work[--s.work_len];
                rc = scan_range(&s, addrs[j], addrs[j] + sizes[j]);
            }
            s.work_len = 0;
        }
        s.leader = (size_t)-1;
        /* Each indirect block's owner: the end of its chain, a direct block. */
        for (size_t i = 0; i < n; i++) {
            if (marked[i] != 2) continue;
            size_t o = (size_t)owners[i];
            while (marked[o] == 2) o = (size_t)owners[o];
            owners[i] = o;
        }
    }
    /* The heap is read while the threads are stopped: a thread that ran on
     * could move a pointer from a register into a block already scanned. */
    hg_threads_resume(threads, stopped);
    free(threads);
    free(s.work);
    free(s.buf);
    result->elapsed_ns = hg_clock_ns() - t0;
    return rc == 0 && result->error == 0 && result->aborted == 0 ? 0 : -1;
}

ssize_t hg_read_remote_string(pid_t pid, uint64_t address, char *buf, size_t capacity)
{
    size_t got = 0;
    while (got < capacity) {
        /* Page by page: the string may end just before an unmapped page. */
        uint64_t at = address + got;
        size_t len = (size_t)(((at | 4095) + 1) - at);
        if (len > capacity - got) len = capacity - got;
        struct iovec local = { buf + got, len };
        struct iovec remote = { (void *)(uintptr_t)at, len };
        ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n <= 0) return got > 0 && memchr(buf, 0, got) ? (ssize_t)strnlen(buf, got) : -1;
        if (memchr(buf + got, 0, (size_t)n) != NULL) return (ssize_t)strnlen(buf, got + (size_t)n);
        got += (size_t)n;
    }
    return -1;               /* no terminator within capacity */
}
