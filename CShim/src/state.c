/*
 * state.c — start-up, the handshake with the collector, fork, and giving up
 * cleanly when the collector is gone.
 *
 * Each process image makes its own segment (memfd: mode 0600, reachable
 * only through our descriptors) and hands it to the collector over a
 * connection of its own to the collector's rendezvous (transport.c). Until the collector answers, the first allocation
 * waits; a declined or unanswered hello leaves the program running
 * untraced, never blocked.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "shim.h"
#include "nextalloc.h"
#include "unwind.h"

hg_shim g_hg = { .conn = { .fd = -1 } };
volatile int g_hg_phase;
HG_TLS int hg_guard;
HG_TLS uintptr_t hg_guard_frame;

/* Until the wipe-on-fork page exists, and where the kernel has none: a
 * word that is never 0 (no raw-clone detection then). */
static uint32_t armed_fallback = 1;
volatile uint32_t *g_hg_armed = &armed_fallback;

/* Is this the process g_hg's segment belongs to? Not a fork or clone child
 * that is not set up yet: the wipe-on-fork word reads 0 there, where a pid
 * compare alone cannot tell (in a PID namespace of its own a child may have
 * its parent's number: pid 1 starting a nested namespace's init). Nor a
 * vfork child, which shares that word but not the pid. Without the page
 * (the fallback word is never 0) the pid decides alone. */
static int owns_segment(void)
{
    /* (In a sandbox getpid may be fatal, and no child is traced there.) */
    return *g_hg_armed != 0 && (hg_sandboxed() || g_hg.pid == getpid());
}

/* Settings read once from the environment. */
static uint64_t cfg_ring_slots = HG_DEFAULT_RING_SLOTS;
static uint64_t cfg_arena_bytes = (uint64_t)HG_DEFAULT_ARENA_MB << 20;
static uint64_t cfg_control_bytes = HG_CONTROL_SIZE;
static uint32_t cfg_max_frames = HG_DEFAULT_FRAMES;
static int cfg_leak_scan;
static int cfg_retention;                 /* HEAPGEN_RETENTION=1: a graph-only scan at exit */
/* HEAPGEN_RETENTION_AT, copied (the environment may be scrubbed): labels, one
 * per line, each ended by '\n'. Empty: no mark asks for a scan. */
static char cfg_retention_at[4096];
/* Longer labels never match: the request (6 bytes a character at worst) is on the caller's stack. */
#define HG_RETENTION_LABEL_MAX 512
static size_t cfg_retention_at_len;

/* The connection a forking thread made for its child (fork_prepare): the
 * child says hello on it, so the collector knows a hello is coming before
 * fork() even returns in the parent. Per thread: threads may fork at once. */
static HG_TLS hg_owned_fd fork_conn = { .fd = -1 };

static long env_long(const char *name, long fallback)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return fallback;
    char *end;
    long v = strtol(s, &end, 10);
    return *end == '\0' ? v : fallback;
}

void hg_detach(void)
{
    if (g_hg.hdr)
        __atomic_store_n(&g_hg.hdr->detached, 1, __ATOMIC_RELEASE);
}

/* A private page that reads 0 in a child made without fork handlers. */
static void arm_clone_detection(void)
{
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return;
    if (madvise(p, 4096, MADV_WIPEONFORK) != 0) {
        munmap(p, 4096);
        return;
    }
    *(volatile uint32_t *)p = 1;
    g_hg_armed = p;
}

/* Under RLIMIT_AS the segment must not eat the program's address space:
 * the whole segment is held to 1/HG_AS_FRACTION of the limit (ring first
 * down to a quarter of that, control area to its minimum, the arena gets
 * the rest). Default sizes (about 41 MiB) apply from a 660 MiB limit up. */
#define HG_AS_FRACTION 16
static void fit_address_space_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return;
    const uint64_t page = 4096, mib = 1u << 20;
    uint64_t budget = (uint64_t)rl.rlim_cur / HG_AS_FRACTION;
    uint64_t total = page + cfg_ring_slots * sizeof(hg_slot) + cfg_control_bytes + cfg_arena_bytes;
    if (total <= budget)
        return;
    while (cfg_ring_slots > 1024 && cfg_ring_slots * sizeof(hg_slot) > budget / 4)
        cfg_ring_slots >>= 1;
    cfg_control_bytes = HG_CONTROL_MIN_SIZE;
    uint64_t rest = page + cfg_ring_slots * sizeof(hg_slot) + cfg_control_bytes;
    uint64_t arena = budget > rest + 2 * mib ? (budget - rest) & ~(page - 1) : 2 * mib;
    if (arena < cfg_arena_bytes)
        cfg_arena_bytes = arena;
}

