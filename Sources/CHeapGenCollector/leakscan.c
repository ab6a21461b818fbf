/* Conservative reachability scan of a traced process at exit (heapgen
 * record --leaks): which live blocks does nothing reference any more?
 * See hg_leak_scan in CHeapGenCollector.h; the threads are stopped (and their
 * registers read) by leakscan_threads.c. */
#include "CHeapGenCollector.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
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
    int allocator_data;         /* libc's data: a block's last 8 bytes are no reference (chunk_header) */
    size_t leader;              /* classify pass: the direct block whose marking runs, else (size_t)-1 */
    uint64_t *owners;           /* classify pass: owner index of each indirect block */
    hg_scan_result *r;
    /* The reference graph (hg_leak_scan_graph); g is NULL without one or once dropped. */
    hg_graph *g;
    uint8_t *edged;             /* block i's out-edges are recorded (a former leader is read twice) */
    size_t src;                 /* source block of the words scanned, or (size_t)-1: a root */
    uint32_t region;            /* roots: graph region index of the words scanned */
    int reg_base;               /* registers: the graph's number of the first word */
    int stack;                  /* roots: a stack, whose return addresses name the frames */
    uint64_t pc;                /* stack: code address of the frame being scanned */
    const uint64_t *code;       /* executable mappings as [start, end) pairs, ascending */
    size_t code_count;
    uint64_t caller_slot;       /* stack: the requester's return address into the program is
                                   here; the shim's frames below it are that caller's (0: none) */
    int pagemap;                /* /proc/PID/pagemap, or -1: read every page */
    uint64_t page;              /* the page size */
    int private_map;            /* the range is in a private mapping: its untouched pages are skipped */
    int written_only;           /* read-only private mapping: only pages the program wrote are read */
} scan_state;

/* One root mapping; `allocator` marks libc's writable data (its malloc state). */
typedef struct root_region {
    uint64_t start, end;
    uint64_t low_sp;            /* lowest stack pointer inside, or UINT64_MAX */
    int allocator;
    int private_map;            /* 'p' in its permissions (not MAP_SHARED) */
    int sealed;                 /* readable, not writable: written to once, then protected */
    int stack_shaped;           /* anonymous, right above a no-access page (a guard) */
    uint32_t kind;              /* enum hg_root_kind, for the graph */
    int32_t tid;                /* stack: the thread whose SP is lowest inside */
    uint64_t pc;                /* stack: that thread's instruction pointer */
    char *path;                 /* graph, globals: module path (malloc'd) */
} root_region;

static inline uint64_t block_end(const scan_state *s, size_t i)
{
    uint64_t size = s->sizes[i] ? s->sizes[i] : 1;
    return s->addrs[i] + size;
}

/* True if `p`, found in libc's data, may be malloc's pointer to the header of
 * the chunk after block i rather than a reference to it: glibc's main_arena.top
 * and bins hold chunk headers, and the next chunk's header (16-aligned, as
 * blocks are) lies in the last 8 bytes of block i when its size is within 8
 * of its chunk's usable size. Any other pointer into a block is a reference
 * (stdio's buffer set with setvbuf at an offset, strtok's position): libc
 * holds the program's pointers too. */
