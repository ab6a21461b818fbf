/*
 * heapgen_protocol.h — the contract between the preload shim (CShim/) and the
 * collector (Sources/CHeapGenCollector, Sources/HeapGenRecord).
 *
 * Transport, in one paragraph:
 *   `heapgen record` makes a private directory (mkdtemp, mode 0700, under
 *   $XDG_RUNTIME_DIR if that is an absolute path to a directory of ours,
 *   else $TMPDIR, else /tmp) holding one listening AF_UNIX SOCK_SEQPACKET
 *   socket "s" (as root: a directory of mode 0711 and a socket of mode 0777
 *   named by 32 random hex digits, so that a program that dropped its
 *   privileges still connects and nobody not given the path can find it;
 *   then only under a directory others may enter, never root's 0700
 *   $XDG_RUNTIME_DIR), and tells the target its path (HEAPGEN_SOCK=<path>) and the
 *   collector's pid (HEAPGEN_COLLECTOR). No descriptor is inherited. Every
 *   traced process image (the program itself, each forked child, each
 *   exec'd program) connects a socket of its own (close-on-exec, moved to a
 *   number >= 500 while it is held), checks with SO_PEERCRED that the peer is the collector's
 *   pid (0 when the shim runs in a PID namespace the collector is not in)
 *   and our user (or root), makes its own anonymous segment with
 *   memfd_create (mode 0600; its name "heapgen" is only a label in
 *   /proc/PID/maps, nothing can open a memfd by name), lays out an hg_header, and sends one hg_hello
 *   message carrying the memfd (SCM_RIGHTS). A forked child's connection is
 *   made by its parent in the fork's prepare handler and inherited, so the
 *   collector sees it before fork() returns. The collector accepts only
 *   peers of its own user (SO_PEERCRED; any user if it runs as root),
 *   checks that the hello's pid is its sender's (SCM_CREDENTIALS) or, for a
 *   sender in a PID namespace below the collector's, the last of its
 *   /proc/PID/status NSpid list (the collector then uses its own numbers for
 *   the image and its parent, and maps the child pids that image's wait
 *   reports back through that namespace), maps the
 *   segment and answers by storing HG_STATE_ACCEPTED or HG_STATE_DECLINED
 *   into header.state. Then both ends close the connection: a traced
 *   program's descriptor table is its own (the shim keeps neither socket
 *   nor memfd). The shim asks whether the collector is alive by connecting
 *   again (refused: gone); such a probe, closed without a hello, is dropped,
 *   as is a child's connection that went untraced. The collector tells that
 *   an image exec'd by a new hello from its pid (a traced program), or by
 *   its segment's memfd no longer mapped in the process: looked for soon
 *   after the image's HG_K_EXEC record, and now and then while its ring is
 *   idle (an exec by raw system call); at the process's end, by that record
 *   or a changed command name. `heapgen mark PID` asks the collector by the
 *   same rendezvous (hg_mark_request). The directory is removed when the recording
 *   ends.
 *   Every descriptor the shim holds is checked against the (st_dev, st_ino)
 *   it had when made before any use, close() and poll() included: the
 *   program may have closed the number and got it back for a file or
 *   socket of its own.
 *   Once accepted, the shim writes records of one or two 16-byte hg_slots
 *   into a bounded multi-producer ring (a CAS on the head claims them, a lap
 *   tag in the first word publishes them: heapgen_ring.h); the ring position of a record *is* its global sequence number, so
 *   allocations, frees and marks from all threads have one total order.
 *   Variable-length data (stacks, strings) goes into a "blob arena" in the
 *   same segment, two halves reused in turn ("Arena epochs"); records refer
 *   to it by a tagged offset/8.
 *
 * Processes:
 *   A raw clone() child (no fork handlers run) is noticed on the hot path: a
 *   private MADV_WIPEONFORK page holds a non-zero word that reads 0 in the
 *   child, which then gets its own segment (origin FORK) like a forked
 *   child, or runs untraced; it never writes into its parent's ring.
 *   The wait family (wait, waitpid, wait3, wait4, waitid) is interposed: a
 *   child that exited or was killed is reported in the parent's ring
 *   (HG_K_CHILD_EXIT), since a parent that reaps at once leaves nothing in
 *   /proc for the collector to read.
 *   HEAPGEN_FOLLOW says which descendants are traced ("fork,exec" when
 *   absent). An untraced descendant gets the environment it would have had
 *   without heapgen: the shim takes out the collector's variables (below)
 *   and puts back the user's own LD_PRELOAD, which the collector passes as
 *   HEAPGEN_PRELOAD=LD_PRELOAD=<value> (absent: the user had none), at
 *   start-up when exec is not followed (so every later exec is clean), and
 *   in a forked child when fork is not followed (that child is untraced).
 *
 * Address space: under RLIMIT_AS the shim holds its segment to 1/16 of
 *   the limit (ring, then control area, then arena shrink); the default
 *   sizes (about 41 MiB) apply from a limit of 660 MiB up.
 *
 * Ordering rule that keeps the trace consistent across threads:
 *   a free is published *before* the real free() runs, an allocation *after*
 *   the real allocator returned. So if thread B gets an address that thread A
 *   just freed, A's free record precedes B's allocation record.
 *
 * Lossless: a producer that finds the ring full waits (counting the waits and
 *   the time in header.wait_count / wait_ns). It stops waiting only when the
 *   collector is gone (then the shim detaches and the program runs on
 *   untraced, header.detached = 1).
 *
 * Everything here is plain C11 with fixed-width fields; both sides are the
 *   same machine, so native endianness is fine.
 */