/* Waits for the collector's verdict. 1 accepted, 0 declined or no answer. */
static int await_verdict(hg_header *h)
{
    for (int i = 0; i < 100000; i++) {            /* at most ~10 s */
        uint32_t st = __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);
        if (st == HG_STATE_ACCEPTED)
            return 1;
        if (st == HG_STATE_DECLINED)
            return 0;
        /* The collector closes its end right after answering: look at the
         * answer once more before taking the close for its death. */
        if (i % 100 == 99 && !hg_collector_alive())
            return __atomic_load_n(&h->state, __ATOMIC_ACQUIRE) == HG_STATE_ACCEPTED;
        struct timespec ts = { 0, 100 * 1000 };
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* The fork id travels to the child in this thread's TLS (the child's only
 * thread is the one that forked), so concurrent forks cannot mix them up. */
static uint64_t g_fork_counter;
static HG_TLS uint64_t hg_fork_id;
/* The forking process's pid, for the child's hello: the child's getppid() is
 * already 1 when a daemon's parent exited right after fork(), and the
 * collector finds the live heap the child inherited by its parent's pid. */
static HG_TLS pid_t hg_fork_parent;

/* open_segment's work: its hello, the wait for the verdict and the closes
 * are cancellation points, so open_segment runs it with cancellation off. */
static int make_segment(uint32_t origin, hg_owned_fd *conn)
{
    const uint64_t page = 4096;
    const uint64_t ring_off = (sizeof(hg_header) + page - 1) & ~(page - 1);
    const uint64_t ring_bytes = cfg_ring_slots * sizeof(hg_slot);
    const uint64_t control_off = ring_off + ((ring_bytes + page - 1) & ~(page - 1));
    const uint64_t arena_off = control_off + cfg_control_bytes;
    const uint64_t size = arena_off + cfg_arena_bytes;

    g_hg.conn = *conn;
    conn->fd = -1;
    /* MFD_CLOEXEC | MFD_ALLOW_SEALING: the collector seals the size so we
     * cannot pull pages out from under its mapping. */
    int fd = (int)syscall(SYS_memfd_create, hg_transport_segment_name(), 1u | 2u);
    if (fd < 0)
        goto fail;
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        goto fail;
    }
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        close(fd);
        goto fail;
    }
    hg_header *h = base;
    h->magic = HG_PROTOCOL_MAGIC;
    h->version = HG_PROTOCOL_VERSION;
    h->header_size = sizeof(hg_header);
    h->segment_size = size;
    h->ring_offset = ring_off;
    h->ring_slots = cfg_ring_slots;
    h->arena_offset = arena_off;
    h->arena_size = cfg_arena_bytes;
    h->pid = getpid();
    h->ppid = origin == HG_ORIGIN_FORK && hg_fork_parent != 0 ? hg_fork_parent : getppid();
    h->origin = origin;
    h->max_frames = cfg_max_frames;
    h->control_offset = control_off;
    h->control_size = cfg_control_bytes;
    h->arena_state = 8;         /* epoch 0, from byte 8: ref 0 means "none" */
    hg_next_describe(h);        /* which allocator we wrap (nextalloc.c) */
    h->parent_fork_id = origin == HG_ORIGIN_FORK ? hg_fork_id : 0;

    hg_hello hello = { HG_PROTOCOL_MAGIC, HG_PROTOCOL_VERSION, origin, h->pid, h->ppid, size };
    int ok = hg_send_hello(&g_hg.conn, fd, &hello) && await_verdict(h);
    if (!ok) {
        close(fd);
        munmap(base, size);
        goto fail;
    }
    /* Keep no descriptor: the program's table stays exactly its own (a
     * program that lists /proc/self/fd, as test suites do, sees what it sees
     * natively). The mapping outlives the memfd; the collector tells an exec
     * by our HG_K_EXEC record and our mappings, and our waits ask the
     * rendezvous whether it is alive (hg_collector_alive). */
    close(fd);
    hg_fd_release(&g_hg.conn);
    g_hg.hdr = h;
    g_hg.ring = (hg_slot *)((uint8_t *)base + ring_off);
    g_hg.arena = (uint8_t *)base + arena_off;
    g_hg.control = (uint8_t *)base + control_off;
    g_hg.control_size = cfg_control_bytes;
    g_hg.ring_mask = cfg_ring_slots - 1;
    g_hg.ring_shift = (uint32_t)__builtin_ctzll(cfg_ring_slots);
    g_hg.arena_size = cfg_arena_bytes;
    g_hg.arena_half = (cfg_arena_bytes / 2) & ~7ull;
    g_hg.max_frames = cfg_max_frames;
    g_hg.segment_gen++;
    hg_unwind_set_fallback_sink(&h->unwind_fallbacks);
    __atomic_add_fetch(&g_hg.epoch, 1, __ATOMIC_RELEASE);
    return 1;
