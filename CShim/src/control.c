/*
 * control.c — heapgen_control: the program asks the collector a question
 * (see "Control channel" in heapgen_protocol.h).
 *
 * The shim does no analysis: it copies the request into the segment's
 * control area, publishes an HG_K_CONTROL ring record (so the request is
 * ordered with every allocation and free before it), and polls for the
 * answer. Nothing here allocates.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include "shim.h"

/* One request in flight per process image. */
static pthread_mutex_t control_lock = PTHREAD_MUTEX_INITIALIZER;

#define CONTROL_POLL_NS      (100 * 1000ull)              /* 100 us */
#define CONTROL_ALIVE_NS     (20 * 1000 * 1000ull)        /* 20 ms  */
#define CONTROL_TIMEOUT_NS   (30ull * 1000 * 1000 * 1000) /* 30 s   */

/* A thread that forked while another held the lock: the child has no such
 * thread, so the lock starts afresh (the child has a new segment anyway). */
void hg_control_fork_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    memcpy(&control_lock, &fresh, sizeof fresh);
}

static int control_active(void)
{
    return hg_ready() && hg_guard == 0 && hg_same_process() && !g_hg.hdr->detached && g_hg.control != NULL &&
           g_hg.control_size > HG_CONTROL_REQUEST_BYTES;
}

static long control_locked(const char *request, size_t len, char *response, size_t capacity)
{
    hg_header *h = g_hg.hdr;
    uint8_t *area = g_hg.control;
    const uint64_t response_room = g_hg.control_size - HG_CONTROL_REQUEST_BYTES;

    if (HG_UNLIKELY(hg_thread_gen != g_hg.segment_gen))
        hg_thread_announce();

    /* We are the only writer of the request fields (the lock). */
    uint64_t id = __atomic_load_n(&h->control_request_id, __ATOMIC_RELAXED) + 1;
    memcpy(area, request, len);
    __atomic_store_n(&h->control_request_len, (uint64_t)len, __ATOMIC_RELAXED);
    __atomic_store_n(&h->control_request_id, id, __ATOMIC_RELEASE);
    if (!hg_emit(HG_K_CONTROL, id, len, 0, (uint32_t)id))
        return -EPIPE;      /* collector gone while the ring was full */

    uint64_t start = hg_clock_ns(), last_check = start;
    for (;;) {
        if (__atomic_load_n(&h->control_response_id, __ATOMIC_ACQUIRE) == id) {
            uint64_t n = __atomic_load_n(&h->control_response_len, __ATOMIC_RELAXED);
            if (n > response_room)
                n = response_room;      /* nonsense from the other side: clamp */
            if (capacity > 0) {
                size_t copy = n < capacity - 1 ? (size_t)n : capacity - 1;
                memcpy(response, area + HG_CONTROL_REQUEST_BYTES, copy);
                response[copy] = 0;
            }
            return (long)n;
        }
        if (__atomic_load_n(&h->detached, __ATOMIC_ACQUIRE))
            return -EPIPE;
        uint64_t t = hg_clock_ns();
        if (t - last_check > CONTROL_ALIVE_NS) {
            last_check = t;
            if (!hg_collector_alive()) {
                hg_detach();
                return -EPIPE;
            }
        }
        if (t - start > CONTROL_TIMEOUT_NS)
            return -ETIMEDOUT;
        hg_pause(CONTROL_POLL_NS);
    }
}

/* One request: checks, then the lock (waited for, or with `bounded` tried
 * for about a second), then the exchange. Cancellation is off throughout:
 * one cancelled while waiting would keep the lock. */
static long control_request(const char *request, char *response, size_t capacity, int bounded)
{
    if (!control_active())
        return -ENOSYS;
    size_t len = strnlen(request, HG_CONTROL_REQUEST_BYTES + 1);
    if (len > HG_CONTROL_REQUEST_BYTES)
        return -E2BIG;
    int cancel = hg_cancel_off();
    long r = -EBUSY;
    int locked = !bounded && pthread_mutex_lock(&control_lock) == 0;
    for (int i = 0; bounded && !locked && i < 1000; i++) {
        locked = pthread_mutex_trylock(&control_lock) == 0;
        if (!locked)
            hg_pause(1000 * 1000);
    }
    if (locked) {
        r = control_locked(request, len, response, capacity);
        pthread_mutex_unlock(&control_lock);
    }
    hg_cancel_restore(cancel);
    return r;
}

/* heapgen_control for _exit, which programs call from signal handlers: the
 * handler may have interrupted this very thread inside heapgen_control, with
 * the lock held. Waits for the lock at most about a second, then does
 * without (the collector then says the exit scan is missing). */
long hg_control_from_handler(const char *request, char *response, size_t capacity)
{
    return control_request(request, response, capacity, 1);
}

HG_EXPORT long heapgen_control(const char *request, char *response, size_t capacity)
{
    if (request == NULL || (response == NULL && capacity > 0))
        return -EINVAL;
    return control_request(request, response, capacity, 0);
}
