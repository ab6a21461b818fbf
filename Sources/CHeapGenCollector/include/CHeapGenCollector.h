/*
 * CHeapGenCollector — the collector's C helpers: ring consumer, segment
 * validation and blob reads, fd passing, process helpers, ELF inspection.
 *
 * The target process is not trusted to be sane: everything read from a
 * segment is bounds-checked against the collector's own validated copy of the
 * layout (hg_segment), never re-read from the shared header.
 */
#ifndef CHEAPGENSUPPORT_H
#define CHEAPGENSUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "heapgen_protocol.h"
#include "heapgen_ring.h"  /* both sides of a record: shared with the shim */

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- segment */

/* The collector's view of one mapped segment. Layout values are copied from
 * the header once, when the segment is validated; the shared header may be
 * scribbled on later without making the collector read outside the mapping. */
typedef struct hg_segment {
    uint8_t *base;          /* mapping start (MAP_SHARED, read/write)      */
    uint64_t size;          /* mapping length                              */
    hg_slot *ring;          /* base + ring_offset                          */
    uint64_t ring_slots;    /* power of two                                */
    uint64_t ring_mask;
    uint32_t ring_shift;    /* log2(ring_slots)                            */
    uint32_t origin;        /* enum hg_origin (from the hello)             */
    const uint8_t *arena;   /* base + arena_offset                         */
    uint64_t arena_size;    /* validated: at most HG_MAX_ARENA_MB MiB      */
    uint64_t arena_half;    /* bytes of each half ("Arena epochs")         */
    int32_t pid, ppid;
    uint32_t max_frames;
    int fd;                 /* always -1 after hg_segment_open (closed)    */
    uint8_t *control;       /* base + control_offset; NULL: no control area */
    uint64_t control_size;  /* validated: 0 or HG_CONTROL_MIN_SIZE..MAX    */
    uint64_t parent_fork_id;/* origin FORK: the parent's HG_K_FORK id (0 none) */
} hg_segment;

/* Maps `fd` (a memfd received with a hello) and validates header and hello
 * against each other and the fd's size. On success fills *seg, closes fd
 * (the mapping outlives it) and returns 0. On failure returns -1, writes a one-line reason
 * into errbuf, and leaves fd open (the caller closes it). */
int hg_segment_open(int fd, const hg_hello *hello, hg_segment *seg, char *errbuf, size_t errlen);

/* Unmaps and closes. Safe on a zeroed or already closed segment. */
void hg_segment_close(hg_segment *seg);

/* allocator.c: 1 and a one-line text (without "warning: ") in buf when the
 * shim reported allocations it cannot follow (hg_header.alloc_flags); else 0. */
int hg_segment_allocator_warning(const hg_segment *seg, char *buf, size_t len);

/* Stores collector_pid, then state (release), in the shared header. */
void hg_segment_answer(hg_segment *seg, int32_t collector_pid, uint32_t state);

/* Sets header.detached = 1: the collector stops reading this segment while
 * the process runs on (heapgen was stopped); the shim then passes through. */
void hg_segment_detach(hg_segment *seg);

/* Snapshot of the producer counters (relaxed loads). */
typedef struct hg_counters {
    uint64_t head;
    uint64_t wait_count, wait_ns, arena_full, lost_events, free_null, unwind_fallbacks;
    uint64_t stacks_lost;   /* allocations recorded with stack 0: the stack store was full */
    uint64_t arena_state;   /* epoch << HG_ARENA_EPOCH_SHIFT | bytes used in its half */
    uint32_t detached;
    uint32_t sandboxed;     /* the program installed a seccomp filter (header.sandboxed) */
} hg_counters;
void hg_segment_counters(const hg_segment *seg, hg_counters *out);

/* ------------------------------------------------------------------- ring */

/* Copies published records in ring order starting at *tail into
 * out[0..max), frees their slots for the next lap, advances *tail past
 * them. Stops at the first position that is not published (yet). Returns
 * the number of records copied. Copies nothing
 * while the shared tail differs from *tail (the target wrote it): call
 * hg_ring_check whenever this returns 0. */
size_t hg_drain(const hg_segment *seg, uint64_t *tail, hg_record *out, size_t max);

