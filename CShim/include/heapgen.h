/*
 * heapgen.h — the public C API of heapgen's preload library.
 *
 * Everything here is declared weak: a program built with this header runs
 * unchanged without heapgen (the symbols are then NULL), and when it runs
 * under `heapgen record` / `heapgen run` the preloaded library supplies them.
 * Call through the HEAPGEN_MARK macro, which checks for you.
 */
#ifndef HEAPGEN_H
#define HEAPGEN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a generation boundary: everything allocated before this call and
 * after the previous mark belongs to one generation. The mark is ordered
 * with the allocations of every thread. `label` may be NULL. */
void heapgen_mark(const char *label) __attribute__((weak));

/* 1 when this process is being recorded by heapgen, 0 otherwise. */
int heapgen_is_tracing(void) __attribute__((weak));

/* Asks the collector a question and waits for the answer (control channel,
 * protocol 3). `request` is a NUL-terminated JSON object, e.g.
 *   {"op":"track"}                  start live tracking of this process image
 *   {"op":"object","address":"0x…"} is that block live? type, size, stack, generation
 *   {"op":"begin"} … marks … {"op":"growth","warmUp":1}   per-cycle growth findings
 * (the ops and the answers are documented in docs/control-protocol.md).
 * The request is ordered with this process's allocations: the answer takes
 * into account every allocation and free made (by any thread) before the call.
 *
 * The answer (a JSON object, NUL-terminated) is copied into response; like
 * snprintf, at most capacity-1 bytes are copied and the return value is the
 * full length of the answer: a value >= capacity means it was truncated.
 * Negative values are errors (-errno):
 *   -ENOSYS     this process is not being recorded by heapgen (or the
 *               collector declined it, or it is detached)
 *   -EINVAL     request is NULL, or response is NULL with capacity > 0
 *   -E2BIG      the request is longer than the request region (64 KiB)
 *   -EPIPE      the collector went away while we waited (the process now
 *               runs untraced)
 *   -ETIMEDOUT  no answer within 30 s
 * One request is in flight per process at a time (other threads wait for
 * it). Not async-signal-safe. Allocates nothing. */
long heapgen_control(const char *request, char *response, size_t capacity) __attribute__((weak));

#define HEAPGEN_MARK(label) \
    do { if (heapgen_mark) heapgen_mark(label); } while (0)

#define HEAPGEN_IS_TRACING() (heapgen_is_tracing ? heapgen_is_tracing() : 0)

#ifdef __cplusplus
}
#endif
#endif /* HEAPGEN_H */