fail:
    hg_fd_release(&g_hg.conn);
    return 0;
}

/* Creates, announces over `conn` (ours from now on) and, if accepted,
 * installs a new segment. */
static int open_segment(uint32_t origin, hg_owned_fd *conn)
{
    int cancel = hg_cancel_off();
    int ok = make_segment(origin, conn);
    hg_cancel_restore(cancel);
    return ok;
}

static void fork_prepare(void)
{
    hg_fork_id = 0;
    hg_fork_parent = g_hg.pid;  /* no system call: a seccomp sandbox may forbid getpid */
    if (g_hg_phase == 2 && hg_env_follow_fork() && hg_guard == 0 && !g_hg.hdr->detached && !hg_sandboxed()) {
        /* The live heap the child inherits is the parent's at this record. */
        if (HG_UNLIKELY(hg_thread_gen != g_hg.segment_gen))
            hg_thread_announce();
        /* Connect for the child now: see fork_conn. Without a connection
         * (heapgen's socket out of reach: a mount namespace over its
         * directory, no descriptor left) the child runs untraced, and the
         * record says so and why. */
        const int saved = errno;
        hg_guard_enter();
        errno = 0;
        const int connected = hg_connect(&fork_conn);
        const int why = connected ? 0 : errno;
        if (!connected)
            fork_conn.fd = -1;
        hg_guard_leave();
        errno = saved;
        hg_fork_id = __atomic_add_fetch(&g_fork_counter, 1, __ATOMIC_RELAXED);
        hg_emit(HG_K_FORK, hg_fork_id, !connected, 0, (uint32_t)why);
    }
    hg_modules_fork_prepare();
}

static void fork_parent(void)
{
    hg_fork_id = 0;              /* a later raw clone() child inherits no snapshot */
    hg_fork_parent = 0;
    hg_modules_fork_parent();
    hg_fd_release(&fork_conn);   /* the child has its own copy */
}

/* This process is a child of the one that made g_hg's segment: forget the
 * parent's segment (never write into it: the events would mix, at the
 * same addresses) and get one of our own, or run untraced if the
 * collector declines or descendants are not followed. `conn` is a
 * connection made for us, or none. */
static void become_child(hg_owned_fd *conn)
{
    hg_guard_enter();
    hg_modules_fork_child();
    hg_control_fork_child();
    if (hg_sandboxed()) {
        /* No connecting from a sandbox (see sandbox.c): untraced, without a
         * system call. The parent's segment stays mapped here, unused, and
         * its descriptors open (close-on-exec, as the parent's are). */
        g_hg.hdr = NULL;
        *g_hg_armed = 1;
        __atomic_store_n(&g_hg_phase, 3, __ATOMIC_RELEASE);
        hg_guard_leave();
        return;
    }
    hg_header *old = g_hg.hdr;
    g_hg_phase = 1;
    hg_unwind_set_fallback_sink(NULL);
    munmap(old, old->segment_size);
    /* The parent's connection (the child's copy), had it one: only if still ours. */
    hg_fd_release(&g_hg.conn);
    g_hg.hdr = NULL;
    g_hg.pid = getpid();
    *g_hg_armed = 1;
    int phase = 3;
    if (hg_env_follow_fork()) {
        hg_owned_fd c = *conn;
        conn->fd = -1;
        if (!hg_fd_owned(&c))
            c.fd = -1;
        /* A fork whose parent could not connect for it stays untraced, as the
         * parent's record says; a raw clone child (no fork id) tries itself. */
        if ((c.fd >= 0 || (hg_fork_id == 0 && hg_connect(&c))) && open_segment(HG_ORIGIN_FORK, &c)) {
            hg_modules_reset();
            hg_modules_scan();
            phase = 2;
        } else {
            /* Untraced (heapgen cannot be reached from here: a chroot, a
             * namespace): what it execs gets the environment it would have
             * had without heapgen, as with --no-follow-fork. */
            hg_env_scrub();
        }
    } else {
        hg_fd_release(conn);
        hg_env_scrub();
    }
    hg_fork_parent = 0;         /* a raw clone() child of ours is no child of our parent's fork */
    __atomic_store_n(&g_hg_phase, phase, __ATOMIC_RELEASE);
    hg_guard_leave();
}