/* hg_ring_check's verdict on a ring hg_drain found nothing in. */
enum hg_ring_state {
    HG_RING_OK       = 0, /* nothing claimed past the tail, or published meanwhile  */
    HG_RING_PENDING  = 1, /* the slot at the tail is claimed but not published yet:
                             fine for a moment, stuck if it stays so              */
    HG_RING_BAD_TAIL = 2, /* the shared tail is not the collector's own           */
    HG_RING_BAD_HEAD = 3, /* head outside [tail, tail + ring_slots]               */
    HG_RING_BAD_SEQ  = 4, /* the slot at the tail holds neither the previous lap's
                             tag (or none) nor this lap's                         */
};

/* Checks the shared ring state against the collector's own tail (never
 * trusting the shared copies): returns enum hg_ring_state; *head receives
 * the shared head as read. */
int hg_ring_check(const hg_segment *seg, uint64_t tail, uint64_t *head);

/* Last drain of a segment found corrupt: copies the published records in
 * [*tail, limit) (stopping at the first unpublished one) whatever the shared
 * tail says, without storing the tail. limit: at most *tail + ring_slots. */
size_t hg_drain_rescue(const hg_segment *seg, uint64_t *tail, uint64_t limit, hg_record *out, size_t max);

/* Final drain of a segment whose producers are all gone (process exited or
 * exec'd). `limit` is the end position returned by hg_final_limit(): the
 * shared head, clamped to one ring length past *tail. Copies every published
 * record in [*tail, limit) and skips slots that were claimed but never
 * published ("torn"), adding their number to *torn. Returns the number
 * copied; call again while *tail < limit (out may fill up). */
uint64_t hg_final_limit(const hg_segment *seg, uint64_t tail);
size_t hg_drain_final(const hg_segment *seg, uint64_t *tail, uint64_t limit,
                      hg_record *out, size_t max, uint64_t *torn);

/* ---------------------------------------------------------------- produce */

/* Publishes a MARK record (label, CLOCK_MONOTONIC time, origin: 1 timer,
 * 2 external) into the segment's ring as one more producer. Never waits:
 * -EAGAIN when the ring is full (drain, then retry). 0 on success. */
int hg_produce_mark(const hg_segment *seg, const char *label, uint32_t origin);

/* ---------------------------------------------------------------- control */

/* Copies the request of control record `id` (the HG_K_CONTROL slot's addr)
 * into out (at most max bytes, no NUL added); *len receives its length.
 * 0 on success; -ESTALE when id is not the header's current request id (a
 * stale or forged record: do not answer), -E2BIG when the announced length
 * exceeds the request region or max (*len: the clamped length), -ENOSYS
 * when the segment has no control area. */
int hg_control_request(const hg_segment *seg, uint64_t id, char *out, size_t max, size_t *len);

/* Bytes available for a response (0: no control area). */
size_t hg_control_response_room(const hg_segment *seg);

/* Copies the response into the response region, stores its length, then
 * store-releases control_response_id = id. 0, -E2BIG (longer than the
 * region: nothing written) or -ENOSYS. */
int hg_control_respond(const hg_segment *seg, uint64_t id, const char *data, size_t len);

/* ------------------------------------------------------------------ blobs */

/* Blob and node refs below are plain (arena offset / 8): the caller takes
 * the epoch tag off a record's ref (heapgen_protocol.h, "Arena epochs")
 * after checking that the epoch is one it still reads. */

/* header.arena_state, loaded with acquire: blobs of the epoch it names are
 * visible once a record naming them is. */
uint64_t hg_arena_state(const hg_segment *seg);

/* header.arena_wanted: E + 1 while a producer waits to start epoch E + 1. */
uint64_t hg_arena_wanted(const hg_segment *seg);

/* Store-releases header.arena_released = released: every read of the
 * epochs below it is done, the shim may write over their halves. */
void hg_arena_release(const hg_segment *seg, uint64_t released);

/* Returns a pointer to the payload of blob `ref` (arena offset ref*8) if the
 * header and the whole payload lie inside the arena and the tag matches;
 * *len receives hdr.len (frames for stacks, bytes otherwise). NULL if bad. */
const void *hg_blob(const hg_segment *seg, uint32_t ref, uint32_t tag, uint32_t *len);

/* Expands stack `ref` (its innermost call-tree node, HG_BLOB_NODE) into its
 * frames, innermost first, walking parent refs to the root. Returns the frame
 * count, 0 if the chain is malformed (a ref outside the arena, a parent not
 * strictly below its child, depths that do not count down by one to a root,
 * flags that disagree) or deeper than max or the segment's max_frames.
 * *truncated (if not NULL) is 1 when the unwinder cut the stack at its frame
 * limit. Never loops: at most `depth` nodes are read. */