#ifndef HEAPGEN_PROTOCOL_H
#define HEAPGEN_PROTOCOL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HG_PROTOCOL_MAGIC   0x4e45475041454848ull /* "HHEAPGEN" little-endian */
#define HG_PROTOCOL_VERSION 7u   /* 3: control area + HG_K_CONTROL; 4: stacks as call-tree
                                    nodes (HG_BLOB_NODE), header.stacks_lost; 5: the arena
                                    is two halves reused in epochs (arena_state,
                                    arena_released, tagged refs); 6: 16-byte slots, a record
                                    in one or two (hg_slot); 7: HG_K_EXIT */

/* Environment variables the collector sets for the target. */
#define HG_ENV_SOCK        "HEAPGEN_SOCK"        /* path of the collector's listening socket */
#define HG_ENV_COLLECTOR   "HEAPGEN_COLLECTOR"   /* collector pid: the peer must be it   */
#define HG_ENV_FOLLOW      "HEAPGEN_FOLLOW"      /* "fork,exec", "fork", "exec" or "": traced descendants */
#define HG_ENV_PRELOAD     "HEAPGEN_PRELOAD"     /* "LD_PRELOAD=<the user's own value>", if any */
#define HG_ENV_RING_SLOTS  "HEAPGEN_RING_SLOTS"  /* optional, power of two             */
#define HG_ENV_ARENA_MB    "HEAPGEN_ARENA_MB"    /* optional blob arena size in MiB (2..128) */
#define HG_ENV_MAX_FRAMES  "HEAPGEN_MAX_FRAMES"  /* optional, 1..HG_MAX_FRAMES         */
#define HG_ENV_UNWIND      "HEAPGEN_UNWIND"      /* ignored since the shim dropped libunwind */
#define HG_ENV_UNWIND_SHADOW "HEAPGEN_UNWIND_SHADOW" /* "0": walk every frame (no shadow stack) */
#define HG_ENV_UNWIND_MEMO "HEAPGEN_UNWIND_MEMO" /* "0": no memo of whole stacks (the shadow stays) */
#define HG_ENV_LEAK_SCAN   "HEAPGEN_LEAK_SCAN"   /* "1": at exit, ask the collector for a leak scan
                                                    ({"op":"scan"} on the control channel) */
#define HG_ENV_RETENTION   "HEAPGEN_RETENTION"   /* "1": at exit, ask for a scan that takes the
                                                    reference graph only (heapgen --retention) */
#define HG_ENV_RETENTION_AT "HEAPGEN_RETENTION_AT" /* mark labels, one per line: right after such a
                                                    mark, ask for a scan that takes the graph */