static inline int chunk_header(const scan_state *s, uint64_t p, size_t i)
{
    return p != s->addrs[i] && ((p - s->addrs[i]) & 15) == 0 && p + 8 >= block_end(s, i);
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

/* The block a pointer to its end refers to when it is libstdc++'s `new T[0]`
 * for a T with a destructor: an 8-byte block holding the element count, 0,
 * and the program holds block + 8, which `delete[]` takes back (LeakSanitizer
 * makes the same exception). Else (size_t)-1. */
static size_t new_array_of_none(const scan_state *s, uint64_t p)
{
    if ((p & 15) != 8 || p < s->lo + 8) return (size_t)-1;     /* blocks are 16-aligned */
    const size_t i = find_block(s, p - 8);
    uint64_t count = 1;
    if (i == (size_t)-1 || s->addrs[i] != p - 8 || s->sizes[i] != 8
        || hg_read_remote(s->pid, p - 8, &count, sizeof count) != 0 || count != 0)
        return (size_t)-1;
    return i;
}

/* Index of the first block whose end is past `start` (s->n if none). */
static size_t first_block_ending_after(const scan_state *s, uint64_t start)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (block_end(s, mid) <= start) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* True if [start, end) overlaps a live block. */
static int overlaps_block(const scan_state *s, uint64_t start, uint64_t end)
{
    const size_t i = first_block_ending_after(s, start);
    return i < s->n && s->addrs[i] < end;
}

/* Drops the graph: a partial one would be silently wrong (a missing edge
 * looks like a block nothing retains). The scan itself goes on. */
static void graph_drop(scan_state *s, int32_t why)
{
    hg_graph *g = s->g;
    if (g == NULL) return;
    free(g->edges);
    free(g->roots);
    g->edges = NULL;
    g->roots = NULL;
    g->edge_count = g->edge_cap = g->root_count = g->root_cap = 0;
    g->dropped = why;
    s->g = NULL;
}

/* Room for one more edge of either kind in *array (count/cap), within the cap. */
static int graph_room(scan_state *s, void **array, size_t *cap, size_t count, size_t width)
{
    hg_graph *g = s->g;
    if ((uint64_t)(g->edge_count + g->root_count) >= g->max_edges) { graph_drop(s, 1); return 0; }
    if (count < *cap) return 1;
    size_t grown = *cap ? *cap * 2 : 4096;
    void *p = realloc(*array, grown * width);
    if (p == NULL) { graph_drop(s, 2); return 0; }
    *array = p;
    *cap = grown;
    return 1;
}

/* True if `p` points into an executable mapping (a return address, on a stack). */
static int is_code(const scan_state *s, uint64_t p)
{
    size_t lo = 0, hi = s->code_count;          /* first range whose end > p */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->code[2 * mid + 1] <= p) lo = mid + 1; else hi = mid;
    }
    return lo < s->code_count && s->code[2 * lo] <= p;
}

/* Records the reference at `at` (a register number for `reg` >= 0) to block i. */
static void graph_ref(scan_state *s, uint64_t at, int reg, uint64_t p, size_t i)
{
    hg_graph *g = s->g;
    if (s->allocator_data && chunk_header(s, p, i)) return;     /* the scan's rule for libc's data */
    if (s->src != (size_t)-1) {
        if (!graph_room(s, (void **)&g->edges, &g->edge_cap, g->edge_count, sizeof *g->edges)) return;
        hg_graph_edge *e = &g->edges[g->edge_count++];
        e->from = (uint32_t)s->src;
        e->to = (uint32_t)i;
        e->offset = (uint32_t)(at - s->addrs[s->src]);
        return;
    }
    if (!graph_room(s, (void **)&g->roots, &g->root_cap, g->root_count, sizeof *g->roots)) return;
    hg_graph_root_edge *e = &g->roots[g->root_count++];
    e->slot = at;
    e->pc = s->stack ? s->pc : 0;
    e->region = s->region;
    e->to = (uint32_t)i;
    e->reg = reg;
}

/* `base` is the address of words[0]; -1: the words are registers (k = register number). */
static void scan_words(scan_state *s, const uint64_t *words, size_t count, uint64_t base)
{
    for (size_t k = 0; k < count; k++) {
        uint64_t p = words[k];
        /* Stack heuristic: the words above a return address belong to the frame
         * of the function it returns into (the caller of the frame below). Not
         * in the requester's shim frames: the registers they saved are its
         * caller's, and the stale code addresses in them name nothing. */
        if (s->stack && s->g != NULL) {
            if (s->caller_slot != 0 && base + 8 * k >= s->caller_slot) s->caller_slot = 0;
            if (s->caller_slot == 0 && is_code(s, p)) s->pc = p;
        }
        if (p < s->lo || p > s->hi) continue;
        size_t i = find_block(s, p);
        if (i == (size_t)-1 && (i = new_array_of_none(s, p)) == (size_t)-1) continue;
        if (s->g != NULL) {
            if (base == UINT64_MAX) graph_ref(s, s->reg_base + k, s->reg_base + (int)k, p, i);
            else graph_ref(s, base + 8 * k, -1, p, i);
        }
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
        if (s->allocator_data && chunk_header(s, p, i)) continue;
        s->marked[i] = 1;
        s->r->marked++;
        s->work[s->work_len++] = i;
    }
}

/* How many bytes from `start` (at most len) lie in pages the target has in
 * memory or swapped out: *skip is set instead when the page at start has
 * never been touched. In a private mapping an untouched page holds zeros or
 * the file's own bytes, never a reference to a block, and reading it counts
 * against the scan's cap: a JVM's untouched 2 GB Java heap (G1 at -Xms2g)
 * stopped its scan at 1 GiB. A shared mapping's page may hold what another
 * mapping of the same memory wrote (ZGC maps its heap three times): read. */