uint32_t hg_read_stack_flags(const hg_segment *seg, uint32_t ref, uint64_t *out, uint32_t max,
                             uint32_t *truncated);
uint32_t hg_read_stack(const hg_segment *seg, uint32_t ref, uint64_t *out, uint32_t max);

/* Copies the string blob `ref` into out (at most max-1 bytes, NUL added,
 * stops at the first NUL). Returns the length, -1 if the blob is invalid. */
int64_t hg_read_string(const hg_segment *seg, uint32_t ref, char *out, size_t max);

/* A parsed module blob; pointers point into a snapshot made by the caller. */
typedef struct hg_module_info {
    uint64_t load_bias;
    uint32_t nsegs;          /* entries copied into segs                      */
    uint32_t build_id_len;   /* bytes copied into build_id                     */
    uint32_t path_len;       /* bytes in path, excluding the NUL               */
} hg_module_info;

/* Parses module blob `ref`. Copies up to max_segs segments, up to
 * max_build_id bytes of build id and up to path_max-1 bytes of path (NUL
 * terminated). Returns 0, or -1 if the blob is malformed. */
int hg_read_module(const hg_segment *seg, uint32_t ref, hg_module_info *info,
                   hg_module_seg *segs, uint32_t max_segs,
                   uint8_t *build_id, uint32_t max_build_id,
                   char *path, size_t path_max);

/* --------------------------------------------------------------- fd passing */

/* The collector's rendezvous (heapgen_protocol.h, "Transport"): a private
 * directory (mode 0700) holding a listening SOCK_SEQPACKET socket. */
typedef struct hg_rendezvous {
    int fd;            /* listening, non-blocking, close-on-exec */
    char dir[108];
    char path[108];    /* dir + "/s" (as root: dir + "/" + 32 random hex digits): HEAPGEN_SOCK */
} hg_rendezvous;

/* Makes the directory under $XDG_RUNTIME_DIR (if ours), else $TMPDIR, else
 * /tmp, and listens in it. Returns 0 or -errno. */
int hg_rendezvous_open(hg_rendezvous *rv);
/* Closes the socket and removes the directory. */
void hg_rendezvous_close(hg_rendezvous *rv);
/* Accepts one queued connection: 1 with *conn (non-blocking, close-on-exec,
 * SO_PASSCRED on) and the connecting pid, 0 if none is queued, -EPERM for a
 * peer of another user (refused and closed), or another -errno. */
int hg_rendezvous_accept(int listen_fd, int *conn, int32_t *peer_pid);

enum hg_recv_status {
    HG_RECV_OK        = 0,  /* *hello and *fd filled                                 */
    HG_RECV_AGAIN     = 1,  /* nothing to read (timeout / EINTR)                     */
    HG_RECV_EOF       = 2,  /* the shim's end is closed                               */
    HG_RECV_MALFORMED = 3,  /* a message was read and rejected; reason in errbuf      */
    HG_RECV_ERROR     = 4,  /* recvmsg failed; errno-based reason in errbuf           */
    HG_RECV_MARK      = 5,  /* a mark request (hg_mark_request) in *mark; its asker's
                               uid in *sender_uid; answer it with hg_answer_mark        */
};

/* Waits up to timeout_ms (-1: forever) for one hello. Accepts exactly one
 * message of sizeof(hg_hello) bytes with the right magic and version and
 * exactly one SCM_RIGHTS fd (received close-on-exec); anything else is
 * rejected and every fd it carried is closed. *sender_pid is the sender's pid
 * as reported by the kernel (SCM_CREDENTIALS), or 0 if none came (a hello
 * without them is rejected: the shim sends them itself); the hello's
 * own pid is that one, or the sender's pid in a PID namespace below ours. */
int hg_recv_hello(int sock, int timeout_ms, hg_hello *hello, int *fd, int32_t *sender_pid,
                  char *errbuf, size_t errlen);

/* As hg_recv_hello, and a mark request (HG_RECV_MARK: exactly
 * sizeof(hg_mark_request) bytes, right magic and version, no descriptor;
 * its label NUL-terminated here) with its asker's uid. */
