/*
 * ring.c — the producer side of the shared ring (see heapgen_protocol.h for
 * its slots and lap tags; hg_emit_event in shim.h is hg_emit's common case,
 * inline). Lossless: a full ring makes the producer wait for the collector; only a dead collector ends the wait, and one case
 * of nesting (below). Every event not written is counted in lost_events.
 *
 * Re-entrant: a signal handler may emit while this thread's own emit holds a
 * claimed, unpublished slot. The collector reads in order, so it stops at
 * that slot until the handler returns; the nested emit may still wait for
 * room as long as the room it needs lies before that slot. Only when it
 * does not (pos >= held + slots) is waiting hopeless: then it is lost.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "shim.h"

HG_TLS uint32_t hg_thread_gen;
/* 1 + the lowest ring position this thread holds claimed and unpublished
 * (0: none; HG_HELD_WIDE: a two-slot claim). Set just before the claiming
 * CAS, so a handler that runs between the CAS and the publication sees it;
 * one that runs before the CAS sees it too, and waits only while nobody has
 * claimed the position. hg_held_frame: the claimant's frame, stored before
 * and again after the mark (hg_emit_held tells an abandoned claim by it). */
HG_TLS uint64_t hg_held;
HG_TLS uintptr_t hg_held_frame;

int hg_holds_slot(void)
{
    return hg_held != 0;
}

/* What the collector has done for us so far: it moves the tail, releases
 * arena halves and answers requests. */
static uint64_t collector_progress(void)
{
    const hg_header *h = g_hg.hdr;
    return __atomic_load_n(&h->tail, __ATOMIC_RELAXED) +
           (__atomic_load_n(&h->arena_released, __ATOMIC_RELAXED) << 40) +
           (__atomic_load_n(&h->control_response_id, __ATOMIC_RELAXED) << 52);
}

/* In a seccomp sandbox the collector cannot be asked (poll, connect and
 * kill may be fatal there): it is taken for gone once it has made no
 * progress for this long. Long, because a collector busy with another
 * process's scan (up to 20 s) leaves ours alone meanwhile. */
#define SANDBOX_SILENCE_NS (60ull * 1000 * 1000 * 1000)

void hg_collector_wait_begin(hg_collector_wait *w, unsigned yields)
{
    w->saved_errno = errno;
    w->cancel_state = hg_cancel_off();
    w->start = w->last_check = w->last_progress = hg_clock_ns();
    w->progress = collector_progress();
    w->yields = yields;
    __atomic_fetch_add(&g_hg.hdr->wait_count, 1, __ATOMIC_RELAXED);
}

static int collector_alive(hg_collector_wait *w, uint64_t t)
{
    if (!hg_sandboxed())
        return hg_collector_alive();
    const uint64_t p = collector_progress();
    if (p != w->progress) {
        w->progress = p;
        w->last_progress = t;
    }
    return t - w->last_progress < SANDBOX_SILENCE_NS;
}

int hg_collector_wait_pause(hg_collector_wait *w, uint64_t *elapsed)
{
    if (w->yields > 0) {
        w->yields--;
        hg_yield();
    } else {
        hg_pause(50 * 1000);
    }
    const uint64_t t = hg_clock_ns();
    *elapsed = t - w->start;
    if (t - w->last_check > 20000000ull) {
        w->last_check = t;
        if (!collector_alive(w, t))
            return 0;
    }
    return 1;
}

void hg_collector_wait_end(hg_collector_wait *w)
{
    __atomic_fetch_add(&g_hg.hdr->wait_ns, hg_clock_ns() - w->start, __ATOMIC_RELAXED);
    hg_cancel_restore(w->cancel_state);
    errno = w->saved_errno;
}

/* Waits until the collector has read position `pos - N`, so that the
 * slot of pos is free. Returns 0 when the collector is gone. */
static int wait_for_space(uint64_t pos)
{
    hg_header *h = g_hg.hdr;
    const uint64_t slots = g_hg.ring_mask + 1;
    hg_collector_wait w;
    hg_collector_wait_begin(&w, 64);
    for (;;) {
        /* Signed: our pos may be stale, already behind the tail. */
        if ((int64_t)(pos - __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE)) < (int64_t)slots || h->detached)
            break;
        uint64_t elapsed;
        if (!hg_collector_wait_pause(&w, &elapsed)) {
            hg_detach();
            break;
        }
        /* A program that wrote over its own header could make this wait
         * forever. The tail never passes the head (tail read first), and the
         * head never runs more than a ring ahead of the tail (head read
         * first): anything else is nonsense, so run on untraced. */
        uint64_t t1 = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
        uint64_t hd = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
        uint64_t t2 = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
        if (t1 > hd || (hd > t2 && hd - t2 > slots)) {
            hg_detach();
            break;
        }
    }
    hg_collector_wait_end(&w);
    return !h->detached;
}

