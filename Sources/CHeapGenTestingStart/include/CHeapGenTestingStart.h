/*
 * CHeapGenTestingStart — asks heapgen to track this process from start-up.
 *
 * A constructor in this target (linked into every binary that uses
 * HeapGenTesting) sends {"op":"track"} over heapgen's control channel when
 * the program runs under heapgen, so that every object a test creates is
 * known to the collector (HeapGen.expectDeallocation needs the allocation of
 * the object it watches). Without heapgen it does nothing.
 */
#ifndef CHEAPGENTESTINGSTART_H
#define CHEAPGENTESTINGSTART_H

#ifdef __cplusplus
extern "C" {
#endif

/* What the start-up request returned: >= 0 tracking started (answer length),
 * -ENOSYS not running under heapgen (heapgen_control not found or the
 * process is not traced), another negative errno if the request failed. */
long hg_testing_start_result(void);

/* The calling thread's kernel id (gettid; Swift cannot call the variadic
 * syscall() and older glibc has no gettid()): the retention request names the
 * asking thread so its own stale stack slots count as roots of last resort. */
long hg_testing_thread_id(void);

#ifdef __cplusplus
}
#endif
#endif
