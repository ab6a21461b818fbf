/*
 * state.c — start-up, the handshake with the collector, fork, and giving up
 * cleanly when the collector is gone.
 *
 * Each process image makes its own segment (memfd: no name anywhere, so
 * nothing to guess or hijack; mode 0600) and hands it to the collector over
 * the inherited socket. Until the collector answers, the first allocation
 * waits; a declined or unanswered hello leaves the program running
 * untraced, never blocked.
 */
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "shim.h"
#include "nextalloc.h"
#include "unwind.h"

hg_shim g_hg;
volatile int g_hg_phase;
HG_TLS int hg_guard;

/* Settings read once from the environment. */
static uint64_t cfg_ring_slots = HG_DEFAULT_RING_SLOTS;
static uint64_t cfg_arena_bytes = (uint64_t)HG_DEFAULT_ARENA_MB << 20;
static uint32_t cfg_max_frames = HG_DEFAULT_FRAMES;

static long env_long(const char *name, long fallback)
{
    const char *s = getenv(name);
    if (s == NULL || *s == '\0')
        return fallback;
    char *end;
    long v = strtol(s, &end, 10);
    return *end == '\0' ? v : fallback;
}

int hg_collector_alive(void)
{
    /* The collector's socket end closes when it exits, even while it is an
     * unreaped zombie (which kill(pid, 0) still finds). */
    struct pollfd p = { g_hg.sock_fd, POLLRDHUP, 0 };
    if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)))
        return 0;
    if (g_hg.collector_pid <= 0)
        return 1;
    return kill(g_hg.collector_pid, 0) == 0 || errno != ESRCH;
}

void hg_detach(void)
{
    if (g_hg.hdr)
        __atomic_store_n(&g_hg.hdr->detached, 1, __ATOMIC_RELEASE);
}

static int send_hello(int sock, int memfd, const hg_hello *hello)
{
    struct iovec iov = { (void *)hello, sizeof *hello };
    union { struct cmsghdr align; char buf[CMSG_SPACE(sizeof(int))]; } u;
    memset(&u, 0, sizeof u);
    struct msghdr msg = { 0 };
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &memfd, sizeof(int));
    ssize_t r;
    do {
        r = sendmsg(sock, &msg, MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);
    return r == (ssize_t)sizeof *hello;
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
        if (i % 100 == 99 && !hg_collector_alive())
            return 0;
        struct timespec ts = { 0, 100 * 1000 };
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* The fork id travels to the child in this thread's TLS (the child's only
 * thread is the one that forked), so concurrent forks cannot mix them up. */
static uint64_t g_fork_counter;
static HG_TLS uint64_t hg_fork_id;

/* Creates, announces and (if accepted) installs a new segment. */
static int open_segment(uint32_t origin)
{
    const uint64_t page = 4096;
    const uint64_t ring_off = (sizeof(hg_header) + page - 1) & ~(page - 1);
    const uint64_t ring_bytes = cfg_ring_slots * sizeof(hg_slot);
    const uint64_t control_off = ring_off + ((ring_bytes + page - 1) & ~(page - 1));
    const uint64_t arena_off = control_off + HG_CONTROL_SIZE;
    const uint64_t size = arena_off + cfg_arena_bytes;

    /* MFD_CLOEXEC | MFD_ALLOW_SEALING: the collector seals the size so we
     * cannot pull pages out from under its mapping. */
    int fd = (int)syscall(SYS_memfd_create, "heapgen", 1u | 2u);
    if (fd < 0)
        return 0;
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        return 0;
    }
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        close(fd);
        return 0;
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
    h->ppid = getppid();
    h->origin = origin;
    h->max_frames = cfg_max_frames;
    h->control_offset = control_off;
    h->control_size = HG_CONTROL_SIZE;
    h->arena_used = 8;          /* ref 0 means "none" */
    hg_next_describe(h);        /* which allocator we wrap (nextalloc.c) */
    h->parent_fork_id = origin == HG_ORIGIN_FORK ? hg_fork_id : 0;

    hg_hello hello = { HG_PROTOCOL_MAGIC, HG_PROTOCOL_VERSION, origin, h->pid, h->ppid, size };
    int ok = send_hello(g_hg.sock_fd, fd, &hello) && await_verdict(h);
    if (!ok) {
        close(fd);
        munmap(base, size);
        return 0;
    }
    /* Keep one descriptor, out of the program's way (>= 500, close-on-exec),
     * so `heapgen mark PID` can find the segment through /proc/PID/fd; only
     * the same user (ptrace access) can open it. */
    int keep = fcntl(fd, F_DUPFD_CLOEXEC, 500);
    close(fd);
    g_hg.seg_fd = keep;
    g_hg.hdr = h;
    g_hg.ring = (hg_slot *)((uint8_t *)base + ring_off);
    g_hg.arena = (uint8_t *)base + arena_off;
    g_hg.control = (uint8_t *)base + control_off;
    g_hg.control_size = HG_CONTROL_SIZE;
    g_hg.ring_mask = cfg_ring_slots - 1;
    g_hg.ring_shift = (uint32_t)__builtin_ctzll(cfg_ring_slots);
    g_hg.arena_size = cfg_arena_bytes;
    g_hg.max_frames = cfg_max_frames;
    g_hg.segment_gen++;
    hg_unwind_set_fallback_sink(&h->unwind_fallbacks);
    __atomic_add_fetch(&g_hg.epoch, 1, __ATOMIC_RELEASE);
    return 1;
}

