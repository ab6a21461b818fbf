/*
 * thread.c — each recording thread's large state, in blocks of a pool the
 * shim maps itself, not in static TLS.
 *
 * The unwinder's shadow and memo, the stack store's last built stack and
 * the frame buffers of the recording path come to about 19 KiB a thread.
 * In static TLS they came out of every thread's stack (glibc carves static
 * TLS from the stack it allocates): a thread created with a 16 KiB stack
 * crashed in its own code under heapgen. The frame buffer lived on the
 * stack of the allocating call, 2 KiB below the program's deepest frame.
 *
 * A thread gets a block at its first recorded allocation (hg_thread_attach)
 * and gives it back when it exits (a pthread key's destructor). Blocks are
 * never unmapped, so the free list is a lock-free stack whose head carries
 * a counter against ABA; taking and giving back are a CAS each, safe in a
 * signal handler. A thread that cannot get one (mmap failed, or its exit
 * already ran the destructors), and a call nested two deep in the shim,
 * record with a frame buffer of 64 frames on the stack (and without the
 * shadow, which the thread's outer call holds, or which it has none of).
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include "shim.h"
#include "unwind.h"

typedef struct hg_thread_block {
    struct hg_thread_block *next;        /* free list                      */
    _Alignas(64) unsigned char unwind[HG_UNWIND_THREAD_BYTES];
    _Alignas(64) unsigned char stacks[HG_STACK_THREAD_BYTES];
    uintptr_t frames[HG_FRAME_LEVELS][HG_MAX_FRAMES];
} hg_thread_block;

#define BLOCKS_PER_MAP 16
#define PTR_BITS 48                      /* user-space pointers fit 47 bits */
#define PTR_MASK ((1ull << PTR_BITS) - 1)

static uint64_t free_head;               /* counter << PTR_BITS | block      */
static HG_TLS hg_thread_block *mine;
HG_TLS uintptr_t *hg_frames;             /* mine->frames[0]                 */
HG_TLS int hg_frames_busy;
static HG_TLS int released;              /* gave its block back: exiting    */
static pthread_key_t exit_key;
static int key_state;                    /* 0 none, 1 being made, 2 made, 3 failed */

static hg_thread_block *pop(void)
{
    uint64_t old = __atomic_load_n(&free_head, __ATOMIC_ACQUIRE);
    for (;;) {
        hg_thread_block *b = (hg_thread_block *)(uintptr_t)(old & PTR_MASK);
        if (b == NULL)
            return NULL;
        /* b stays mapped even if another thread took it meanwhile: the CAS
         * then fails on the counter. */
        const uint64_t next = (uint64_t)(uintptr_t)__atomic_load_n(&b->next, __ATOMIC_RELAXED);
        const uint64_t want = ((old >> PTR_BITS) + 1) << PTR_BITS | next;
        if (__atomic_compare_exchange_n(&free_head, &old, want, 1, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
            return b;
    }
}

static void push(hg_thread_block *b)
{
    uint64_t old = __atomic_load_n(&free_head, __ATOMIC_RELAXED);
    for (;;) {
        __atomic_store_n(&b->next, (hg_thread_block *)(uintptr_t)(old & PTR_MASK), __ATOMIC_RELAXED);
        const uint64_t want = ((old >> PTR_BITS) + 1) << PTR_BITS | (uint64_t)(uintptr_t)b;
        if (__atomic_compare_exchange_n(&free_head, &old, want, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            return;
    }
}

/* A block from the free list, else from a new mapping of BLOCKS_PER_MAP
 * (the rest go on the list). */
static hg_thread_block *take(void)
{
    hg_thread_block *b = pop();
    if (b != NULL)
        return b;
    void *m = mmap(NULL, sizeof(hg_thread_block) * BLOCKS_PER_MAP, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || ((uintptr_t)m + sizeof(hg_thread_block) * BLOCKS_PER_MAP) > PTR_MASK)
        return NULL;
    hg_thread_block *blocks = (hg_thread_block *)m;
    for (int i = 1; i < BLOCKS_PER_MAP; i++)
        push(&blocks[i]);
    return &blocks[0];
}

/* The key's destructor: the exiting thread's block goes back to the list. */
static void thread_exit(void *arg)
{
    hg_thread_block *b = (hg_thread_block *)arg;
    if (b == NULL || b != mine)
        return;
    hg_unwind_attach(NULL);
    hg_stack_attach(NULL);
    hg_frames = NULL;
    mine = NULL;
    released = 1;
    push(b);
}

static int have_key(void)
{
    int s = __atomic_load_n(&key_state, __ATOMIC_ACQUIRE);
    if (HG_LIKELY(s == 2))
        return 1;
    if (s == 0 && __atomic_compare_exchange_n(&key_state, &s, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        s = pthread_key_create(&exit_key, thread_exit) == 0 ? 2 : 3;
        __atomic_store_n(&key_state, s, __ATOMIC_RELEASE);
    }
    return s == 2;   /* (another thread making it: go without a block this time) */
}

/* hg_thread_frames_take without a block: attach one (the frames taken). */
uintptr_t *hg_thread_attach(void)
{
    /* Once it gave its block back, a thread is exiting: a destructor that
     * allocates after ours ran would otherwise take a block nobody gives
     * back. */
    if (released || !have_key())
        return NULL;
    hg_thread_block *b = take();
    if (b == NULL)
        return NULL;
    hg_unwind_attach(b->unwind);
    hg_stack_attach(b->stacks);
    mine = b;
    hg_frames_busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    hg_frames = b->frames[0];
    /* (A key below PTHREAD_KEY_2NDLEVEL_SIZE is a store in the thread's
     * descriptor; a later one may allocate: that call is nested, guarded.
     * If it fails the block is not given back at exit: kept rather than
     * risk a block in use on the free list.) */
    (void)pthread_setspecific(exit_key, b);
    return b->frames[0];
}