#define HG_DEFAULT_RING_SLOTS (1u << 18)   /* 256 Ki slots x 16 B = 4 MiB */
#define HG_DEFAULT_ARENA_MB   32u          /* two halves of 16 MiB, reused in epochs */
#define HG_MAX_ARENA_MB       128u         /* a half's refs fit HG_REF_OFFSET_BITS */
#define HG_MAX_FRAMES         256
/* 128, not 64: a test suite's stacks run deeper than 64 frames (Swift,
 * XCTest), and a stack cut there loses its outermost frames, the test that
 * made it, and is stored rooted at the cut, sharing no outer frames with
 * the thread's previous stack: swift-argument-parser's 558 tests took
 * 16.6 s of program CPU cut at 64 and 13.6 s at 128, with a smaller trace
 * (81.6 MB, not 85.7). */
#define HG_DEFAULT_FRAMES     128

/* header.state, written by the collector after it received the hello. */
enum hg_state {
    HG_STATE_PENDING  = 0,
    HG_STATE_ACCEPTED = 1,
    HG_STATE_DECLINED = 2,
};

/* hg_hello.origin: why this segment exists. The collector tells an exec'd
 * image from the program's first image by pid (a second INIT hello from a
 * pid it already knows is an exec). */
enum hg_origin {
    HG_ORIGIN_INIT = 1, /* shim initialised in a new process image            */
    HG_ORIGIN_FORK = 2, /* child side of fork(); parent's ring is not shared  */
};

/* Record kinds: the high 8 bits of hg_record.size_kind; 6 bits of a slot's w0. */
enum hg_kind {
    HG_K_NOP           = 0,  /* filler; ignore                                     */
    /* allocations: addr = block, size = requested bytes, stack, aux = type id */
    HG_K_MALLOC        = 1,
    HG_K_CALLOC        = 2,  /* size = nmemb*size                                  */
    HG_K_REALLOC_NEW   = 3,  /* the new block of a realloc (also realloc(NULL,n))  */
    HG_K_REALLOCARRAY  = 4,  /* the new block of a reallocarray                     */
    HG_K_POSIX_MEMALIGN= 5,
    HG_K_ALIGNED_ALLOC = 6,
    HG_K_MEMALIGN      = 7,
    HG_K_VALLOC        = 8,
    HG_K_PVALLOC       = 9,
    /* frees: addr = block (never NULL: free(NULL) is counted, not recorded) */
    HG_K_FREE          = 16,
    HG_K_REALLOC_FREE  = 17, /* old block handed to realloc/reallocarray; published
                                before the call. realloc(p,0) is this and nothing else. */
    HG_K_REALLOC_UNDO  = 18, /* realloc failed: addr (given to REALLOC_FREE just
                                before on this thread) is live again, unchanged */
    /* metadata */
    HG_K_MODULE_LOAD   = 32, /* addr = load bias, stack = blob of hg_module_blob   */
    HG_K_MODULE_UNLOAD = 33, /* addr = load bias                                   */
    HG_K_TYPE_NAME     = 34, /* aux = type id, addr = metadata ptr, stack = blob (NUL-terminated name) */
    HG_K_MARK          = 35, /* stack = blob (NUL-terminated label, may be empty), size = CLOCK_MONOTONIC ns,
                                aux = origin: 0 program (heapgen_mark), 1 collector (timer), 2 external (heapgen mark PID) */
    HG_K_THREAD_START  = 36, /* first record of a thread: aux = kernel tid          */
    HG_K_STACK_TRUNC   = 37, /* reserved */
    HG_K_CONTROL       = 38, /* a control request (see "Control channel"): addr = request id,
                                size = request length, aux = low 32 bits of the id. The
                                collector answers after it has consumed every record
                                before this one, so the answer sees them all. */
    HG_K_CHILD_EXIT    = 39, /* the process reaped (or saw, WNOWAIT) a child that ended:
                                addr = child pid, size = raw wait status (exit code << 8,
                                or the signal | 0x80 if it dumped core) */
    HG_K_FORK          = 40, /* this process is about to fork: addr = fork id (per process,
                                from 1). Published in the parent's fork handler, before the
                                fork; the child's header names the id in parent_fork_id, so
                                the collector starts the child's trace with the parent's live
                                blocks as they were at this record. size = 1: the shim could
                                not connect for the child, which will run untraced; aux =
                                the errno of that (0 if none was set). */
    HG_K_EXEC          = 41, /* this image calls an exec function (execve, execvp, ...):
                                addr = 1 just before the call, stack = blob (the program's
                                name: the last component of the path given, NUL-terminated);
                                addr = 0 after a call that failed and returned. The
                                connection closing after a 1 is the exec, even when the
                                program exec'd was not traced and is gone before the
                                collector can look at it. size = 0: this image calls it;
                                else the pid of a child that runs the program, which should
                                say hello as that pid: a vfork child that shares the segment
                                and calls it, or one posix_spawn started (recorded once it
                                returned). aux = 1: the environment given to the program no
                                longer preloads this library or names the socket. */
    HG_K_EXIT          = 42, /* this image is exiting: size = the status given to exit(),
                                _exit(), _Exit() or quick_exit() (main's return value
                                included). The
                                collector uses it only when nobody reports how the process
                                ended: a parent that ignores SIGCHLD or never waits (a
                                double-forked daemon), a raw wait4 system call. */
};