static void fork_child(void)
{
    if (g_hg_phase != 2 || owns_segment()) {
        /* Untraced, or hg_new_process already ran (a handler registered
         * before ours allocated). */
        hg_modules_fork_child();
        hg_control_fork_child();
        hg_fd_release(&fork_conn);
        return;
    }
    become_child(&fork_conn);
}

/* The wipe-on-fork word read 0: a raw clone() child (or a fork child
 * before our handler ran). Returns whether this process now tracks. */
int hg_new_process(void)
{
    if (g_hg_phase != 2 || hg_guard != 0)
        return 0;
    hg_owned_fd none = { .fd = -1 };
    become_child(&none);
    return g_hg_phase == 2;
}

void hg_init_slow(void)
{
    int expected = 0;
    if (!__atomic_compare_exchange_n(&g_hg_phase, &expected, 1, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;         /* another thread is at it, or it is done */
    hg_guard_enter();
    int phase = 3;
    if (hg_transport_configure()) {
        hg_env_configure();
        hg_modules_init();
        hg_wait_init();
        long slots = env_long(HG_ENV_RING_SLOTS, HG_DEFAULT_RING_SLOTS);
        if (slots >= 1024 && slots <= (1l << 26) && (slots & (slots - 1)) == 0)
            cfg_ring_slots = (uint64_t)slots;
        long arena = env_long(HG_ENV_ARENA_MB, HG_DEFAULT_ARENA_MB);
        /* Bigger arenas only mean fewer epochs; tagged refs address at
         * most HG_MAX_ARENA_MB. */
        if (arena >= 2)
            cfg_arena_bytes = (uint64_t)(arena < HG_MAX_ARENA_MB ? arena : HG_MAX_ARENA_MB) << 20;
        long frames = env_long(HG_ENV_MAX_FRAMES, HG_DEFAULT_FRAMES);
        if (frames >= 1 && frames <= HG_MAX_FRAMES)
            cfg_max_frames = (uint32_t)frames;
        const char *scan = getenv(HG_ENV_LEAK_SCAN);
        cfg_leak_scan = scan != NULL && strcmp(scan, "1") == 0;
        const char *retention = getenv(HG_ENV_RETENTION);
        cfg_retention = retention != NULL && strcmp(retention, "1") == 0;
        const char *at = getenv(HG_ENV_RETENTION_AT);
        size_t at_len = at ? strlen(at) : 0;
        if (at_len > 0 && at_len + 1 < sizeof cfg_retention_at) {   /* longer: ignored, as a bad value */
            memcpy(cfg_retention_at, at, at_len);
            cfg_retention_at[at_len] = '\n';
            cfg_retention_at_len = at_len + 1;
        }
        fit_address_space_limit();
        const char *mode = getenv(HG_ENV_UNWIND);
        hg_unwind_init();
        if (mode && strcmp(mode, "libunwind") == 0)
            hg_unwind_set_mode(HG_UNWIND_LIBUNWIND);
        const char *shadow = getenv(HG_ENV_UNWIND_SHADOW);
        if (shadow && strcmp(shadow, "0") == 0)
            hg_unwind_set_shadow(0);
        const char *memo = getenv(HG_ENV_UNWIND_MEMO);
        if (memo && strcmp(memo, "0") == 0)
            hg_unwind_set_memo(0);
        /* Not following exec: from here on the program's environment is
         * the one it would have had without heapgen. */
        if (!hg_env_follow_exec())
            hg_env_scrub();
        g_hg.pid = getpid();
        arm_clone_detection();
        hg_owned_fd conn;
        if (hg_connect(&conn) && open_segment(HG_ORIGIN_INIT, &conn)) {
            pthread_atfork(fork_prepare, fork_parent, fork_child);
            hg_modules_scan();
            phase = 2;
        }
    }
    __atomic_store_n(&g_hg_phase, phase, __ATOMIC_RELEASE);
    hg_guard_leave();
}

/* No crtbegin here (-nostartfiles), so no __dso_handle for atexit() and
 * at_quick_exit(): register directly. */
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
extern int __cxa_at_quick_exit(void (*fn)(void), void *dso);

/* libc's exit() and quick_exit(), found at start-up (find_exit_functions). */
static uintptr_t libc_exit, libc_quick_exit;

/* Whether `w` is the return address of the call of the handler loop in
 * exit() or quick_exit(): a few bytes into either. */
static int returns_into_exit(uintptr_t w)
{
    return (libc_exit != 0 && w > libc_exit && w < libc_exit + 64) ||
           (libc_quick_exit != 0 && w > libc_quick_exit && w < libc_quick_exit + 64);
}

/* Where the live part of this thread's stack begins while exit() (or
 * quick_exit()) runs its handlers: just above the slot holding the return
 * address into it (pushed by its call of the handler loop), found by looking up from `from`,
 * the handler's frame, at most 1 KiB (the loop's and exit's frames are a few
 * hundred bytes; the caller's frames, and a thread's TLS and descriptor, lie
 * above them, so the reads stay in the stack). Below it are exit's own
 * frames and whatever dead frames of the program they did not overwrite,
 * which would keep lost blocks "reachable" (a pointer left by a function
 * main called before it returned). 0 if not found. */
static uintptr_t exit_frame_top(uintptr_t from)
{
    if (libc_exit == 0 && libc_quick_exit == 0)
        return 0;
    for (uintptr_t at = (from + 7) & ~(uintptr_t)7; at < from + 1024; at += 8) {
        if (returns_into_exit(*(const uintptr_t *)at))
            return at + 8;
    }
    return 0;
}

/* HEAPGEN_LEAK_SCAN=1: the program is exiting; every allocation and free it made is
 * in the ring before the request, and it stays blocked here while the collector
 * reads its memory (heapgen record --leaks). Forked children too: the collector
 * knows the blocks they inherited. `sp` bounds this thread's live stack when the
 * collector may not stop the threads; the buffers are zeroed so that no stale
 * pointer of a returned frame lies in this live one. `lsan` is the address of
 * the text the program's __lsan_default_suppressions() returns (LeakSanitizer's
 * hook): the collector reads it while this thread waits. */
static size_t put_hex(char *out, uintptr_t v)
{
    for (int shift = 60; shift >= 0; shift -= 4)
        *out++ = "0123456789abcdef"[(v >> shift) & 15];
    return 16;
}

/* Under --retention alone the exit scan takes the graph but judges nothing:
 * the trace gets no `unreachable` records, as without --leaks. From _exit
 * (`from_exit_call` non-NULL) it must not wait on the control lock: a signal
 * handler may have interrupted its holder. */
static void hg_leak_scan_at_exit(void *from_exit_call)
{
    if (g_hg_phase != 2 || g_hg.hdr == NULL || !owns_segment())
        return;
    /* Once: a thread may call _exit while another runs the exit handlers. */
    static int scanned;
    if (__atomic_exchange_n(&scanned, 1, __ATOMIC_ACQ_REL))
        return;
    static const char head[] = "{\"op\":\"scan\",\"exit\":true,\"sp\":\"0x";
    static const char lsan[] = "\",\"lsan\":\"0x";
    static const char live[] = "\",\"liveFrom\":\"0x";
    static const char nojudge[] = "\",\"judge\":false";
    char request[200];
    char response[256];
    memset(request, 0, sizeof request);
    memset(response, 0, sizeof response);
    memcpy(request, head, sizeof head - 1);
    size_t at = sizeof head - 1;
    at += put_hex(request + at, (uintptr_t)request);
    /* (Finding the program's suppressions opens its executable: not in a sandbox.) */
    uintptr_t text = cfg_leak_scan && !hg_sandboxed() ? (uintptr_t)hg_lsan_default_suppressions() : 0;
    /* From exit()'s or quick_exit()'s handlers (not from _exit): their frames are no roots. */
    const uintptr_t live_from = from_exit_call ? 0 : exit_frame_top((uintptr_t)__builtin_frame_address(0));
    if (live_from != 0) {
        memcpy(request + at, live, sizeof live - 1);
        at += sizeof live - 1;
        at += put_hex(request + at, live_from);
    }
    if (text != 0) {
        memcpy(request + at, lsan, sizeof lsan - 1);
        at += sizeof lsan - 1;
        at += put_hex(request + at, text);
    }
    if (!cfg_leak_scan) {
        memcpy(request + at, nojudge, sizeof nojudge - 1);
        at += sizeof nojudge - 1;
        memcpy(request + at, "}", 2);
    } else {
        memcpy(request + at, "\"}", 3);
    }
    if (from_exit_call)
        (void)hg_control_from_handler(request, response, sizeof response);
    else
        (void)heapgen_control(request, response, sizeof response);
}

static void scan_at_quick_exit(void) { hg_leak_scan_at_exit(NULL); }

int hg_retention_at(const char *label, size_t len)
{
    if (cfg_retention_at_len == 0 || g_hg_phase != 2 || len > HG_RETENTION_LABEL_MAX)
        return 0;
    const char *p = cfg_retention_at, *end = cfg_retention_at + cfg_retention_at_len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if ((size_t)(nl - p) == len && memcmp(p, label, len) == 0)
            return 1;
        p = nl + 1;
    }
    return 0;
}

/* --retention-at: the program just published the mark `label` (which
 * hg_retention_at matched); it waits here while the collector stops every
 * thread and takes the reference graph. Nothing is judged. The label is
 * JSON-escaped into the request (control characters as \u00XX). */
void hg_retention_scan(const char *label, size_t len, uintptr_t ra, uintptr_t ra_slot)
{
    if (g_hg.hdr == NULL || !owns_segment())
        return;
    static const char head[] = "{\"op\":\"scan\",\"judge\":false,\"sp\":\"0x";
    static const char caller[] = "\",\"ra\":\"0x";
    static const char slot[] = "\",\"raSlot\":\"0x";
    static const char mid[] = "\",\"retention\":\"";
    char request[sizeof head + sizeof caller + sizeof slot + 3 * 16 + sizeof mid + 6 * HG_RETENTION_LABEL_MAX + 4];
    char response[256];
    memset(response, 0, sizeof response);
    size_t at = sizeof head - 1;
    memcpy(request, head, at);
    at += put_hex(request + at, (uintptr_t)request);
    memcpy(request + at, caller, sizeof caller - 1);
    at += sizeof caller - 1;
    at += put_hex(request + at, ra);
    memcpy(request + at, slot, sizeof slot - 1);
    at += sizeof slot - 1;
    at += put_hex(request + at, ra_slot);
    memcpy(request + at, mid, sizeof mid - 1);
    at += sizeof mid - 1;
    for (size_t k = 0; k < len && k < HG_RETENTION_LABEL_MAX; k++) {
        unsigned char c = (unsigned char)label[k];
        if (c == '"' || c == '\\') {
            request[at++] = '\\';
            request[at++] = (char)c;
        } else if (c < 0x20) {
            memcpy(request + at, "\\u00", 4);
            request[at + 4] = "0123456789abcdef"[c >> 4];
            request[at + 5] = "0123456789abcdef"[c & 15];
            at += 6;
        } else {
            request[at++] = (char)c;
        }
    }
    memcpy(request + at, "\"}", 3);
    (void)heapgen_control(request, response, sizeof response);
}

/* A program that ends with _exit or _Exit runs no exit handlers: a forked
 * child that leaves its parent's cleanup alone, a server's shutdown path.
 * The scan it was recorded for (--leaks, --retention) runs here, as at
 * exit(), then the real call (found at start-up: dlsym is no business of a
 * signal handler, where _exit is often called). exit() reaches _exit inside
 * libc, not through here. */
typedef void (*exit_fn)(int);
static exit_fn real_exit_now, real_exit_upper;

static void find_exit_functions(void)
{
    hg_guard_enter();
    real_exit_now = (exit_fn)dlsym(RTLD_NEXT, "_exit");
    real_exit_upper = (exit_fn)dlsym(RTLD_NEXT, "_Exit");
    libc_exit = (uintptr_t)dlsym(RTLD_NEXT, "exit");
    libc_quick_exit = (uintptr_t)dlsym(RTLD_NEXT, "quick_exit");
    hg_guard_leave();
}

/* The status this image exits with, for the collector when nobody reaps the
 * process where it can see (a parent that ignores SIGCHLD or never waits).
 * Not from a vfork child, which shares its parent's segment. */
static void announce_exit(int status)
{
    if (g_hg_phase != 2 || g_hg.hdr == NULL || !owns_segment())
        return;
    hg_emit(HG_K_EXIT, 0, (uint64_t)(uint32_t)status, 0, 0);
}

/* exit() and main's return reach _exit inside libc, not through ours; an
 * on_exit handler is given their status. */
static void announce_exit_handler(int status, void *arg)
{
    (void)arg;
    announce_exit(status);
}

static __attribute__((noreturn)) void scan_then_exit(exit_fn real, int status)
{
    announce_exit(status);
    if (cfg_leak_scan || cfg_retention)
        hg_leak_scan_at_exit((void *)1);
    if (real)
        real(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

HG_EXPORT void _exit(int status) { scan_then_exit(real_exit_now, status); }
HG_EXPORT void _Exit(int status) { scan_then_exit(real_exit_upper, status); }

/* Zeroes the stack just below the caller's frame, where the next call's frames go. */
static __attribute__((noinline)) void clear_stack_below(void)
{
    volatile uintptr_t words[64];
    for (int i = 0; i < 64; i++)
        words[i] = 0;
}

/* Ours only to give the caller's registers a live frame. The exit scan's
 * roots on this stack begin above libc's exit() (exit_frame_top), and a
 * pointer the calling frame kept in a callee-saved register (main's pollfd
 * array in rbx, as sshd keeps it) is then saved below, by exit's frames, or
 * nowhere: a false leak. Copied here, in a frame above exit's, it is a root
 * as on the program's own stack. A call, not a jump: this frame must stay. */
HG_EXPORT __attribute__((noreturn)) void exit(int status)
{
#if defined(__x86_64__)
    volatile uintptr_t regs[6];
    __asm__ volatile("movq %%rbx, 0(%0)\n\tmovq %%rbp, 8(%0)\n\tmovq %%r12, 16(%0)\n\t"
                     "movq %%r13, 24(%0)\n\tmovq %%r14, 32(%0)\n\tmovq %%r15, 40(%0)"
                     : : "r"(regs) : "memory");
#endif
    if (libc_exit == 0)
        find_exit_functions();      /* called from a constructor that ran before ours */
    /* libc's exit() leaves a slot of its frame unwritten (alignment), above
     * where the roots begin: what the program's dead frames left there
     * would keep a lost block alive. Clear where that frame goes. */
    clear_stack_below();
    if (libc_exit != 0)
        ((exit_fn)libc_exit)(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

/* quick_exit's handlers are not given its status, and it ends in _exit inside
 * libc, not ours: announced here, then libc's runs them (and the scan's). */
HG_EXPORT __attribute__((noreturn)) void quick_exit(int status)
{
    announce_exit(status);
    if (libc_quick_exit != 0)
        ((exit_fn)libc_quick_exit)(status);
    for (;;)
        syscall(SYS_exit_group, status);
}

/* Start as early as possible so library constructors' allocations count. */
__attribute__((constructor(101))) static void hg_constructor(void)
{
    if (g_hg_phase == 0)
        hg_init_slow();
    find_exit_functions();
    hg_exec_init();
    /* Registered before the program's constructors run: among the atexit
     * handlers, this one runs last; and so among the at_quick_exit ones
     * (quick_exit() runs only those, then _exit inside libc, not ours). */
    if (g_hg_phase == 2 && (cfg_leak_scan || cfg_retention)) {
        __cxa_atexit(hg_leak_scan_at_exit, NULL, NULL);
        __cxa_at_quick_exit(scan_at_quick_exit, NULL);
    }
    /* After the scan's handler: it runs before it, so the status is in the
     * ring before the scan's request. */
    if (g_hg_phase == 2)
        on_exit(announce_exit_handler, NULL);
}