int hg_recv_message(int sock, int timeout_ms, hg_hello *hello, int *fd, int32_t *sender_pid,
                    hg_mark_request *mark, uint32_t *sender_uid, char *errbuf, size_t errlen);

/* Sends the answer to a mark request (0 or -errno). 0 sent, -errno not. */
int hg_answer_mark(int sock, int32_t answer);

/* The asking side (`heapgen mark PID`): connects to the collector's
 * rendezvous `path`, checks that the peer is process `collector` (or 0, in
 * a PID namespace of ours) of our user or root, sends the request and
 * waits up to timeout_ms for the answer. Returns the answer (0 or the
 * collector's -errno), or -errno of our own failure (-ECONNREFUSED,
 * -ENOENT: no collector there; -EACCES: the peer is not that collector;
 * -ETIMEDOUT: no answer). */
int hg_ask_mark(const char *path, int32_t collector, int32_t pid, const char *label, int timeout_ms);

/* ------------------------------------------------------------------ process */

/* Does process `pid` map the file (dev, ino)? 1 yes, 0 no (a new image:
 * it exec'd), -1 cannot tell (gone, exiting: no mappings, unreadable). */
int hg_maps_contain(pid_t pid, uint64_t dev, uint64_t ino);

/* Is there a process (other than us) whose initial environment holds exactly
 * this "NAME=value" entry? 1 yes, 0 no, -1 /proc unreadable. Only processes
 * we may read are seen (our user's). */
int hg_any_process_has_env(const char *entry);

/* A process in a PID namespace below ours knows itself by other numbers.
 * From /proc/<pid>/status, as we see it: pids[0..n) its pid in each namespace
 * from ours (pids[0] == pid) down to its own, *ppid its parent's pid in ours
 * (0 when the parent is not ours to see). Returns n (1: only ours), or 0 when
 * /proc cannot tell or there are more than `max`. The kernel nests at most 32. */
#define HG_MAX_PID_NAMESPACES 33
int hg_namespace_pids(pid_t pid, pid_t *pids, int max, pid_t *ppid);

/* pidfd_open(2) via syscall; returns the fd (CLOEXEC) or -errno. */
int hg_pidfd_open(pid_t pid);

/* 1 if the pidfd is readable (the process has exited), 0 if not, -errno. */
int hg_pidfd_exited(int pidfd);

/* Reaps our child `pid` if it has exited (WNOHANG when !block).
 * Returns 1 and fills *signaled and *status (exit code or signal number) when it
 * was reaped, 0 if still running, -errno on error. */
int hg_reap(pid_t pid, int block, int *signaled, int *status);

/* The exit status of a process that is not our child, from the exit_code
 * field of /proc/<pid>/stat while it is a zombie (before its parent reaps
 * it). Returns 1 and fills *signaled and *status, or 0 if unknown. */
int hg_zombie_status(pid_t pid, int *signaled, int *status);

/* /proc/<pid>/stat: the state letter into *state and the number in `field`
 * (numbered as proc(5) does; > 3) into *value. Returns 2 with both, 1 with
 * the state only (no such number), 0 if the line is malformed, -1 if the
 * file cannot be read (errno says why). */
int hg_proc_stat(pid_t pid, int field, char *state, unsigned long long *value);

/* Signals while the program runs: SIGINT and SIGQUIT counted (forwarded to
 * `target` when a process sent them), SIGPIPE ignored, SIGTERM forwarded and
 * counted, SIGHUP forwarded only
 * (async-signal-safe handler; the target is cleared once reaped, its pid
 * free for reuse). hg_initial_ignored_signals returns a bitmask of the
 * signals (1<<sig) that were ignored when heapgen started, so the program
 * can inherit the same dispositions, and keeps heapgen's initial mask. */
unsigned hg_initial_ignored_signals(void);
void hg_install_collector_signals(void);
/* Once the program is started (it inherited them ignored): the signals
 * heapgen was started with ignored are caught too, only to be passed on
 * when a process sends them (a non-interactive shell starts background jobs
 * with SIGINT and SIGQUIT ignored; its `kill -INT $!` is for the program). */
void hg_forward_ignored_signals(void);
void hg_set_forward_target(pid_t target);
/* Number of SIGINT/SIGQUIT/SIGTERM deliveries seen so far: the signals
 * that ask heapgen to stop (SIGHUP is forwarded only). */