/* The kind and size of a decoded record (hg_record.size_kind). */
#define HG_KIND_SHIFT 56
#define HG_SIZE_MASK  ((1ull << HG_KIND_SHIFT) - 1)

/* One ring slot: 16 bytes, four to a cache line. A record takes one slot,
 * or two (wide) when it does not fit one.
 *
 * Slot i serves ring positions i, i+N, i+2N, ... (N = ring_slots); position
 * pos is in lap L = pos / N. A record's first slot holds in w0:
 *   bits  0..47  addr (its low 48 bits)
 *   bits 48..53  kind (enum hg_kind)
 *   bit  54      HG_W0_WIDE: the record goes on in the next position's slot
 *   bits 55..63  the lap tag, (L mod 256) + 1: "published for lap L"
 * A tag is never 0, so a zero-filled ring, and a wide record's second slot
 * (whose w0 is a 32-bit ref), read as unpublished.
 *   one slot:   w1 = size (32 bits) | ref << 32; aux is 0, addr < 2^48.
 *   two slots:  w1 = size (56 bits); the next slot's w0 = ref,
 *               w1 = aux | (addr >> 48) << 32.
 * Allocations and frees take one slot; a Swift object's allocation (aux =
 * its type id), a block of 4 GiB or more, and most records of the shim's own
 * (marks carry a clock) take two.
 *
 * Only producers write slots: the consumer reports progress through
 * header.tail instead of writing each slot back, so slot cache lines do not
 * bounce between the two cores (measured: ~10 % of the target's allocation
 * path).
 *   producer: pos = head; if pos + n - 1 - tail >= N the ring is full:
 *             wait. Else CAS head pos -> pos+n, write the other words,
 *             store-release w0.
 *   consumer: at pos, if load-acquire w0 has lap L's tag, copy the record
 *             (and the next slot if wide); after a batch, store-release
 *             tail = next position to read.
 * Both sides use heapgen_ring.h (the one producer implementation, and why
 * each ordering is enough). 16 bytes, not 32: the same number of records
 * in half the memory, which the program and the collector both map (on
 * the bench each peaked 4 MB lower; the time was the same within noise). */
typedef struct hg_slot {
    uint64_t w0;         /* addr | kind | wide | lap tag (above)                */
    uint64_t w1;
} hg_slot;

#define HG_W0_ADDR_MASK  ((1ull << 48) - 1)
#define HG_W0_KIND_SHIFT 48
#define HG_W0_KIND_MASK  0x3full
#define HG_W0_WIDE       (1ull << 54)
#define HG_W0_TAG_SHIFT  55

/* A record as the consumer hands it on (hg_drain & co): the fields of
 * either form, and its ring position. */
typedef struct hg_record {
    uint64_t pos;        /* ring position of its first slot                     */
    uint64_t addr;
    uint64_t size_kind;  /* size in low 56 bits, enum hg_kind in the top 8   */
    uint32_t ref;        /* stack id / blob ref: a tagged arena ref; 0 = none */
    uint32_t aux;        /* type id for Swift objects (0 = none), etc.       */
} hg_record;