static uint64_t resident_run(scan_state *s, uint64_t start, uint64_t len, uint64_t *skip)
{
    *skip = 0;
    /* Without pagemap a read-only mapping's written pages cannot be told from
     * the file's (every library's .rodata): not read. */
    if (s->written_only && s->pagemap < 0) { *skip = len; return 0; }
    if (s->pagemap < 0 || !s->private_map) return len;
    /* A read-only private mapping: a page the program wrote before it made it
     * read-only (a table it sealed) is anonymous now; the file's own pages
     * (every library's .rodata) are not, and hold no block's address. */
    const uint64_t file_page = s->written_only ? 1ull << 61 : 0;
    uint64_t entries[SCAN_CHUNK / 4096 + 1];
    const uint64_t first = start / s->page, last = (start + len - 1) / s->page;
    uint64_t count = last - first + 1;
    if (count > sizeof entries / sizeof entries[0]) count = sizeof entries / sizeof entries[0];
    const ssize_t got = pread(s->pagemap, entries, count * 8, (off_t)(first * 8));
    if (got < 8) return len;
    count = (uint64_t)got / 8;
    const uint64_t touched = (1ull << 63) | (1ull << 62);   /* present, swapped */
#define READ_PAGE(e) (((e) & touched) && !((e) & file_page))
    uint64_t k = 0;
    if (!READ_PAGE(entries[0])) {
        while (k < count && !READ_PAGE(entries[k])) k++;
        uint64_t next = (first + k) * s->page;
        *skip = (next > start + len ? start + len : next) - start;
        return 0;
    }
    while (k < count && READ_PAGE(entries[k])) k++;
#undef READ_PAGE
    uint64_t end = (first + k) * s->page;
    return (end > start + len ? start + len : end) - start;
}

/* Reads and scans [start, end) of the target. 0 ok, -1 stop (error/cap). */
static int scan_range(scan_state *s, uint64_t start, uint64_t end)
{
    start = (start + 7) & ~7ull;
    while (start + 8 <= end) {
        uint64_t len = end - start;
        if (len > SCAN_CHUNK) len = SCAN_CHUNK;
        uint64_t skip = 0;
        const uint64_t run = resident_run(s, start, len, &skip);
        if (skip > 0) {
            s->r->untouched += skip;
            start += skip;
            continue;
        }
        if (run < len) len = run;     /* a whole number of pages: 8-aligned, >= 8 */
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
        scan_words(s, s->buf, (size_t)got / 8, start);
        start += (uint64_t)got & ~7ull;
        if (got < 8) start += 8;
    }
    return 0;
}

