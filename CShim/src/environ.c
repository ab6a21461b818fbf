/*
 * environ.c — what descendants inherit: with --no-follow-exec or
 * --no-follow-fork an untraced descendant must get the environment it
 * would have had without heapgen, and no shim.
 *
 * The collector adds LD_PRELOAD (in the user's LD_PRELOAD's place, if any)
 * and HEAPGEN_* variables (heapgen_protocol.h, "Environment"). When
 * descendants are not followed, the shim takes them out of the live
 * environ array itself, in place, as unsetenv() would (no allocation, no
 * lock: it runs at start-up and in a forked child's atfork handler):
 * HEAPGEN_* of the collector's go, and LD_PRELOAD is pointed back at the
 * user's own entry, which the collector passed as the value of
 * HEAPGEN_PRELOAD ("HEAPGEN_PRELOAD=LD_PRELOAD=<user's value>"), or removed
 * when the user had none.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "shim.h"

extern char **environ;

static int follow_fork = 1, follow_exec = 1;
/* The LD_PRELOAD entry the collector gave us, and the user's own entry:
 * only that exact entry is restored (a program that set its own
 * LD_PRELOAD since keeps it). */
static const char *our_preload;
static const char *user_preload;

static const char *const collector_names[] = {
    HG_ENV_SOCK, HG_ENV_COLLECTOR, HG_ENV_FOLLOW, HG_ENV_PRELOAD,
    HG_ENV_RING_SLOTS, HG_ENV_LEAK_SCAN, HG_ENV_RETENTION, HG_ENV_RETENTION_AT,
};

/* "NAME=..." for this name? */
static int entry_is(const char *entry, const char *name)
{
    size_t n = strlen(name);
    return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

void hg_env_configure(void)
{
    const char *f = getenv(HG_ENV_FOLLOW);
    if (f != NULL) {
        follow_fork = strstr(f, "fork") != NULL;
        follow_exec = strstr(f, "exec") != NULL;
    }
    for (char **e = environ; e && *e; e++) {
        if (entry_is(*e, "LD_PRELOAD") && our_preload == NULL)
            our_preload = *e;
        if (entry_is(*e, HG_ENV_PRELOAD))
            user_preload = *e + strlen(HG_ENV_PRELOAD) + 1;
    }
    if (user_preload != NULL && !entry_is(user_preload, "LD_PRELOAD"))
        user_preload = NULL;
}

/* The path the loader loaded this library by (what the collector put in
 * LD_PRELOAD), or NULL. Found at start-up (hg_exec_init), not in a vfork child. */
static const char *self_path(void)
{
    static const char *self;
    if (self == NULL) {
        Dl_info info;
        if (dladdr((void *)self_path, &info) == 0 || info.dli_fname == NULL)
            return NULL;
        self = info.dli_fname;
    }
    return self;
}

/* Whether `envp` still hands heapgen to the program it is for: our socket's
 * variable, and an LD_PRELOAD that names this library (the path the loader
 * loaded it by, which is what the collector put there). */
int hg_env_carries_us(char *const *envp)
{
    const char *self = self_path();
    if (self == NULL)
        return 1;           /* cannot tell: say nothing */
    int sock = 0, preload = 0;
    for (char *const *e = envp; e && *e; e++) {
        if (entry_is(*e, HG_ENV_SOCK))
            sock = 1;
        else if (entry_is(*e, "LD_PRELOAD") && strstr(*e, self) != NULL)
            preload = 1;
    }
    return sock && preload;
}

int hg_env_follow_fork(void) { return follow_fork; }
int hg_env_follow_exec(void) { return follow_exec; }

int hg_env_shim_reachable(void)
{
    const char *self = self_path();
    return self == NULL || access(self, R_OK) == 0;
}

/* An entry of the collector's that an untraced program must not get:
 * 0 keep, 1 drop, 2 our LD_PRELOAD (the user's own entry goes in its place). */
static int collector_entry(const char *entry)
{
    for (size_t i = 0; i < sizeof collector_names / sizeof collector_names[0]; i++)
        if (entry_is(entry, collector_names[i]))
            return 1;
    /* By content as well: a program may pass a copy of its environment. */
    if (our_preload != NULL && (entry == our_preload || strcmp(entry, our_preload) == 0))
        return 2;
    return 0;
}

char *const *hg_env_untraced(char *const *envp, char **room, size_t cap)
{
    size_t n = 0;
    for (char *const *e = envp; e && *e; e++) {
        const int kind = collector_entry(*e);
        if (kind == 1 || (kind == 2 && user_preload == NULL))
            continue;
        if (n + 1 >= cap)
            return envp;
        room[n++] = kind == 2 ? (char *)user_preload : *e;
    }
    room[n] = NULL;
    return room;
}

void hg_env_scrub(void)
{
    char **out = environ;
    if (out == NULL)
        return;
    for (char **e = environ; *e; e++) {
        const int kind = collector_entry(*e);
        if (kind == 1 || (kind == 2 && user_preload == NULL))
            continue;
        *out++ = kind == 2 ? (char *)user_preload : *e;
    }
    *out = NULL;
}