/* Stacks are a call tree (a prefix tree of return addresses, outermost frame
 * at the root, like heaptrack's trace tree): every distinct (caller node,
 * return address) edge is stored once as a node blob, and a stack is the ref
 * of its innermost node. Memory grows with the distinct edges, not with whole
 * stacks: stacks share their outer frames.
 *
 * A node blob: hg_blob_hdr{len = depth | flags, tag = HG_BLOB_NODE} followed
 * by hg_node. depth (HG_NODE_DEPTH_MASK) counts the frames from the root:
 * 1 for an outermost frame, whose parent is 0; otherwise parent is the ref of
 * the node one frame further out, whose depth is one less, and parent < ref
 * (a node is stored only after its parent), so a walk from any node to the
 * root ends within depth steps. A stack of n frames is read by walking n
 * nodes: frame 0 (the caller of malloc & co, never shim code) is the
 * innermost node's pc.
 * HG_NODE_TRUNCATED: the unwinder stopped at the frame limit (max_frames)
 * before the outermost frame; the stack's outermost callers are missing. Set
 * on every node of such a stack (they form their own subtrees), so any node
 * tells. A reader rejects a chain whose nodes disagree on it.
 * `link` is the shim's own hash-chain link (its edge index lives in private
 * memory; the chains run through the nodes); readers ignore it. */
/* A string blob: hg_blob_hdr{len=bytes incl. NUL, tag=HG_BLOB_STRING} + bytes. */
/* A module blob: hg_blob_hdr{len=total bytes after hdr, tag=HG_BLOB_MODULE}
 * followed by hg_module_blob and its variable parts. */
enum hg_blob_tag {
    HG_BLOB_STACK  = 1,  /* protocol <= 3: a whole stack; no longer written */
    HG_BLOB_STRING = 2,
    HG_BLOB_MODULE = 3,
    HG_BLOB_NODE   = 4,  /* one call-tree node (protocol 4) */
};

#define HG_NODE_DEPTH_MASK 0xffffu
#define HG_NODE_TRUNCATED  0x80000000u

/* Arena epochs (protocol 5). The arena is two halves used in turn, so a
 * program that makes stacks without end (a test suite: millions of distinct
 * stacks) keeps a bounded arena instead of filling it and losing stacks:
 *   header.arena_state = epoch << HG_ARENA_EPOCH_SHIFT | bytes used in the
 *     epoch's half; epoch E writes half E & 1, from byte 8 of it (so no ref
 *     is 0). Producers reserve with a CAS (hg_arena_reserve, heapgen_ring.h).
 *   When a half is full, a producer may start epoch E + 1 (CAS to
 *     (E + 1) << shift | 8) only once header.arena_released >= E: the
 *     collector no longer reads epoch E - 1, whose half E + 1 writes over.
 *     Until then a producer waits (like for a full ring, counted in
 *     wait_count; it sets arena_wanted = E + 1 so the collector releases
 *     at once), at most HG_ARENA_WAIT_MS; blobs that still do not fit are
 *     lost (counted: arena_full, stacks_lost).
 *   Refs a producer publishes (hg_record.ref) are tagged:
 *     ref = (E & 0xff) << HG_REF_OFFSET_BITS | arena offset / 8.
 *     Refs inside the arena (hg_node.parent, .link) are plain offset / 8
 *     and never leave their epoch's half.
 *   The collector keeps reading epochs arena_released and arena_released + 1;
 *     a published ref whose tag is neither was made in an epoch it released
 *     (a thread that interned a stack, then published it after the half had
 *     been handed back): the collector reads it while the shim has not begun
 *     epoch E + 2, whose half is E's. A producer that finds, just before it
 *     claims its slot, that the arena has left the epoch it interned in
 *     stores the stack again in the current one. Only a stack still
 *     unreadable is recorded without one and counted. The collector releases
 *     an epoch (store-release arena_released) only after its last read of
 *     that half, once the next epoch is well under way. */
#define HG_ARENA_EPOCH_SHIFT 40
/* Long enough for a collector that is merely starved of CPU (a loaded
 * 2-core machine) to release; a stopped one (a debugger) costs the program
 * this once per epoch. */
#define HG_ARENA_WAIT_MS     1000
#define HG_ARENA_USED_MASK   ((1ull << HG_ARENA_EPOCH_SHIFT) - 1)
#define HG_REF_OFFSET_BITS   24
#define HG_REF_OFFSET_MASK   ((1u << HG_REF_OFFSET_BITS) - 1)

typedef struct hg_node {
    uint32_t parent;  /* ref of the next outer frame's node; 0 at depth 1 */
    uint32_t link;    /* shim-private hash chain; readers ignore it       */
    uint64_t pc;      /* return address                                   */
} hg_node;

typedef struct hg_blob_hdr {
    uint32_t len;
    uint32_t tag;
} hg_blob_hdr;