static void fork_prepare(void)
{
    hg_fork_id = 0;
    if (g_hg_phase == 2 && hg_guard == 0 && !g_hg.hdr->detached) {
        if (HG_UNLIKELY(hg_thread_gen != g_hg.segment_gen))
            hg_thread_announce();
        hg_fork_id = __atomic_add_fetch(&g_fork_counter, 1, __ATOMIC_RELAXED);
        hg_emit(HG_K_FORK, hg_fork_id, 0, 0, 0);
    }
    hg_modules_fork_prepare();
}
static void fork_parent(void)  { hg_modules_fork_parent(); }

/* The child must not write into the parent's ring: the parent's events and
 * the child's would mix, at the same addresses. It gets a segment (and so a
 * trace) of its own, or runs untraced if the collector declines. */
static void fork_child(void)
{
    hg_modules_fork_child();
    hg_control_fork_child();
    if (g_hg_phase != 2)
        return;
    hg_guard++;
    hg_header *old = g_hg.hdr;
    g_hg_phase = 1;
    hg_unwind_set_fallback_sink(NULL);
    munmap(old, old->segment_size);
    if (g_hg.seg_fd >= 0)
        close(g_hg.seg_fd);     /* the parent's segment is not ours */
    g_hg.seg_fd = -1;
    g_hg.hdr = NULL;
    if (open_segment(HG_ORIGIN_FORK)) {
        hg_modules_reset();
        hg_modules_scan();
        g_hg_phase = 2;
    } else {
        g_hg_phase = 3;
    }
    hg_guard--;
}

void hg_init_slow(void)
{
    int expected = 0;
    if (!__atomic_compare_exchange_n(&g_hg_phase, &expected, 1, 0,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;         /* another thread is at it, or it is done */
    hg_guard++;
    int phase = 3;
    long sock = env_long(HG_ENV_SOCK, -1);
    struct stat sb;
    if (sock >= 0 && sock <= INT32_MAX && fstat((int)sock, &sb) == 0 && S_ISSOCK(sb.st_mode)) {
        g_hg.sock_fd = (int)sock;
        g_hg.collector_pid = (pid_t)env_long(HG_ENV_COLLECTOR, 0);
        long slots = env_long(HG_ENV_RING_SLOTS, HG_DEFAULT_RING_SLOTS);
        if (slots >= 1024 && slots <= (1l << 26) && (slots & (slots - 1)) == 0)
            cfg_ring_slots = (uint64_t)slots;
        long arena = env_long(HG_ENV_ARENA_MB, HG_DEFAULT_ARENA_MB);
        if (arena >= 1 && arena <= 16384)
            cfg_arena_bytes = (uint64_t)arena << 20;
        long frames = env_long(HG_ENV_MAX_FRAMES, HG_DEFAULT_FRAMES);
        if (frames >= 1 && frames <= HG_MAX_FRAMES)
            cfg_max_frames = (uint32_t)frames;
        const char *mode = getenv(HG_ENV_UNWIND);
        hg_unwind_init();
        if (mode && strcmp(mode, "libunwind") == 0)
            hg_unwind_set_mode(HG_UNWIND_LIBUNWIND);
        if (open_segment(HG_ORIGIN_INIT)) {
            pthread_atfork(fork_prepare, fork_parent, fork_child);
            hg_modules_scan();
            phase = 2;
        }
    }
    __atomic_store_n(&g_hg_phase, phase, __ATOMIC_RELEASE);
    hg_guard--;
}

long heapgen_control(const char *request, char *response, size_t capacity);
/* No crtbegin here (-nostartfiles), so no __dso_handle for atexit(): register directly. */
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

/* HEAPGEN_LEAK_SCAN=1: the program is exiting; every allocation and free it made is
 * in the ring before the request, and it stays blocked here while the collector
 * reads its memory (heapgen record --leaks). Only in the image that started tracking
 * from its first allocation: a forked child inherited blocks its collector never saw. */
static void hg_leak_scan_at_exit(void *unused)
{
    (void)unused;
    if (g_hg_phase != 2 || g_hg.hdr == NULL || g_hg.hdr->origin != HG_ORIGIN_INIT)
        return;
    char response[256];
    (void)heapgen_control("{\"op\":\"scan\"}", response, sizeof response);
}

/* Start as early as possible so library constructors' allocations count. */
__attribute__((constructor(101))) static void hg_constructor(void)
{
    if (g_hg_phase == 0)
        hg_init_slow();
    /* Registered before the program's constructors run: among the atexit
     * handlers, this one runs last. */
    const char *scan = getenv(HG_ENV_LEAK_SCAN);
    if (g_hg_phase == 2 && scan != NULL && strcmp(scan, "1") == 0)
        __cxa_atexit(hg_leak_scan_at_exit, NULL, NULL);
}