/* hg_emit past the check for an abandoned claim. */
static int emit(uint32_t kind, uint64_t addr, uint64_t size, uint32_t ref, uint32_t aux)
{
    hg_header *h = g_hg.hdr;
    hg_slot *ring = g_hg.ring;
    const uint64_t mask = g_hg.ring_mask;
    const uint32_t shift = g_hg.ring_shift;
    const uint64_t held_word = hg_held;     /* with its marks, put back as it was */
    const uint64_t held = HG_HELD_POS(held_word);
    const uint64_t n = hg_ring_record_slots(addr, size, aux);
    uint64_t pos = hg_ring_head(h);

    for (;;) {
        if (HG_UNLIKELY(!hg_ring_has_room(h, pos, n, mask))) {
            /* Nested in our own claimed slot at held-1: the collector
             * cannot get past it, so room at our last slot never comes if
             * it is a whole lap beyond it. Unless nobody has claimed that
             * position yet (the handler ran before the claim, which will
             * now fail and retry): then waiting is fine. */
            if (held != 0 && hg_ring_head(h) > held - 1 &&
                (int64_t)(pos + n - 1 - (held - 1)) > (int64_t)mask) {
                __atomic_fetch_add(&h->lost_events, 1, __ATOMIC_RELAXED);
                return 0;
            }
            if (!wait_for_space(pos + n - 1)) {
                __atomic_fetch_add(&h->lost_events, 1, __ATOMIC_RELAXED);
                return 0;
            }
            pos = hg_ring_head(h);
            continue;
        }
        if (held == 0)
            hg_held_mark(pos, n);
        if (hg_ring_claim(h, &pos, n)) {
            hg_ring_publish(ring, mask, pos, shift, kind, addr, size, ref, aux);
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
            hg_held_set(held_word);
            return 1;
        }
        hg_held_set(held_word);
        /* claim failure reloaded pos */
    }
}

int hg_frame_gone(uintptr_t entry, uintptr_t then)
{
    if (entry < then)
        return 0;
    const int saved_errno = errno;
    stack_t ss;
    const int on_signal_stack = sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK);
    errno = saved_errno;
    return !on_signal_stack;
}

int hg_emit_held(uint32_t kind, uint64_t addr, uint64_t size, uint32_t ref, uint32_t aux, uintptr_t entry)
{
    const uint64_t held = hg_held;
    if (hg_frame_gone(entry, hg_held_frame)) {
        /* Claimed by us and still unpublished: the collector cannot get
         * past it (nor can anyone else claim it before it does): fill it.
         * The event it was for is lost. Claimed by nobody yet (the head
         * not past it): nothing to fill. Claimed, unpublished: ours, left
         * after the claim, or another thread's, which took the position
         * when ours failed and publishes it at once: still unpublished
         * after 64 yields, it is ours. (Not a long wait: a program that
         * jumps out of signal handlers at a high rate would jump out of it
         * again.) hg_held is cleared only once the slot is filled: a jump
         * out of here leaves it for the next call. */
        const uint64_t pos = HG_HELD_POS(held) - 1;
        hg_slot *ring = g_hg.ring;
        const uint64_t mask = g_hg.ring_mask;
        const uint32_t shift = g_hg.ring_shift;
        const hg_slot *slot = &ring[pos & mask];
        int ours = hg_ring_head(g_hg.hdr) > pos;
        for (int i = 0; ours && i < 64 && !hg_ring_published(__atomic_load_n(&slot->w0, __ATOMIC_ACQUIRE), pos, shift); i++)
            hg_yield();
        if (ours && !hg_ring_published(__atomic_load_n(&slot->w0, __ATOMIC_ACQUIRE), pos, shift)) {
            if (held & HG_HELD_WIDE)
                hg_ring_publish(ring, mask, pos + 1, shift, HG_K_NOP, 0, 0, 0, 0);
            hg_ring_publish(ring, mask, pos, shift, HG_K_NOP, 0, 0, 0, 0);
            __atomic_fetch_add(&g_hg.hdr->lost_events, 1, __ATOMIC_RELAXED);
        }
        hg_held_set(0);
    }
    return emit(kind, addr, size, ref, aux);
}

int hg_emit(uint32_t kind, uint64_t addr, uint64_t size, uint32_t ref, uint32_t aux)
{
    /* The caller's CFA is the program's stack pointer at its call into the
     * shim when it is an entry point (heapgen_mark), else a little below it:
     * good enough for hg_frame_gone. The shim keeps frame pointers. */
    if (HG_UNLIKELY(hg_held != 0))
        return hg_emit_held(kind, addr, size, ref, aux, (uintptr_t)__builtin_frame_address(1) + 16);
    return emit(kind, addr, size, ref, aux);
}

/* The first record of each thread in each segment names the thread. */
void hg_thread_announce(void)
{
    hg_thread_gen = g_hg.segment_gen;
    hg_emit(HG_K_THREAD_START, 0, 0, 0, (uint32_t)syscall(SYS_gettid));
}