unsigned hg_signal_count(void);
/* The last of those signals (its number), 0 before any. */
int hg_last_signal(void);

/* posix_spawn with the given argv/envp (path must be resolved already).
 * Signals SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGHUP are reset to their
 * default in the child unless their bit is set in keep_ignored; the signal
 * mask is emptied. Returns 0 and *pid, or an errno value. */
int hg_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[],
             unsigned keep_ignored);

/* Reads /proc/<pid>/cmdline (NUL-separated) into buf; returns bytes or -1. */
ssize_t hg_read_proc_file(pid_t pid, const char *name, char *buf, size_t len);

/* ppoll with a timeout in nanoseconds (-1: forever). Returns the number of
 * ready fds, 0 on timeout, -errno (-EINTR when a signal arrived). */
struct pollfd;
int hg_poll_ns(struct pollfd *fds, unsigned long nfds, int64_t timeout_ns);

/* prctl(PR_SET_TIMERSLACK): short idle sleeps of the collector stay short. */
void hg_set_timer_slack(unsigned long ns);

/* ------------------------------------------------------------- leak scan */

/* Outcome of hg_leak_scan. */
typedef struct hg_scan_result {
    uint64_t scanned_bytes;  /* bytes read from the target (roots + reached blocks) */
    uint64_t root_bytes;     /* of which roots                                      */
    uint64_t root_regions;   /* rw mappings scanned as roots                        */
    uint64_t marked;         /* blocks reached                                      */
    uint64_t unreadable;     /* bytes that could not be read (EFAULT: skipped)      */
    uint64_t untouched;      /* bytes of pages never touched (pagemap): not read    */
    uint64_t elapsed_ns;
    uint64_t dead_stack_bytes; /* stack bytes below the threads' stack pointers, and dead
                                  threads' stacks below their descriptors: not roots */
    uint32_t threads;        /* threads of the target found in /proc/PID/task       */
    uint32_t threads_stopped;/* of which stopped with ptrace (registers and SP read) */
    int32_t  ptrace_error;   /* 0, or the errno that kept us from stopping the threads:
                                then whole stacks are roots and registers are unseen */
    int32_t  error;          /* 0, or an errno value (EPERM, ESRCH, ...): nothing judged */
    int32_t  aborted;        /* 1: the byte cap was hit, 2: the time cap; nothing judged */
} hg_scan_result;

/* The threads of a target, stopped with ptrace for a leak scan (leakscan_threads.c). */
#define HG_SCAN_MAX_THREADS 4096
#define HG_SCAN_REG_WORDS   16   /* general-purpose registers kept per thread */
#define HG_SCAN_VREG_WORDS  64   /* vector registers: xmm0-15, then ymm0-15's upper halves */
typedef struct hg_thread_state {
    pid_t tid;
    int32_t pending_signal;  /* signal that stopped it instead of our interrupt: re-sent at detach */
    uint64_t sp;
    uint64_t pc;             /* instruction pointer (the reference graph's innermost frame) */
    uint64_t tp;             /* thread pointer (fs base): glibc's thread descriptor */
    uint64_t regs[HG_SCAN_REG_WORDS];
    /* Numbered after the general-purpose ones in the graph: 16 + word index. */
    uint64_t vregs[HG_SCAN_VREG_WORDS];
} hg_thread_state;

/* Seizes and interrupts every thread of `pid` (PTRACE_SEIZE + PTRACE_INTERRUPT,
 * re-reading /proc/PID/task until no new thread appears) and reads its
 * registers. Returns the number of threads stopped (>= 0) or -errno (EPERM:
 * not permitted; every thread stopped so far is released first). */
int hg_threads_stop(pid_t pid, hg_thread_state *threads, int capacity);
/* Detaches the n threads hg_threads_stop stopped (they run on). */
void hg_threads_resume(const hg_thread_state *threads, int n);
/* Whether task `tid` has ended but is not reaped (zombie, or dead): a thread
 * group leader that left with pthread_exit() stays so while other threads
 * run. Such a task has no memory of its own any more (/proc/TID/maps is
 * empty, process_vm_readv fails with ESRCH) and cannot be seized (EPERM).
 * *start_stack (may be NULL): the process's initial stack pointer, from any
 * task that still has the memory (0 otherwise). */
int hg_task_ended(pid_t tid, uint64_t *start_stack);