static int edge_order(const void *a, const void *b)
{
    const hg_graph_edge *x = a, *y = b;
    if (x->to != y->to) return x->to < y->to ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Reads and scans block i; records its out-edges the first time (one edge
 * per target, at the lowest offset). */
static int scan_block(scan_state *s, size_t i)
{
    hg_graph *g = s->g;
    int record = g != NULL && !s->edged[i];
    size_t first = record ? g->edge_count : 0;
    if (!record) s->g = NULL;
    s->src = i;
    s->private_map = 1;         /* malloc's memory */
    int rc = scan_range(s, s->addrs[i], s->addrs[i] + s->sizes[i]);
    s->src = (size_t)-1;
    if (!record) {
        s->g = g;
        return rc;
    }
    if (s->g == NULL) return rc;                /* dropped meanwhile */
    s->edged[i] = 1;
    size_t count = g->edge_count - first;
    if (count > 1) {
        hg_graph_edge *e = g->edges + first;
        qsort(e, count, sizeof *e, edge_order);
        size_t kept = 1;
        for (size_t k = 1; k < count; k++)
            if (e[k].to != e[kept - 1].to) e[kept++] = e[k];
        g->edge_count = first + kept;
    }
    return rc;
}

/* True for a mapping of glibc's own libc (libc.so.6, libc-2.xx.so). */
static int is_libc_path(const char *line)
{
    const char *slash = strrchr(line, '/');
    if (slash == NULL) return 0;
    return strncmp(slash + 1, "libc.so", 7) == 0 || strncmp(slash + 1, "libc-", 5) == 0;
}

/* The thread descriptor glibc keeps at the top of a thread's stack mapping,
 * found by its header: x86-64's tcbhead_t begins with `tcb` and has `self`
 * two words on, both the descriptor's own address, and holds the process's
 * stack and pointer guards (random, the same in every thread: `guards`, read
 * from a live thread's) at words 5 and 6. Self-pointers alone are not enough:
 * an empty circular list head ({next, count, prev} all pointing at itself)
 * in a coroutine's frame looked like one, and its frames were dropped.
 * Looked for in the top 16 KiB of [start, end) (the descriptor lies above
 * the static TLS, below the end); 0 if it is not there. */
static uint64_t find_thread_descriptor(scan_state *s, uint64_t start, uint64_t end, const uint64_t guards[2])
{
    const uint64_t len = end - start < 16384 ? end - start : 16384;
    const uint64_t base = end - len;
    if (len < 56 || hg_read_remote(s->pid, base, s->buf, (size_t)len) != 0)
        return 0;
    const uint64_t *w = (const uint64_t *)(const void *)s->buf;
    uint64_t found = 0;
    for (size_t i = 0; i + 6 < len / 8; i += 2) {
        const uint64_t at = base + i * 8;
        if (w[i] == at && w[i + 2] == at && w[i + 5] == guards[0] && w[i + 6] == guards[1]) found = at;
    }
    return found;
}

/* glibc's HEAP_MAX_SIZE on 64-bit: a thread arena's heaps are mapped at multiples of it. */
#define ARENA_HEAP_ALIGN (64ull << 20)

typedef struct span { uint64_t start, end; } span;

/* The bytes from `at` that a thread arena's heap keeps read-write (its
 * heap_info's mprotect_size), if one starts there, else 0. heap_info is
 * {ar_ptr, prev, size, mprotect_size}: the first heap of an arena has no prev
 * and its malloc_state right after the header; a later one has a prev heap. */
static uint64_t arena_heap_at(const scan_state *s, uint64_t at, uint64_t end)
{
    uint64_t h[4];
    if (at % ARENA_HEAP_ALIGN != 0 || end - at < s->page || hg_read_remote(s->pid, at, h, sizeof h) != 0)
        return 0;
    const uint64_t ar = h[0], prev = h[1], size = h[2], rw = h[3];
    if (size < s->page || size > rw || rw > ARENA_HEAP_ALIGN || rw > end - at || (ar & 7) != 0
        || ar % ARENA_HEAP_ALIGN >= 4096)
        return 0;
    const int first = prev == 0 && ar > at && ar < at + 4096;
    const int later = prev != 0 && prev % ARENA_HEAP_ALIGN == 0;
    return first || later ? rw : 0;
}

/* The mapping glibc made for block i alone (an mmap'd chunk: its size word
 * has IS_MMAPPED, its prev_size word the offset from the mapping's start), or 0. */
static int mmapped_chunk(const scan_state *s, size_t i, span *out)
{
    uint64_t h[2];
    const uint64_t chunk = s->addrs[i] - 16, mask = s->page - 1;
    if (s->addrs[i] < 16 || hg_read_remote(s->pid, chunk, h, sizeof h) != 0) return 0;
    const uint64_t offset = h[0], size = h[1] & ~7ull;
    if (!(h[1] & 2) || offset >= size || offset > chunk || ((chunk - offset) & mask) != 0
        || ((offset + size) & mask) != 0 || size < s->sizes[i] + 16)
        return 0;
    out->start = chunk - offset;
    out->end = chunk + size;
    return 1;
}

/* Appends `x` to v[0..*n) (*cap grown as needed); 0 if out of memory (v is freed). */
static int push_span(span **v, size_t *n, size_t *cap, span x)
{
    if (*n == *cap) {
        span *grown = realloc(*v, (*cap *= 2) * sizeof **v);
        if (grown == NULL) { free(*v); *v = NULL; return 0; }
        *v = grown;
    }
    (*v)[(*n)++] = x;
    return 1;
}

static int span_order(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* malloc's own parts of the anonymous mapping [start, end), ascending in
 * *out (malloc'd, *count of them): the thread-arena heaps at its 64 MiB
 * boundaries and the mmap'd chunks of its blocks. The kernel merges
 * neighbouring anonymous mappings with the same permissions, so a program's
 * own arena, or a thread stack it mapped, may share one line of the map with
 * malloc's. Returns 0; -1 if a block there is in neither (another allocator's
 * layout: the whole mapping is then taken as the allocator's) or out of memory. */
static int allocator_spans(const scan_state *s, uint64_t start, uint64_t end, span **out, size_t *count)
{
    size_t n = 0, cap = 8;
    span *v = malloc(cap * sizeof *v);
    if (v == NULL) return -1;
    /* An arena's heap keeps malloc's state and stale chunks, never a root,
     * with or without live blocks (its top pointer hides a leak otherwise).
     * Boundaries in pages never touched hold no heap: a huge reservation
     * costs a pagemap read per 64 MiB, no more. */
    uint64_t first = (start + ARENA_HEAP_ALIGN - 1) & ~(ARENA_HEAP_ALIGN - 1);
    for (uint64_t at = first, k = 0; at >= first && at < end && k < 65536; at += ARENA_HEAP_ALIGN, k++) {
        if (s->pagemap >= 0) {
            uint64_t entry = 0;
            if (pread(s->pagemap, &entry, 8, (off_t)(at / s->page * 8)) == 8 && !(entry & (3ull << 62)))
                continue;
        }
        const uint64_t rw = arena_heap_at(s, at, end);
        if (rw != 0 && !push_span(&v, &n, &cap, (span){ at, at + rw })) return -1;
    }
    const size_t heaps = n;
    for (size_t i = first_block_ending_after(s, start); i < s->n && s->addrs[i] < end; i++) {
        int covered = 0;
        for (size_t k = 0; k < heaps && !covered; k++)
            covered = s->addrs[i] >= v[k].start && s->addrs[i] < v[k].end;
        if (covered || (n > heaps && s->addrs[i] < v[n - 1].end && s->addrs[i] >= v[n - 1].start))
            continue;
        span c;
        if (!mmapped_chunk(s, i, &c) || c.start < start || c.end > end) { free(v); return -1; }
        if (!push_span(&v, &n, &cap, c)) return -1;
    }
    qsort(v, n, sizeof *v, span_order);
    *out = v;
    *count = n;
    return 0;
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
    return hg_leak_scan_graph(pid, addrs, sizes, n, marked, owners, max_bytes, max_ns,
                              requester_sp, NULL, 0, result, NULL);
}

void hg_graph_free(hg_graph *graph)
{
    if (graph == NULL) return;
    for (size_t k = 0; k < graph->region_count; k++) free(graph->regions[k].path);
    free(graph->regions);
    free(graph->edges);
    free(graph->roots);
    graph->regions = NULL;
    graph->edges = NULL;
    graph->roots = NULL;
    graph->region_count = graph->edge_count = graph->edge_cap = graph->root_count = graph->root_cap = 0;
}

/* Appends [start, end) to the executable ranges (code/count/cap). 0 if out of memory. */
static int add_code(uint64_t **code, size_t *count, size_t *cap, uint64_t start, uint64_t end)
{
    if (*count == *cap) {
        size_t grown = *cap ? *cap * 2 : 64;
        uint64_t *p = realloc(*code, grown * 2 * sizeof *p);
        if (p == NULL) return 0;
        *code = p;
        *cap = grown;
    }
    (*code)[2 * *count] = start;
    (*code)[2 * *count + 1] = end;
    (*count)++;
    return 1;
}

int hg_leak_scan_graph(pid_t pid, const uint64_t *addrs, const uint64_t *sizes, size_t n,
                       uint8_t *marked, uint64_t *owners, uint64_t max_bytes, uint64_t max_ns,
                       uint64_t requester_sp, const hg_scan_caller *caller, int forked,
                       hg_scan_result *result, hg_graph *graph)
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
    s.src = (size_t)-1;
    uint64_t *code = NULL;
    size_t code_count = 0, code_cap = 0;
    if (graph != NULL) {
        uint64_t cap_edges = graph->max_edges;
        memset(graph, 0, sizeof *graph);
        graph->max_edges = cap_edges;
        /* Every block's edges are read in the classify pass, which needs owners. */
        if (owners == NULL || cap_edges == 0) graph->dropped = 3;
        else if ((s.edged = calloc(n ? n : 1, 1)) == NULL) graph->dropped = 2;
        else s.g = graph;
    }
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
    {
        char pm[64];
        snprintf(pm, sizeof pm, "/proc/%d/pagemap", (int)pid);
        s.pagemap = open(pm, O_RDONLY | O_CLOEXEC);
        const long page = sysconf(_SC_PAGESIZE);
        s.page = page > 0 ? (uint64_t)page : 4096;
    }
    hg_thread_state *threads = calloc(HG_SCAN_MAX_THREADS, sizeof *threads);
    if (s.work == NULL || s.buf == NULL || threads == NULL) {
        result->error = ENOMEM;
        free(s.work);
        free(s.buf);
        if (s.pagemap >= 0) close(s.pagemap);
        free(threads);
        free(s.edged);
        if (s.g) graph_drop(&s, 2);
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
    /* The threads still running, and one of them to read the memory through:
     * a leader that left with pthread_exit() has none of its own any more. */
    const int leader_ended = hg_task_ended(pid, NULL);
    /* The leader's stack then holds only dead frames below the process's
     * initial stack pointer (read from a live thread); above it are argv,
     * the environment and the auxiliary vector, which stay roots. */
    uint64_t dead_leader_stack = 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (dir != NULL) {
        struct dirent *d;
        while ((d = readdir(dir)) != NULL) {
            const pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);
            uint64_t start_stack = 0;
            if (tid <= 0 || (leader_ended && hg_task_ended(tid, &start_stack))) continue;
            result->threads++;
            if (s.pid == pid && leader_ended) {
                s.pid = tid;
                dead_leader_stack = start_stack;
            }
        }
        closedir(dir);
    }
    snprintf(path, sizeof path, "/proc/%d/maps", (int)s.pid);
    FILE *maps = fopen(path, "re");
    if (maps == NULL) {
        result->error = errno;
        hg_threads_resume(threads, stopped);
        free(threads);
        free(s.work);
        free(s.buf);
        if (s.pagemap >= 0) close(s.pagemap);
        free(s.edged);
        if (s.g) graph_drop(&s, 3);
        result->elapsed_ns = hg_clock_ns() - t0;
        return -1;
    }

    /* Roots. Read the whole map first: scanning takes time, keep the file short-lived. */
    size_t cap = 64, count = 0;
    root_region *regions = malloc(cap * sizeof *regions);
    char *line = NULL;
    size_t line_cap = 0;
    uint64_t libc_end = 0;          /* end of libc's last file mapping: its .bss follows */
    uint64_t file_end = 0;          /* end of the last file mapping: its .bss may follow */
    char file_path[4096] = { 0 };
    uint64_t guard_end = 0;         /* end of the last no-access mapping */
    char own_segment[48];           /* our segments' names: heapgen:<collector pid>:<socket> */
    const size_t own_len = (size_t)snprintf(own_segment, sizeof own_segment, "/memfd:heapgen:%d:", (int)getpid());
    while (regions && getline(&line, &line_cap, maps) > 0) {
        unsigned long long start, end;
        char perms[8] = { 0 };
        int consumed = 0;
        if (sscanf(line, "%llx-%llx %7s %*s %*s %*s%n", &start, &end, perms, &consumed) < 3)
            continue;
        const int above_guard = guard_end != 0 && start == guard_end;
        if (strncmp(perms, "---", 3) == 0)
            guard_end = end;
        int libc = is_libc_path(line);
        const char *rest = line + consumed;
        while (*rest == ' ') rest++;
        /* libc's .bss: the anonymous mapping right after its file mappings */
        int anonymous = *rest == '\n' || *rest == '\0';
        int allocator = libc || (start == libc_end && anonymous);
        if (libc) libc_end = end;
        uint32_t kind = HG_ROOT_OTHER;
        if (s.g != NULL) {
            size_t len = strcspn(rest, "\n");
            if (*rest == '/') {
                kind = HG_ROOT_GLOBAL;
                if (len >= sizeof file_path) len = sizeof file_path - 1;
                memcpy(file_path, rest, len);
                file_path[len] = 0;
                file_end = end;
            } else if (anonymous && start == file_end && file_end != 0) {
                kind = HG_ROOT_GLOBAL;      /* .bss: the anonymous mapping right after a module's */
            } else if (strncmp(rest, "[stack]", 7) == 0) {
                kind = HG_ROOT_STACK;
            }
            if (perms[2] == 'x' && !add_code(&code, &code_count, &code_cap, start, end))
                graph_drop(&s, 2);
        }
        /* Read-only private memory is a root too, its written pages only (a
         * table sealed with mprotect: LeakSanitizer scans a module's data by
         * its ELF flags, whatever mprotect did since); not code, and not the
         * kernel's [vvar]. */
        const int sealed = perms[0] == 'r' && perms[1] != 'w' && perms[2] != 'x' && perms[3] == 'p' && *rest != '[';
        if (perms[0] != 'r' || (perms[1] != 'w' && !sealed))
            continue;
        /* Our own segment holds the addresses of blocks; a memfd of the
         * program's that is merely named like it is the program's. */
        if (strncmp(rest, own_segment, own_len) == 0 || strncmp(rest, "/memfd:heapgen (deleted)\n", 25) == 0)
            continue;
        /* brk's heap is malloc's alone: its chunks, free ones stale, are never roots. */
        if (strncmp(rest, "[heap]", 6) == 0)
            continue;
        span *parts = NULL;
        size_t part_count = 0;
        if (anonymous ? allocator_spans(&s, start, end, &parts, &part_count) != 0
                      : n > 0 && overlaps_block(&s, start, end))
            continue;
        /* The roots: the mapping less malloc's parts. */
        uint64_t at = start;
        for (size_t k = 0; k <= part_count && regions != NULL; k++) {
            const uint64_t piece_end = k < part_count ? parts[k].start : end;
            if (piece_end >= at + 8) {
                if (count == cap) {
                    cap *= 2;
                    void *grown = realloc(regions, cap * sizeof *regions);
                    if (!grown) { free(regions); regions = NULL; break; }
                    regions = grown;
                }
                regions[count].start = at;
                regions[count].end = piece_end;
                regions[count].low_sp = UINT64_MAX;
                regions[count].allocator = allocator;
                regions[count].private_map = perms[3] == 'p';
                regions[count].sealed = sealed;
                regions[count].stack_shaped = anonymous && above_guard && at == start;
                regions[count].kind = kind;
                regions[count].tid = 0;
                regions[count].pc = 0;
                regions[count].path = kind == HG_ROOT_GLOBAL && s.g != NULL ? strdup(file_path) : NULL;
                count++;
            }
            if (k < part_count && parts[k].end > at) at = parts[k].end;
        }
        free(parts);
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
        const uint64_t live_from = caller != NULL ? caller->live_from : 0;
        for (int t = 0; t <= stopped; t++) {
            uint64_t sp = t < stopped ? threads[t].sp : requester_sp;
            if (t == stopped && (stopped > 0 || sp == 0)) break;
            long k = region_of(regions, count, sp);
            /* The thread running exit()'s handlers (its SP a little below
             * live_from, in the same mapping): exit's frames are not live. */
            if (k >= 0 && live_from > sp && live_from - sp < 65536 && live_from < regions[k].end)
                sp = live_from;
            if (k >= 0 && regions[k].kind != HG_ROOT_STACK) {
                regions[k].kind = HG_ROOT_STACK;    /* e.g. a thread stack mmap'd right after a module */
                free(regions[k].path);
                regions[k].path = NULL;
            }
            if (k >= 0 && sp < regions[k].low_sp) {
                regions[k].low_sp = sp;
                regions[k].tid = t < stopped ? threads[t].tid : 0;
                regions[k].pc = t < stopped ? threads[t].pc : 0;
            }
        }
        long leader_stack = dead_leader_stack != 0 ? region_of(regions, count, dead_leader_stack) : -1;
        if (leader_stack >= 0 && regions[leader_stack].low_sp == UINT64_MAX)
            regions[leader_stack].low_sp = dead_leader_stack;
        for (size_t k = 0; k < count; k++) {
            uint64_t live = regions[k].low_sp & ~7ull;
            if (regions[k].low_sp != UINT64_MAX && live > regions[k].start) {
                result->dead_stack_bytes += live - regions[k].start;
                regions[k].start = live;
            }
        }
        /* A thread stack that holds no stopped thread's stack pointer or
         * thread pointer is a dead thread's: glibc keeps it cached for the
         * next thread, or until pthread_join. Its frames and TLS are as stale
         * as what lies below a live thread's SP, and hide leaks (LeakSanitizer
         * scans none of it; valgrind the descriptor and the TLS): only the
         * descriptor stays a root, for the value pthread_join may still
         * return. Known only when every thread is stopped. Not in a forked
         * child: there the parent's other threads left stacks just like
         * these, holding what those threads held at the fork (valgrind has
         * them as roots too). */
        uint64_t tcb[7];
        const int guards_known = stopped > 0 && hg_read_remote(s.pid, threads[0].tp, tcb, sizeof tcb) == 0
                                 && tcb[0] == threads[0].tp;
        for (size_t k = 0; guards_known && !forked && (uint32_t)stopped >= result->threads && k < count; k++) {
            if (!regions[k].stack_shaped || regions[k].low_sp != UINT64_MAX) continue;
            int live = 0;
            for (int t = 0; t < stopped && !live; t++)
                live = threads[t].tp >= regions[k].start && threads[t].tp < regions[k].end;
            const uint64_t descriptor = live ? 0 : find_thread_descriptor(&s, regions[k].start, regions[k].end, tcb + 5);
            if (descriptor > regions[k].start) {
                result->dead_stack_bytes += descriptor - regions[k].start;
                regions[k].start = descriptor;
            }
        }
        s.code = code;
        s.code_count = code_count;
        for (int t = 0; t < stopped; t++) {
            s.region = (uint32_t)(count + (size_t)t);     /* after the mappings */
            s.reg_base = 0;
            scan_words(&s, threads[t].regs, HG_SCAN_REG_WORDS, UINT64_MAX);
            s.reg_base = HG_SCAN_REG_WORDS;
            scan_words(&s, threads[t].vregs, HG_SCAN_VREG_WORDS, UINT64_MAX);
        }
    }
    for (size_t k = 0; rc == 0 && k < count; k++) {
        result->root_regions++;
        uint64_t before = result->scanned_bytes;
        s.allocator_data = regions[k].allocator;
        s.region = (uint32_t)k;
        s.stack = regions[k].kind == HG_ROOT_STACK;
        s.pc = regions[k].pc;       /* slots below the first return address: the thread's RIP */
        s.caller_slot = 0;
        if (s.stack && caller != NULL && caller->pc != 0 && caller->slot >= regions[k].start
            && caller->slot < regions[k].end && requester_sp >= regions[k].start
            && requester_sp < regions[k].end) {
            s.caller_slot = caller->slot;
            s.pc = caller->pc;
        }
        s.private_map = regions[k].private_map;
        s.written_only = regions[k].sealed;
        rc = scan_range(&s, regions[k].start, regions[k].end);
        s.written_only = 0;
        s.allocator_data = 0;
        s.stack = 0;
        result->root_bytes += result->scanned_bytes - before;
    }
    /* The graph keeps the regions (their paths move into it). */
    if (s.g != NULL && regions != NULL) {
        hg_graph_region *out = calloc(count + (size_t)stopped + 1, sizeof *out);
        if (out == NULL) {
            graph_drop(&s, 2);
        } else {
            for (size_t k = 0; k < count; k++) {
                out[k] = (hg_graph_region){ regions[k].start, regions[k].end, regions[k].kind,
                                            regions[k].tid, regions[k].path };
                regions[k].path = NULL;
            }
            for (int t = 0; t < stopped; t++)
                out[count + (size_t)t] = (hg_graph_region){ 0, 0, HG_ROOT_REGISTERS, threads[t].tid, NULL };
            graph->regions = out;
            graph->region_count = count + (size_t)stopped;
        }
    }
    for (size_t k = 0; regions != NULL && k < count; k++) free(regions[k].path);
    free(regions);
    free(code);
    s.code = NULL;
    s.code_count = 0;

    /* Mark: scan every reached block, transitively. */
    while (rc == 0 && s.work_len > 0) {
        size_t i = s.work[--s.work_len];
        rc = scan_block(&s, i);
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
            rc = scan_block(&s, i);
            while (rc == 0 && s.work_len > 0) {
                size_t j = s.work[--s.work_len];
                rc = scan_block(&s, j);
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
    if (s.pagemap >= 0) close(s.pagemap);
    free(s.edged);
    if (s.g != NULL && (rc != 0 || result->error != 0 || result->aborted != 0)) {
        graph_drop(&s, 3);
        hg_graph_free(graph);
        graph->dropped = 3;
    }
    result->elapsed_ns = hg_clock_ns() - t0;
    return rc == 0 && result->error == 0 && result->aborted == 0 ? 0 : -1;
}

int hg_read_remote(pid_t pid, uint64_t at, void *out, size_t len)
{
    if (at == 0 || at + len < at) return -1;
    struct iovec local = { out, len };
    struct iovec remote = { (void *)(uintptr_t)at, len };
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
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
