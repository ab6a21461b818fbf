// A cache prefetch, which Swift has no spelling for. Used by the trace writer's hot loop
// (TraceWriter.prefetch): a hint only, it never faults and changes no state.
#ifndef HEAPGEN_PREFETCH_H
#define HEAPGEN_PREFETCH_H

/* Brings the line at p towards the cache for a write soon. */
static inline void hg_prefetch_write(const void *p) { __builtin_prefetch(p, 1, 3); }

#endif
