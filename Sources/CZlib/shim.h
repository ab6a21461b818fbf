// zlib (Debian's zlib1g-dev) for the pprof export's gzip stream.
#include <zlib.h>
