/*
 * exec.c — the exec family: one HG_K_EXEC record before the call, and one
 * more if it fails and returns.
 *
 * The collector tells an exec from an exit by the image's mappings or its
 * command name, which it can only read while the process is still there.
 * A program exec'd without heapgen (env -i, a setuid program, a mount
 * namespace that hides heapgen's socket) that ends at once is gone, and
 * reaped, before the collector looks: its trace said the image before it
 * "exited", and nobody said the program ran untraced. The record says it.
 *
 * glibc's own calls between these functions (execvp reaching execve, say)
 * do not come back through the PLT, so each is wrapped; the variadic execl
 * family builds its argument vector on the stack and calls the vector form,
 * as glibc does. posix_spawn's exec happens inside the C library: the
 * program it started is recorded with the child's pid once it returns.
 */
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
#include "shim.h"

extern char **environ;

/* `program`: the path or file name given (its last component is sent), or
 * NULL after the call. A vfork child (a shell running a command, say)
 * shares our segment, but its exec ends only itself: its records carry its
 * pid (`child`), and the collector expects a hello from that pid instead;
 * so do the records of a child posix_spawn started. Not in a sandbox
 * (getpid). */
static void note_program(const char *program, char *const *envp, pid_t child)
{
    if (!hg_tracking() || hg_guard != 0 || hg_sandboxed())
        return;
    const int saved = errno;
    const pid_t self = child != 0 ? child : getpid();
    if (HG_UNLIKELY(hg_thread_gen != g_hg.segment_gen))
        hg_thread_announce();
    uint32_t ref = 0;
    if (program != NULL) {
        const char *base = strrchr(program, '/');
        base = base ? base + 1 : program;
        const size_t len = strnlen(base, 255);
        static const char nul = 0;
        ref = hg_arena_put(HG_BLOB_STRING, base, (uint32_t)len, &nul, 1, (uint32_t)len + 1);
    }
    /* aux 1: the program's environment no longer hands it heapgen. */
    const uint32_t dropped = program != NULL && !hg_env_carries_us(envp);
    hg_emit(HG_K_EXEC, program != NULL, self == g_hg.pid ? 0 : (uint64_t)self, ref, dropped);
    errno = saved;
}

static void note_exec(const char *program, char *const *envp)
{
    note_program(program, envp, 0);
}

/* The C library's definitions, found at start-up (hg_exec_init): a vfork
 * child calling execve must not be the first to look (dlsym allocates, and
 * a vfork child's allocations land in its parent's segment). Still looked
 * up on first use by a call that comes before our constructor. */
enum { F_EXECVE, F_EXECV, F_EXECVP, F_EXECVPE, F_FEXECVE, F_EXECVEAT, F_SPAWN, F_SPAWNP, F_COUNT };
static const char *const names[F_COUNT] = { "execve", "execv", "execvp", "execvpe", "fexecve", "execveat",
                                            "posix_spawn", "posix_spawnp" };
static void *real[F_COUNT];

static void *next(int which)
{
    void *f = __atomic_load_n(&real[which], __ATOMIC_ACQUIRE);
    if (f == NULL) {
        hg_guard_enter();
        f = dlsym(RTLD_NEXT, names[which]);
        hg_guard_leave();
        __atomic_store_n(&real[which], f, __ATOMIC_RELEASE);
    }
    return f;
}

void hg_exec_init(void)
{
    for (int i = 0; i < F_COUNT; i++)
        (void)next(i);
    (void)hg_env_carries_us(environ);   /* finds our own path now, not in a vfork child */
}

/* The environment an exec passes on: `envp`, or, when the program it
 * starts could not load this library by the path LD_PRELOAD gives (after a
 * chroot, or in a mount namespace without it), the environment it would have
 * without heapgen: the loader would print an error on the program's stderr,
 * and the program runs untraced either way. On this stack: up to 4096
 * entries (more: passed as they are). */
#define ENV_FOR(envp, out)                                                          \
    char *const *out = (envp);                                                      \
    size_t n_env__ = 0;                                                             \
    if (!hg_sandboxed() && out != NULL && hg_env_carries_us(out) && !hg_env_shim_reachable()) \
        for (char *const *e__ = out; *e__ && n_env__ < 4096; e__++) n_env__++;      \
    char *room__[n_env__ + 1];                                                      \
    if (n_env__ > 0) out = hg_env_untraced(out, room__, n_env__ + 1);

