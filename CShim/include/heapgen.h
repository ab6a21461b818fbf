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

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a generation boundary: everything allocated before this call and
 * after the previous mark belongs to one generation. The mark is ordered
 * with the allocations of every thread. `label` may be NULL. */
void heapgen_mark(const char *label) __attribute__((weak));

/* 1 when this process is being recorded by heapgen, 0 otherwise. */
int heapgen_is_tracing(void) __attribute__((weak));

#define HEAPGEN_MARK(label) \
    do { if (heapgen_mark) heapgen_mark(label); } while (0)

#define HEAPGEN_IS_TRACING() (heapgen_is_tracing ? heapgen_is_tracing() : 0)

#ifdef __cplusplus
}
#endif
#endif /* HEAPGEN_H */