/* Module blob payload. After the fixed part: `nsegs` hg_module_seg, then
 * `build_id_len` bytes of build id, then the NUL-terminated path
 * (path_len bytes including the NUL), each part padded to 8 bytes. */
typedef struct hg_module_seg {
    uint64_t vaddr;   /* p_vaddr of a PT_LOAD (add load bias for runtime address) */
    uint64_t memsz;
    uint32_t flags;   /* p_flags */
    uint32_t _pad;
} hg_module_seg;

typedef struct hg_module_blob {
    uint64_t load_bias;
    uint32_t nsegs;
    uint32_t build_id_len;
    uint32_t path_len;
    uint32_t _pad;
} hg_module_blob;

/* Control channel (protocol 3): the traced program asks the collector for a
 * verdict while it runs (heapgen_control() in heapgen.h; HeapGenTesting).
 *
 * The segment has a control area of control_size bytes at control_offset
 * (page aligned, between the ring and the arena): the first
 * HG_CONTROL_REQUEST_BYTES hold the request, the rest the response.
 * One request is in flight per process image (a mutex in the shim):
 *   shim:      copy the request bytes (UTF-8 JSON, no NUL needed) into the
 *              request region; store control_request_len; store-release
 *              control_request_id = id (previous id + 1); publish a ring
 *              record HG_K_CONTROL with addr = id. Then poll
 *              control_response_id every 100 us (collector liveness every
 *              20 ms, like a full ring; give up after 30 s).
 *   collector: on consuming that record (so after every record before it),
 *              if header.control_request_id == id: copy at most
 *              HG_CONTROL_REQUEST_BYTES of the request, answer, copy the
 *              response into the response region, store
 *              control_response_len, store-release control_response_id = id.
 *              A record whose id is not the current request id is stale and
 *              ignored. Responses are JSON objects: {"ok":true,...} or
 *              {"ok":false,"error":"..."}.
 * The collector copies the request once and validates lengths against its
 * own copy of the layout: a program that scribbles on the area gets an error
 * answer, never a collector crash or hang. */
#define HG_CONTROL_SIZE          (1u << 20)   /* default control area: 1 MiB      */
#define HG_CONTROL_REQUEST_BYTES (64u << 10)  /* request region at its start       */
#define HG_CONTROL_MIN_SIZE      (HG_CONTROL_REQUEST_BYTES + 4096u)
#define HG_CONTROL_MAX_SIZE      (64u << 20)

/* Allocators. The shim wraps whatever allocator the program would have used
 * (glibc's, or libjemalloc/libtcmalloc/... linked by the program): each
 * interposed function calls the next definition after the shim in symbol
 * order. Some allocations cannot reach the shim at all; the shim says so in
 * header.alloc_flags (it never prints into the program's stderr) and the
 * collector prints one warning per traced program. All strings are
 * NUL-terminated inside their array (possibly cut); the collector must not
 * trust that and bounds its reads anyway. */
#define HG_ALLOC_PATH 128
enum hg_alloc_flag {
    HG_ALLOC_BYPASSED   = 1u << 0, /* malloc or free is defined before the shim (by the
                                      executable or an earlier preload): the program's
                                      calls go there, heapgen records nothing of them */
    HG_ALLOC_FOREIGN    = 1u << 1, /* the wrapped malloc is not glibc's (alloc_object
                                      names it); informational                       */
    HG_ALLOC_CXX_DIRECT = 1u << 2, /* the allocator (alloc_object) defines C++ operator
                                      new/delete, bound ahead of libstdc++'s, and a
                                      loaded object uses them: those blocks bypass
                                      malloc and are not recorded                     */
};

/* The segment header (first page of the memfd). Fields written by only one
 * side are grouped so producer and collector do not share cache lines. */
