/* Segment mapping and validation, blob reads. The target may scribble on its
 * segment at any time: layout values are validated once and kept in
 * hg_segment; every blob read is bounds-checked against that copy. */
#include "CHeapGenCollector.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest segment the collector maps: a sanity bound. The defaults need
 * ~37 MiB; the largest the shim makes (2^26 ring slots, a 64 MiB control
 * area, a 128 MiB arena) ~1.2 GiB. */
#define HG_MAX_SEGMENT_SIZE (64ull << 30)
#define HG_MAX_RING_SLOTS   (1ull << 30)

static int fail(char *errbuf, size_t errlen, const char *fmt, ...) {
    if (errbuf && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errbuf, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* a + b <= limit, without overflow */
static int fits(uint64_t a, uint64_t b, uint64_t limit) {
    return a <= limit && b <= limit - a;
}

int hg_segment_open(int fd, const hg_hello *hello, hg_segment *seg, char *errbuf, size_t errlen) {
    memset(seg, 0, sizeof *seg);
    seg->fd = -1;
    /* Seal first, then look at the size: the target can then no longer
     * shrink the file under our mapping (that would SIGBUS the collector).
     * Works only if the memfd was created with MFD_ALLOW_SEALING. */
    (void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
    struct stat st;
    if (fstat(fd, &st) != 0)
        return fail(errbuf, errlen, "fstat on segment failed: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fail(errbuf, errlen, "segment fd is not a memory file");
    uint64_t size = hello->segment_size;
    if (size < sizeof(hg_header) || size > HG_MAX_SEGMENT_SIZE)
        return fail(errbuf, errlen, "segment size %llu out of range", (unsigned long long)size);
    if ((uint64_t)st.st_size < size)
        return fail(errbuf, errlen, "segment size %llu larger than its file (%lld bytes)",
                    (unsigned long long)size, (long long)st.st_size);

    void *base = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        return fail(errbuf, errlen, "mmap of segment failed: %s", strerror(errno));

    hg_header h;
    memcpy(&h, base, sizeof h); /* one snapshot: validate the copy, use the copy */
    const char *why = NULL;
    char buf[160];
    if (h.magic != HG_PROTOCOL_MAGIC) why = "bad header magic";
    else if (h.version != HG_PROTOCOL_VERSION) {
        snprintf(buf, sizeof buf, "unsupported protocol version %u", h.version);
        why = buf;
    } else if (h.header_size != sizeof(hg_header)) why = "header size mismatch";
    else if (h.segment_size != size) why = "header segment size differs from hello";
    else if (h.pid != hello->pid || h.ppid != hello->ppid || h.origin != hello->origin)
        why = "header pid/ppid/origin differ from hello";
    else if (h.origin != HG_ORIGIN_INIT && h.origin != HG_ORIGIN_FORK) why = "unknown origin";
    else if (h.ring_slots < 2 || h.ring_slots > HG_MAX_RING_SLOTS || (h.ring_slots & (h.ring_slots - 1)))
        why = "ring_slots is not a power of two in range";
    else if (h.ring_offset < sizeof(hg_header) || (h.ring_offset & 63))
        why = "ring offset misplaced or misaligned";
    else if (!fits(h.ring_offset, h.ring_slots * sizeof(hg_slot), size)) why = "ring outside the segment";
    else if (h.arena_offset & 7) why = "arena offset misaligned";
    else if (!fits(h.arena_offset, h.arena_size, size)) why = "arena outside the segment";
    else if (h.arena_size > ((uint64_t)HG_MAX_ARENA_MB << 20)) why = "arena too large for its refs";
    else if (h.arena_size != 0 && h.arena_offset < h.ring_offset + h.ring_slots * sizeof(hg_slot) &&
             h.ring_offset < h.arena_offset + h.arena_size)
        why = "arena overlaps the ring";
    else if (h.arena_size != 0 && h.arena_offset < sizeof(hg_header)) why = "arena overlaps the header";
    else if (h.max_frames > HG_MAX_FRAMES) why = "max_frames too large";
    else if (h.control_size != 0 &&
             (h.control_size < HG_CONTROL_MIN_SIZE || h.control_size > HG_CONTROL_MAX_SIZE))
        why = "control area size out of range";
    else if (h.control_size != 0 && (h.control_offset & 4095)) why = "control area misaligned";
    else if (h.control_size != 0 && !fits(h.control_offset, h.control_size, size))
        why = "control area outside the segment";
    else if (h.control_size != 0 && h.control_offset < sizeof(hg_header)) why = "control area overlaps the header";
    else if (h.control_size != 0 && h.control_offset < h.ring_offset + h.ring_slots * sizeof(hg_slot) &&
             h.ring_offset < h.control_offset + h.control_size)
        why = "control area overlaps the ring";
    else if (h.control_size != 0 && h.arena_size != 0 && h.control_offset < h.arena_offset + h.arena_size &&
             h.arena_offset < h.control_offset + h.control_size)
        why = "control area overlaps the arena";
    if (why) {
        /* Tell the shim not to wait for us (the state word is inside the
         * mapping: size >= sizeof(hg_header) was checked above). */
        __atomic_store_n(&((hg_header *)base)->state, (uint32_t)HG_STATE_DECLINED, __ATOMIC_RELEASE);
        munmap(base, (size_t)size);
        return fail(errbuf, errlen, "%s", why);
    }

    seg->base = base;
    seg->size = size;
    seg->ring = (hg_slot *)((uint8_t *)base + h.ring_offset);
    seg->ring_slots = h.ring_slots;
    seg->ring_mask = h.ring_slots - 1;
    seg->ring_shift = (uint32_t)__builtin_ctzll(h.ring_slots);
    seg->arena = (const uint8_t *)base + h.arena_offset;
    seg->arena_size = h.arena_size;
    seg->arena_half = (h.arena_size / 2) & ~7ull;
    seg->pid = h.pid;
    seg->ppid = h.ppid;
    seg->origin = h.origin;
    seg->parent_fork_id = h.origin == HG_ORIGIN_FORK ? h.parent_fork_id : 0;
    seg->max_frames = h.max_frames;
    seg->control = h.control_size ? (uint8_t *)base + h.control_offset : NULL;
    seg->control_size = h.control_size;
    /* The mapping stays valid without the fd: one fd less per traced process. */
    close(fd);
    seg->fd = -1;
    return 0;
}

void hg_segment_close(hg_segment *seg) {
    if (seg->base) munmap(seg->base, (size_t)seg->size);
    if (seg->fd >= 0) close(seg->fd);
    seg->base = NULL;
    seg->ring = NULL;
    seg->arena = NULL;
    seg->control = NULL;
    seg->control_size = 0;
    seg->fd = -1;
}

void hg_segment_answer(hg_segment *seg, int32_t collector_pid, uint32_t state) {
    hg_header *h = (hg_header *)seg->base;
    __atomic_store_n(&h->collector_pid, collector_pid, __ATOMIC_RELAXED);
    __atomic_store_n(&h->state, state, __ATOMIC_RELEASE);
}

void hg_segment_detach(hg_segment *seg) {
    hg_header *h = (hg_header *)seg->base;
    __atomic_store_n(&h->detached, 1u, __ATOMIC_RELEASE);
}

void hg_segment_counters(const hg_segment *seg, hg_counters *out) {
    hg_header *h = (hg_header *)seg->base;
    out->head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
    out->wait_count = __atomic_load_n(&h->wait_count, __ATOMIC_RELAXED);
    out->wait_ns = __atomic_load_n(&h->wait_ns, __ATOMIC_RELAXED);
    out->arena_full = __atomic_load_n(&h->arena_full, __ATOMIC_RELAXED);
    out->stacks_lost = __atomic_load_n(&h->stacks_lost, __ATOMIC_RELAXED);
    out->lost_events = __atomic_load_n(&h->lost_events, __ATOMIC_RELAXED);
    out->free_null = __atomic_load_n(&h->free_null, __ATOMIC_RELAXED);
    out->unwind_fallbacks = __atomic_load_n(&h->unwind_fallbacks, __ATOMIC_RELAXED);
    out->arena_state = __atomic_load_n(&h->arena_state, __ATOMIC_RELAXED);
    out->detached = __atomic_load_n(&h->detached, __ATOMIC_RELAXED);
    out->sandboxed = __atomic_load_n(&h->sandboxed, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ blobs */

uint64_t hg_arena_state(const hg_segment *seg) {
    return __atomic_load_n(&((hg_header *)seg->base)->arena_state, __ATOMIC_ACQUIRE);
}

uint64_t hg_arena_wanted(const hg_segment *seg) {
    return __atomic_load_n(&((hg_header *)seg->base)->arena_wanted, __ATOMIC_RELAXED);
}

void hg_arena_release(const hg_segment *seg, uint64_t released) {
    __atomic_store_n(&((hg_header *)seg->base)->arena_released, released, __ATOMIC_RELEASE);
}

const void *hg_blob(const hg_segment *seg, uint32_t ref, uint32_t tag, uint32_t *len) {
    if (ref == 0 || !seg->arena) return NULL;
    uint64_t off = (uint64_t)ref * 8;
    if (!fits(off, sizeof(hg_blob_hdr), seg->arena_size)) return NULL;
    hg_blob_hdr hdr;
    memcpy(&hdr, seg->arena + off, sizeof hdr);
    if (hdr.tag != tag) return NULL;
    uint64_t payload = tag == HG_BLOB_STACK ? (uint64_t)hdr.len * 8 : hdr.len;
    if (!fits(off + sizeof hdr, payload, seg->arena_size)) return NULL;
    *len = hdr.len;
    return seg->arena + off + sizeof hdr;
}

/* The node at `ref` copied out of the shared arena, or -1 if it does not lie
 * inside the arena or is not a node. One copy: the target may rewrite it. */
static int read_node(const hg_segment *seg, uint32_t ref, hg_blob_hdr *hdr, hg_node *node) {
    uint64_t off = (uint64_t)ref * 8;
    if (ref == 0 || !fits(off, sizeof *hdr + sizeof *node, seg->arena_size)) return -1;
    memcpy(hdr, seg->arena + off, sizeof *hdr);
    memcpy(node, seg->arena + off + sizeof *hdr, sizeof *node);
    return hdr->tag == HG_BLOB_NODE ? 0 : -1;
}

uint32_t hg_read_stack_flags(const hg_segment *seg, uint32_t ref, uint64_t *out, uint32_t max,
                             uint32_t *truncated) {
    if (truncated) *truncated = 0;
    if (!seg->arena) return 0;
    hg_blob_hdr h;
    hg_node n;
    if (read_node(seg, ref, &h, &n) != 0) return 0;
    uint32_t depth = h.len & HG_NODE_DEPTH_MASK;
    uint32_t flags = h.len & ~HG_NODE_DEPTH_MASK;
    /* A stack is at most the shim's frame limit deep (validated <= HG_MAX_FRAMES
     * when the segment was opened) and must fit the caller's buffer. */
    uint32_t limit = seg->max_frames ? seg->max_frames : HG_MAX_FRAMES;
    if (flags & ~HG_NODE_TRUNCATED) return 0;
    if (depth == 0 || depth > limit || depth > max) return 0;
    /* Walk to the root: each step strictly lowers the ref and the depth by
     * one, so the walk ends within `depth` steps whatever the arena holds. */
    uint32_t count = depth;
    for (uint32_t i = 0;; i++) {
        out[i] = n.pc;
        if (depth == 1) {
            if (n.parent != 0) return 0;
            break;
        }
        uint32_t parent = n.parent;
        if (parent == 0 || parent >= ref) return 0;
        if (read_node(seg, parent, &h, &n) != 0) return 0;
        if ((h.len & HG_NODE_DEPTH_MASK) != depth - 1 || (h.len & ~HG_NODE_DEPTH_MASK) != flags) return 0;
        ref = parent;
        depth--;
    }
    if (truncated) *truncated = (flags & HG_NODE_TRUNCATED) != 0;
    return count;
}

uint32_t hg_read_stack(const hg_segment *seg, uint32_t ref, uint64_t *out, uint32_t max) {
    return hg_read_stack_flags(seg, ref, out, max, NULL);
}

int64_t hg_read_string(const hg_segment *seg, uint32_t ref, char *out, size_t max) {
    uint32_t n = 0;
    const char *p = hg_blob(seg, ref, HG_BLOB_STRING, &n);
    if (!p || max == 0) return -1;
    size_t i = 0;
    while (i < n && i + 1 < max) {
        char c = p[i];
        if (c == 0) break;
        out[i++] = c;
    }
    out[i] = 0;
    return (int64_t)i;
}

static uint64_t pad8(uint64_t n) { return (n + 7) & ~7ull; }

int hg_read_module(const hg_segment *seg, uint32_t ref, hg_module_info *info,
                   hg_module_seg *segs, uint32_t max_segs,
                   uint8_t *build_id, uint32_t max_build_id,
                   char *path, size_t path_max) {
    uint32_t len = 0;
    const uint8_t *p = hg_blob(seg, ref, HG_BLOB_MODULE, &len);
    if (!p || len < sizeof(hg_module_blob)) return -1;
    hg_module_blob m;
    memcpy(&m, p, sizeof m);
    uint64_t off = sizeof m;
    uint64_t segbytes = (uint64_t)m.nsegs * sizeof(hg_module_seg);
    if (!fits(off, segbytes, len)) return -1;
    uint32_t ns = m.nsegs < max_segs ? m.nsegs : max_segs;
    memcpy(segs, p + off, (size_t)ns * sizeof(hg_module_seg));
    off += segbytes;
    if (!fits(off, m.build_id_len, len)) return -1;
    uint32_t nb = m.build_id_len < max_build_id ? m.build_id_len : max_build_id;
    memcpy(build_id, p + off, nb);
    off += pad8(m.build_id_len);
    if (m.path_len == 0 || !fits(off, m.path_len, len)) return -1;
    size_t np = 0;
    const char *s = (const char *)(p + off);
    while (np < m.path_len && np + 1 < path_max && s[np] != 0) {
        path[np] = s[np];
        np++;
    }
    if (path_max) path[np] = 0;
    info->load_bias = m.load_bias;
    info->nsegs = ns;
    info->build_id_len = nb;
    info->path_len = (uint32_t)np;
    return 0;
}

/* ---------------------------------------------------------------- control */

int hg_control_request(const hg_segment *seg, uint64_t id, char *out, size_t max, size_t *len) {
    *len = 0;
    if (!seg->base || !seg->control || seg->control_size <= HG_CONTROL_REQUEST_BYTES) return -ENOSYS;
    hg_header *h = (hg_header *)seg->base;
    if (__atomic_load_n(&h->control_request_id, __ATOMIC_ACQUIRE) != id) return -ESTALE;
    uint64_t n = __atomic_load_n(&h->control_request_len, __ATOMIC_RELAXED);
    if (n > HG_CONTROL_REQUEST_BYTES || n > max) {
        *len = n > HG_CONTROL_REQUEST_BYTES ? HG_CONTROL_REQUEST_BYTES : (size_t)n;
        return -E2BIG;
    }
    /* One copy; the caller parses the copy, never the shared bytes. */
    memcpy(out, seg->control, (size_t)n);
    *len = (size_t)n;
    return 0;
}

size_t hg_control_response_room(const hg_segment *seg) {
    if (!seg->control || seg->control_size <= HG_CONTROL_REQUEST_BYTES) return 0;
    return (size_t)(seg->control_size - HG_CONTROL_REQUEST_BYTES);
}

int hg_control_respond(const hg_segment *seg, uint64_t id, const char *data, size_t len) {
    size_t room = hg_control_response_room(seg);
    if (room == 0) return -ENOSYS;
    if (len > room) return -E2BIG;
    hg_header *h = (hg_header *)seg->base;
    memcpy(seg->control + HG_CONTROL_REQUEST_BYTES, data, len);
    __atomic_store_n(&h->control_response_len, (uint64_t)len, __ATOMIC_RELAXED);
    __atomic_store_n(&h->control_response_id, id, __ATOMIC_RELEASE);
    return 0;
}
