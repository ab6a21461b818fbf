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

/* Whether `envp` still hands heapgen to the program it is for: our socket's
 * variable, and an LD_PRELOAD that names this library (the path the loader
 * loaded it by, which is what the collector put there). */
int hg_env_carries_us(char *const *envp)
{
    static const char *self;
    if (self == NULL) {
        Dl_info info;
        if (dladdr((void *)hg_env_carries_us, &info) == 0 || info.dli_fname == NULL)
            return 1;       /* cannot tell: say nothing */
        self = info.dli_fname;
    }
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

void hg_env_scrub(void)
{
    char **out = environ;
    if (out == NULL)
        return;
    const char *restore = user_preload;
    for (char **e = environ; *e; e++) {
        const char *entry = *e;
        int drop = 0;
        for (size_t i = 0; i < sizeof collector_names / sizeof collector_names[0]; i++)
            if (entry_is(entry, collector_names[i]))
                drop = 1;
        if (entry == our_preload) {
            if (restore == NULL)
                drop = 1;
            else
                entry = restore;
        }
        if (!drop)
            *out++ = (char *)entry;
    }
    *out = NULL;
}
