/* Symbolication fixture: a shared library (-shared -fPIC -O2 -g). */
#include <stdlib.h>
#include <string.h>

struct record { int id; char name[32]; };

__attribute__((noinline)) struct record *shlib_make_record(int id, const char *name) {
    struct record *r = malloc(sizeof *r); /* MARK: shlib_make_record malloc */
    if (!r) return NULL;
    r->id = id;
    strncpy(r->name, name, sizeof r->name - 1);
    r->name[sizeof r->name - 1] = 0;
    return r;
}

__attribute__((noinline)) int shlib_checksum(const struct record *r) {
    int s = r->id;               /* MARK: shlib_checksum start */
    for (const char *p = r->name; *p; p++) s = s * 31 + *p;
    return s;
}

#ifdef REBUILT
/* Only in the "rebuilt" variant, so its build ID differs. */
int shlib_rebuilt_marker(void) { return 42; }
#endif