typedef struct hg_header {
    /* written once by the shim before the hello */
    uint64_t magic;
    uint32_t version;
    uint32_t header_size;     /* sizeof(hg_header)                      */
    uint64_t segment_size;    /* bytes of the whole memfd               */
    uint64_t ring_offset;     /* from segment start, page aligned        */
    uint64_t ring_slots;      /* power of two                           */
    uint64_t arena_offset;    /* page aligned                           */
    uint64_t arena_size;      /* bytes                                  */
    int32_t  pid;
    int32_t  ppid;
    uint32_t origin;          /* enum hg_origin                         */
    uint32_t max_frames;
    uint64_t control_offset;  /* page aligned; 0 with control_size 0: no channel */
    uint64_t control_size;    /* bytes: request region + response region */
    uint64_t parent_fork_id;  /* origin FORK: the id of the parent's HG_K_FORK record; 0 none */
    uint8_t  _pad0[40];

    /* collector -> shim */
    _Alignas(64) volatile uint32_t state;    /* enum hg_state                        */
    int32_t  collector_pid;
    uint64_t arena_released;                 /* arena epochs below this are no longer read */

    /* producers: ring head (next position to claim) */
    _Alignas(64) uint64_t head;
    /* consumer: every position below tail has been read */
    _Alignas(64) uint64_t tail;
    /* producers: arena epoch and bytes used in its half (see "Arena epochs") */
    _Alignas(64) uint64_t arena_state;
    uint64_t arena_wanted;                   /* E + 1: a producer waits to start epoch E + 1 */
    /* producers: statistics, updated only on slow paths */
    _Alignas(64) uint64_t wait_count;        /* times a producer found the ring full */
    uint64_t wait_ns;                        /* total time spent waiting             */
    uint64_t arena_full;                     /* blobs (any kind) that did not fit           */
    uint64_t lost_events;                    /* events given up (only: collector gone; a
                                                signal handler's emit nested in our own
                                                unpublished slot a whole ring lap behind;
                                                calls nested more than 8 deep in the shim) */
    uint64_t free_null;                      /* free(NULL) calls: counted, not recorded   */
    uint64_t unwind_fallbacks;               /* stacks cut short: the unwinder could not go on
                                                (name kept from the libunwind days) */
    uint32_t detached;                       /* 1: collector gone, shim passes through    */
    uint32_t sandboxed;                      /* 1: the program installed a seccomp filter;
                                                the shim's waits made no system calls from
                                                then on, and its forks ran untraced      */
    uint64_t stacks_lost;                    /* allocations recorded with stack 0 because the
                                                stack store (arena or its index) was full */

    /* control channel, shim -> collector (see "Control channel") */
    _Alignas(64) uint64_t control_request_id;  /* id of the request in the request region */
    uint64_t control_request_len;              /* its length in bytes                     */
    /* control channel, collector -> shim */
    _Alignas(64) uint64_t control_response_id; /* id of the request answered last         */
    uint64_t control_response_len;            /* length of the response in bytes         */

    /* allocator: written once by the shim before the hello (see "Allocators") */
    _Alignas(64) uint32_t alloc_flags;         /* HG_ALLOC_* bits                          */
    uint32_t _pad2;
    char     alloc_object[HG_ALLOC_PATH];      /* object whose malloc the shim wraps       */
    char     alloc_bypass[HG_ALLOC_PATH];      /* HG_ALLOC_BYPASSED: the object whose malloc
                                                  runs instead of the shim's ("" = the
                                                  executable)                              */
} hg_header;

/* hg_mark_request: what `heapgen mark PID` sends on a connection of its own
 * to the rendezvous (no descriptor), instead of a hello: mark the traced
 * image of `pid` now. The collector answers one int32: 0 marked (or queued
 * behind a full ring, in order), -ESRCH it traces no image of that pid,
 * -EPERM the asker is neither root nor the process's user. */
#define HG_MARK_MAGIC 0x4b52414d4e454748ull /* "HGENMARK" little-endian */
#define HG_MARK_LABEL 256
typedef struct hg_mark_request {
    uint64_t magic;         /* HG_MARK_MAGIC */
    uint32_t version;       /* HG_PROTOCOL_VERSION */
    int32_t  pid;           /* the process to mark, as the collector numbers it */
    char     label[HG_MARK_LABEL];  /* NUL-terminated */
} hg_mark_request;

/* hg_hello: the one message a shim sends, with the memfd as SCM_RIGHTS. */
typedef struct hg_hello {
    uint64_t magic;         /* HG_PROTOCOL_MAGIC */
    uint32_t version;       /* HG_PROTOCOL_VERSION */
    uint32_t origin;        /* enum hg_origin */
    int32_t  pid;
    int32_t  ppid;
    uint64_t segment_size;
} hg_hello;

#ifdef __cplusplus
}
#endif
#endif /* HEAPGEN_PROTOCOL_H */