/* Conservative reachability scan of process `pid` (LeakSanitizer-style), which
 * must be stopped or blocked. `addrs` (ascending, non-overlapping) and `sizes`
 * are its n live heap blocks. Roots: every rw mapping of /proc/PID/maps that
 * overlaps no live block, except the heapgen memfd mappings; in a mapping that
 * holds a thread's stack pointer only [SP, end) (what lies below is dead
 * frames); in the stack of a main thread that left with pthread_exit() only
 * what lies above the initial stack pointer (argv, environment, auxv; the
 * memory is read through a live thread); in the stack of a thread that is
 * gone (glibc keeps it cached, or until the join) only its thread
 * descriptor; every thread's general-purpose
 * and vector registers. The threads are stopped with ptrace for the
 * registers and SPs (hg_threads_stop); if that is not permitted
 * (result->ptrace_error), whole stacks are roots except the requester's:
 * `requester_sp` (0: unknown) bounds the mapping that holds it. In libc's own
 * writable data (the allocator's state: main_arena.top, bins) only a block's
 * start address is a reference, never an interior one (those are chunk
 * headers of the following chunk). Every other 8-aligned word pointing into
 * [addr, addr+max(size,1)) of a block marks it; marked blocks are scanned in
 * turn (worklist). marked[i] is set to 1 for reached blocks. If `owners` (n
 * entries) is given, unreached blocks are then split as valgrind does: an
 * unreached block reached from another unreached one is indirect (marked[i]
 * = 2, owners[i] = index of the direct block whose clique holds it), the
 * rest direct (marked[i] = 0); a cycle of unreached blocks that no other
 * unreached block reaches is one direct block (its lowest address) and the
 * rest indirect (valgrind's rule). Reads at most
 * max_bytes bytes and runs at most max_ns. Returns 0 if the scan completed
 * (result->error == 0 && !aborted), else -1. */
int hg_leak_scan(pid_t pid, const uint64_t *addrs, const uint64_t *sizes, size_t n,
                 uint8_t *marked, uint64_t *owners, uint64_t max_bytes, uint64_t max_ns,
                 uint64_t requester_sp, hg_scan_result *result);

/* The reference graph of the live heap (heapgen --retention, and every leak
 * scan): taken by hg_leak_scan_graph while the threads are stopped. */
enum hg_root_kind {
    HG_ROOT_GLOBAL    = 0, /* a file-backed rw mapping, or the anonymous one right after one (.bss) */
    HG_ROOT_STACK     = 1, /* a mapping holding a thread's stack pointer (or named [stack])     */
    HG_ROOT_REGISTERS = 2, /* a stopped thread's registers (start = end = 0)                      */
    HG_ROOT_OTHER     = 3, /* any other rw anonymous mapping (TLS, mmap'd arenas, ...)            */
};
typedef struct hg_graph_edge {
    uint32_t from, to;       /* block indices                                   */
    uint32_t offset;         /* byte offset of the referring word in `from`     */
} hg_graph_edge;
typedef struct hg_graph_root_edge {
    uint64_t slot;           /* address of the root word (register number for registers) */
    uint64_t pc;             /* stacks: code address of the frame holding the slot (0: none) */
    uint32_t region;         /* index in regions                                */
    uint32_t to;             /* block index                                     */
    int32_t reg;             /* register number (-1: not a register)            */
} hg_graph_root_edge;
typedef struct hg_graph_region {
    uint64_t start, end;     /* what was scanned (a stack from the SP up)       */
    uint32_t kind;           /* enum hg_root_kind                               */
    int32_t tid;             /* stacks and registers: the thread (0: unknown)   */
    char *path;              /* globals: the module's path (malloc'd), else NULL */
} hg_graph_region;
typedef struct hg_graph {
    uint64_t max_edges;      /* in: cap on edges + root edges (0: no graph)      */
    hg_graph_edge *edges;    /* out: grouped by source block, deduplicated       */
    size_t edge_count, edge_cap;
    hg_graph_root_edge *roots;
    size_t root_count, root_cap;
    hg_graph_region *regions;
    size_t region_count;
    int32_t dropped;         /* 0 complete; 1 edge cap, 2 out of memory, 3 scan incomplete:
                                then nothing is kept (never a partial graph)     */
} hg_graph;

/* Where the requester's stack leaves heapgen's shim: the return address into
 * the program of the shim's entry (heapgen_mark) and the stack slot holding
 * it. The shim's frames below that slot are named after that caller: the
 * registers they saved there are the program's, and the stale code addresses
 * in them would name a wrong frame. */
