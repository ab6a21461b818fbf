/*
 * sandbox.c — programs that lock themselves into a seccomp filter (sshd's
 * privilege-separated child, a worker that allows read, write, mmap, futex
 * and exit, and kills on anything else).
 *
 * Natively such a program runs; under heapgen it must too. The shim's hot
 * path makes no system calls, but its slow paths do: sleeping while the
 * ring is full, checking that the collector is alive (poll, connect, kill),
 * connecting for a forked child, reading the executable at exit, checking a
 * stack page with process_vm_readv. Any of them, outside the filter's list,
 * kills the program with SIGSYS.
 *
 * So the shim notes when the program installs a filter (prctl
 * PR_SET_SECCOMP, libseccomp's seccomp_load) and from then on makes no
 * system call of its own on those paths: its waits spin, the collector's
 * liveness is judged by its progress instead of asked, forked children run
 * untraced, and stacks are not checked page by page (see unwind.c). What
 * is left is what the program's own threads need anyway: mmap for a new
 * thread's buffers, and gettid to name it. The segment's header says so,
 * and the collector tells the user.
 *
 * Filters installed another way (a raw syscall instruction, or before the
 * program was started) are not seen.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "shim.h"
#include "unwind.h"

int g_hg_sandboxed;

int hg_enter_sandbox(void)
{
    if (__atomic_exchange_n(&g_hg_sandboxed, 1, __ATOMIC_ACQ_REL))
        return 0;
    hg_unwind_set_syscalls(0);
    if (g_hg_phase == 2 && g_hg.hdr != NULL)
        __atomic_store_n(&g_hg.hdr->sandboxed, 1, __ATOMIC_RELEASE);
    return 1;
}

/* The kernel refused the filter that hg_enter_sandbox was called for (it
 * returned `entered`): none is in, and the shim makes its system calls
 * again. Chromium probes with a NULL filter (EFAULT) long before it installs
 * one; taken for a sandbox, that probe left its children untraced and told
 * the user the program had locked itself in. errno is the call's. */
static void sandbox_refused(int entered)
{
    if (!entered)
        return;
    const int saved = errno;
    if (g_hg_phase == 2 && g_hg.hdr != NULL)
        __atomic_store_n(&g_hg.hdr->sandboxed, 0, __ATOMIC_RELEASE);
    hg_unwind_set_syscalls(1);
    __atomic_store_n(&g_hg_sandboxed, 0, __ATOMIC_RELEASE);
    errno = saved;
}

/* A sleep of `ns`, or in a sandbox a spin as long. Not even a futex wait
 * there: the collector's scan stops our threads with ptrace, and the kernel
 * resumes a timed wait it interrupted through restart_syscall, which a
 * filter sees (and a filter written for a program that never sleeps that
 * way need not allow). A spin in a wait is cheap where the collector has a
 * core of its own, and only slow where it has not. */
void hg_pause(uint64_t ns)
{
    if (hg_sandboxed()) {
        const uint64_t until = hg_clock_ns() + ns;
        while (hg_clock_ns() < until)
            __builtin_ia32_pause();
        return;
    }
    struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
    nanosleep(&ts, NULL);
}

void hg_yield(void)
{
    if (hg_sandboxed())
        hg_pause(1000);
    else
        sched_yield();
}

/* glibc's prctl is a plain system call with up to four arguments after the
 * option; it is variadic, so its arguments are taken as unsigned longs. The
 * mark comes first: once the filter is in, it is too late to ask anything. */
HG_EXPORT int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    const int entered = option == PR_SET_SECCOMP ? hg_enter_sandbox() : 0;
    const long rc = syscall(SYS_prctl, option, a2, a3, a4, a5);
    if (rc < 0)
        sandbox_refused(entered);
    return (int)rc;
}

/* libseccomp loads its filters with the seccomp system call itself (not
 * through prctl) where the kernel has one: catch its entry point. */
HG_EXPORT int seccomp_load(void *ctx)
{
    static int (*real)(void *);
    if (real == NULL) {
        hg_guard_enter();
        real = (int (*)(void *))dlsym(RTLD_NEXT, "seccomp_load");
        hg_guard_leave();
    }
    if (real == NULL)
        return -ENOSYS;
    const int entered = hg_enter_sandbox();
    const int rc = real(ctx);
    if (rc != 0)
        sandbox_refused(entered);
    return rc;
}