/* `env` in `args` is the environment ENV_FOR chose. */
#define WRAP_EXEC(name, which, program, envp, params, args)                    \
    HG_EXPORT int name params                                                  \
    {                                                                          \
        int (*f) params = (int (*) params)next(which);                         \
        if (f == NULL) {                                                       \
            errno = ENOSYS;                                                    \
            return -1;                                                         \
        }                                                                      \
        ENV_FOR(envp, env)                                                     \
        note_exec(program, env);                                               \
        int r = f args;                                                        \
        note_exec(NULL, NULL);                                                 \
        return r;                                                              \
    }

WRAP_EXEC(execve, F_EXECVE, path, envp, (const char *path, char *const argv[], char *const envp[]), (path, argv, env))
WRAP_EXEC(execvpe, F_EXECVPE, file, envp, (const char *file, char *const argv[], char *const envp[]), (file, argv, env))
WRAP_EXEC(fexecve, F_FEXECVE, "", envp, (int fd, char *const argv[], char *const envp[]), (fd, argv, env))
WRAP_EXEC(execveat, F_EXECVEAT, path, envp,
          (int dirfd, const char *path, char *const argv[], char *const envp[], int flags),
          (dirfd, path, argv, env, flags))

/* execv and execvp pass on environ: when ENV_FOR changes it, through the
 * forms that take an environment, whose wrappers above note the exec. */
#define WRAP_EXEC_ENVIRON(name, which, program, params, args, with_env)        \
    HG_EXPORT int name params                                                  \
    {                                                                          \
        ENV_FOR(environ, env)                                                  \
        if (env != environ)                                                    \
            return with_env;                                                   \
        int (*f) params = (int (*) params)next(which);                         \
        if (f == NULL) {                                                       \
            errno = ENOSYS;                                                    \
            return -1;                                                         \
        }                                                                      \
        note_exec(program, environ);                                           \
        int r = f args;                                                        \
        note_exec(NULL, NULL);                                                 \
        return r;                                                              \
    }

WRAP_EXEC_ENVIRON(execv, F_EXECV, path, (const char *path, char *const argv[]), (path, argv),
                  execve(path, argv, env))
WRAP_EXEC_ENVIRON(execvp, F_EXECVP, file, (const char *file, char *const argv[]), (file, argv),
                  execvpe(file, argv, env))

/* posix_spawn and posix_spawnp exec inside the C library, out of our
 * sight: once the child is started, its pid and program are recorded as a
 * vfork child's would be. Its environment as an exec's (ENV_FOR). */
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);

#define WRAP_SPAWN(name, which)                                                          \
    HG_EXPORT int name(pid_t *pid, const char *program, const posix_spawn_file_actions_t *actions,   \
                       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])       \
    {                                                                                    \
        spawn_fn f = (spawn_fn)next(which);                                              \
        if (f == NULL)                                                                   \
            return ENOSYS;                                                               \
        ENV_FOR(envp, env)                                                               \
        pid_t started = 0;                                                               \
        int r = f(&started, program, actions, attr, argv, env);                          \
        if (r == 0 && started > 0 && program != NULL)                                    \
            note_program(program, env, started);                                         \
        if (r == 0 && pid != NULL)                                                       \
            *pid = started;                                                              \
        return r;                                                                        \
    }

WRAP_SPAWN(posix_spawn, F_SPAWN)
WRAP_SPAWN(posix_spawnp, F_SPAWNP)

/* execl, execlp, execle: count the arguments, copy them into a vector on
 * the stack, call the vector form (through its wrapper above). */
#define COLLECT_ARGS(first, ap, argv)                                          \
    size_t n__ = 1;                                                            \
    va_start(ap, first);                                                       \
    while (va_arg(ap, const char *) != NULL) n__++;                            \
    va_end(ap);                                                                \
    char *argv[n__ + 1];                                                       \
    argv[0] = (char *)(first);                                                 \
    va_start(ap, first);                                                       \
    for (size_t i__ = 1; i__ <= n__; i__++) argv[i__] = va_arg(ap, char *);

HG_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    COLLECT_ARGS(arg, ap, argv)
    va_end(ap);
    return execv(path, argv);
}

HG_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    COLLECT_ARGS(arg, ap, argv)
    va_end(ap);
    return execvp(file, argv);
}

HG_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    COLLECT_ARGS(arg, ap, argv)
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}
