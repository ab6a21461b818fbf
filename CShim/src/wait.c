/*
 * wait.c — children's exit statuses. A parent that reaps a child at once
 * leaves the collector nothing to read in /proc, so the wait family is
 * interposed: after the real call reaped (or, with WNOWAIT, saw) a child
 * that exited or was killed, an HG_K_CHILD_EXIT record (addr = child pid,
 * size = its raw wait status) goes into the parent's ring, and the
 * collector ends the child's trace with it.
 *
 * The real functions are found once at start-up (dlsym is not
 * async-signal-safe, and a SIGCHLD handler is where waitpid is often
 * called). Nothing here allocates; the caller's status, errno and return
 * value are passed through unchanged.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "shim.h"

typedef pid_t (*wait4_fn)(pid_t, int *, int, struct rusage *);
typedef pid_t (*waitpid_fn)(pid_t, int *, int);
typedef pid_t (*wait_fn)(int *);
typedef pid_t (*wait3_fn)(int *, int, struct rusage *);
typedef int   (*waitid_fn)(idtype_t, id_t, siginfo_t *, int);

static wait4_fn   real_wait4;
static waitpid_fn real_waitpid;
static wait_fn    real_wait;
static wait3_fn   real_wait3;
static waitid_fn  real_waitid;

/* Before hg_wait_init (a constructor that runs before ours): the system
 * calls themselves. */
static pid_t sys_wait4(pid_t pid, int *st, int options, struct rusage *ru)
{
    return (pid_t)syscall(SYS_wait4, pid, st, options, ru);
}

void hg_wait_init(void)
{
    hg_guard_enter();
    real_wait4 = (wait4_fn)dlsym(RTLD_NEXT, "wait4");
    real_waitpid = (waitpid_fn)dlsym(RTLD_NEXT, "waitpid");
    real_wait = (wait_fn)dlsym(RTLD_NEXT, "wait");
    real_wait3 = (wait3_fn)dlsym(RTLD_NEXT, "wait3");
    real_waitid = (waitid_fn)dlsym(RTLD_NEXT, "waitid");
    hg_guard_leave();
}

/* One record for a child that ended with raw status `status`. */
static void child_ended(pid_t pid, int status)
{
    if (pid <= 0 || !(WIFEXITED(status) || WIFSIGNALED(status)))
        return;
    int saved = errno;
    if (hg_tracking()) {
        if (HG_UNLIKELY(hg_thread_gen != g_hg.segment_gen))
            hg_thread_announce();
        hg_emit(HG_K_CHILD_EXIT, (uint64_t)pid, (uint64_t)(uint32_t)status, 0, 0);
    }
    errno = saved;
}

HG_EXPORT pid_t wait4(pid_t pid, int *wstatus, int options, struct rusage *ru)
{
    int st = 0;
    pid_t r = real_wait4 ? real_wait4(pid, &st, options, ru) : sys_wait4(pid, &st, options, ru);
    if (r > 0) {
        if (wstatus)
            *wstatus = st;
        child_ended(r, st);
    }
    return r;
}

HG_EXPORT pid_t waitpid(pid_t pid, int *wstatus, int options)
{
    int st = 0;
    pid_t r = real_waitpid ? real_waitpid(pid, &st, options) : sys_wait4(pid, &st, options, NULL);
    if (r > 0) {
        if (wstatus)
            *wstatus = st;
        child_ended(r, st);
    }
    return r;
}

HG_EXPORT pid_t wait(int *wstatus)
{
    int st = 0;
    pid_t r = real_wait ? real_wait(&st) : sys_wait4(-1, &st, 0, NULL);
    if (r > 0) {
        if (wstatus)
            *wstatus = st;
        child_ended(r, st);
    }
    return r;
}

HG_EXPORT pid_t wait3(int *wstatus, int options, struct rusage *ru)
{
    int st = 0;
    pid_t r = real_wait3 ? real_wait3(&st, options, ru) : sys_wait4(-1, &st, options, ru);
    if (r > 0) {
        if (wstatus)
            *wstatus = st;
        child_ended(r, st);
    }
    return r;
}

HG_EXPORT int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options)
{
    int r = real_waitid ? real_waitid(idtype, id, info, options)
                        : (int)syscall(SYS_waitid, idtype, id, info, options, NULL);
    if (r == 0 && info != NULL && info->si_pid > 0) {
        int st;
        switch (info->si_code) {
        case CLD_EXITED: st = (info->si_status & 0xff) << 8; break;
        case CLD_KILLED: st = info->si_status & 0x7f; break;
        case CLD_DUMPED: st = (info->si_status & 0x7f) | 0x80; break;
        default: return r;
        }
        child_ended(info->si_pid, st);
    }
    return r;
}
