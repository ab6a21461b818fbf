// zstd (Debian's libzstd-dev) for compressed trace chunks (docs/trace-format.md, "Chunks").
// ZSTD_STATIC_LINKING_ONLY is not defined: only the stable API is used.
#include <zstd.h>