typedef struct hg_scan_caller {
    uint64_t pc, slot;
    /* The requester runs exit()'s handlers: its stack is live only from here
     * up (above exit's own frames); 0: from its stack pointer. */
    uint64_t live_from;
} hg_scan_caller;

/* hg_leak_scan, also building the reference graph into `graph` (NULL: none):
 * every 8-aligned word of every live block (reached or not: each is read once)
 * pointing into a live block is an edge (interior pointers count; one edge per
 * (source, target), at the lowest offset), every root word pointing into a
 * block a root edge (libc's data: block starts only, as the scan). A stack
 * slot's root edge names the frame it is in (`pc`): the function of the
 * nearest code address below it (a return address, as a rule), the thread's
 * RIP below the first. On the requester's stack, the slots below
 * `caller->slot` (NULL: unknown) are the shim's frames and are named after
 * `caller->pc`. `forked`: the process is a forked child that has not exec'd,
 * where the stacks of its parent's other threads look like those of ended
 * threads: they are whole roots. Free with hg_graph_free. */
int hg_leak_scan_graph(pid_t pid, const uint64_t *addrs, const uint64_t *sizes, size_t n,
                       uint8_t *marked, uint64_t *owners, uint64_t max_bytes, uint64_t max_ns,
                       uint64_t requester_sp, const hg_scan_caller *caller, int forked,
                       hg_scan_result *result, hg_graph *graph);
void hg_graph_free(hg_graph *graph);

/* One stored property of a Swift class (hg_swift_class_fields). */
typedef struct hg_swift_field {
    uint32_t offset;         /* byte offset in the instance                  */
    uint32_t name;           /* offset of its NUL-terminated name in `names` */
} hg_swift_field;

/* Reads the stored properties of the Swift class whose metadata is at
 * `metadata` in the (stopped) process `pid`, the class's own first, then its
 * superclasses' (swiftfields.c gives the layouts). Every read is checked;
 * a level that does not look like Swift class metadata ends the walk.
 * Returns the number of fields written (names into `names`), or -1 if
 * `metadata` itself is not a readable Swift class. */
int hg_swift_class_fields(pid_t pid, uint64_t metadata, hg_swift_field *fields, int capacity,
                          char *names, size_t names_cap);

/* Reads len bytes at `at` in process `pid` into out: 0, or -1 if not all of
 * them could be read (or `at` is 0, or the range wraps). */
int hg_read_remote(pid_t pid, uint64_t at, void *out, size_t len);
/* Reads the NUL-terminated string at `address` in process `pid` into buf
 * (capacity bytes, terminator included). Returns its length, or -1 if it
 * cannot be read or has no terminator within capacity. */
ssize_t hg_read_remote_string(pid_t pid, uint64_t address, char *buf, size_t capacity);

/* -------------------------------------------------------------- inspection */

enum hg_inspect_result {
    HG_INSPECT_OK            = 0, /* dynamically linked ELF (or script whose interpreter is) */
    HG_INSPECT_NOT_FOUND     = 1,
    HG_INSPECT_NOT_REGULAR   = 2, /* directory, device, ...                          */
    HG_INSPECT_NOT_EXEC      = 3, /* no execute permission for us                   */
    HG_INSPECT_STATIC        = 4, /* ELF without PT_INTERP                           */
    HG_INSPECT_SETID         = 5, /* setuid or setgid to another user or group: the loader
                                     ignores LD_PRELOAD */
    HG_INSPECT_NOT_ELF       = 6, /* neither ELF nor #! script (the kernel refuses)   */
    HG_INSPECT_BAD_ELF       = 7, /* truncated or foreign-class ELF                  */
    HG_INSPECT_UNREADABLE    = 8, /* cannot open/read (e.g. execute-only)            */
    HG_INSPECT_SCRIPT_LOOP   = 9, /* #! nesting deeper than the kernel allows        */
};

/* Inspects the executable at `path` (already resolved). For `#!` scripts the
 * interpreter is inspected instead (recursively, like the kernel); its path is
 * copied into `culprit` whenever the result concerns another file.
 * Returns enum hg_inspect_result. */
int hg_inspect_program(const char *path, char *culprit, size_t culprit_len);

#ifdef __cplusplus
}
#endif
#endif
