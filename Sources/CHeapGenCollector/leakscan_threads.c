/* Stops every thread of a traced process for the leak scan (hg_leak_scan)
 * and reads its registers and stack pointer, as LeakSanitizer's
 * StopTheWorld does: a pointer held only in a register is a reference, and
 * the stack below a thread's stack pointer is dead frames, not a root.
 *
 * PTRACE_SEIZE + PTRACE_INTERRUPT (not PTRACE_ATTACH: no SIGSTOP is sent,
 * so the program sees no signal and its job-control state is untouched).
 * Signals that arrive while a thread is stopped are re-injected at detach.
 * See hg_threads_stop in CHeapGenCollector.h. */
#include "CHeapGenCollector.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#ifndef PTRACE_EVENT_STOP
#define PTRACE_EVENT_STOP 128
#endif

static int seized(const hg_thread_state *threads, int n, pid_t tid)
{
    for (int i = 0; i < n; i++)
        if (threads[i].tid == tid) return 1;
    return 0;
}

#if defined(__x86_64__)
/* Copies the vector registers a pointer may sit in while code moves it
 * (memcpy and vectorized loops move 16 and 32 bytes at a time): xmm0-15, and
 * ymm0-15's upper halves when the thread's AVX state is in use. From the
 * XSAVE area in its standard layout (xmm at byte 160, XSTATE_BV at 512, the
 * AVX upper halves at 576); a component whose XSTATE_BV bit is clear is in
 * its initial state, all zeros. Without XSAVE, from the FXSAVE area. AVX-512's
 * registers are not read. */
static void read_vector_registers(hg_thread_state *t)
{
    uint64_t area[512];
    struct iovec iov = { area, sizeof area };
    memset(t->vregs, 0, sizeof t->vregs);
    if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_X86_XSTATE, &iov) == 0 && iov.iov_len >= 576) {
        const uint64_t bv = area[512 / 8];
        if (bv & 2) memcpy(t->vregs, (const char *)area + 160, 256);
        if ((bv & 4) && iov.iov_len >= 576 + 256) memcpy(t->vregs + 32, (const char *)area + 576, 256);
        return;
    }
    struct user_fpregs_struct fp;
    if (ptrace(PTRACE_GETFPREGS, t->tid, NULL, &fp) == 0)
        memcpy(t->vregs, fp.xmm_space, 256);
}

/* Copies the general-purpose registers of a stopped thread. */
static int read_registers(hg_thread_state *t)
{
    struct user_regs_struct r;
    if (ptrace(PTRACE_GETREGS, t->tid, NULL, &r) != 0) return -errno;
    const unsigned long long words[HG_SCAN_REG_WORDS] = {
        r.rax, r.rbx, r.rcx, r.rdx, r.rsi, r.rdi, r.rbp, r.rsp,
        r.r8, r.r9, r.r10, r.r11, r.r12, r.r13, r.r14, r.r15,
    };
    for (int i = 0; i < HG_SCAN_REG_WORDS; i++) t->regs[i] = (uint64_t)words[i];
    t->sp = (uint64_t)r.rsp;
    t->pc = (uint64_t)r.rip;
    t->tp = (uint64_t)r.fs_base;
    read_vector_registers(t);
    return 0;
}
#endif

int hg_task_ended(pid_t tid, uint64_t *start_stack)
{
    char state = 0;
    unsigned long long start = 0;
    /* Field 28: startstack. */
    const int got = hg_proc_stat(tid, 28, &state, &start);
    if (start_stack) *start_stack = got == 2 ? start : 0;
    if (got < 0) return errno == ENOENT || errno == ESRCH;
    return state == 'Z' || state == 'X';
}

/* Seizes and interrupts `tid`, waits for its stop. 1 stopped, 0 gone, -errno. */
static int stop_one(hg_thread_state *t, pid_t tid)
{
#if defined(__x86_64__)
    memset(t, 0, sizeof *t);
    t->tid = tid;
    if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
        const int e = errno;
        /* A leader that called pthread_exit() cannot be seized: it is gone. */
        if (e == EPERM && hg_task_ended(tid, NULL)) return 0;
        return e == ESRCH ? 0 : -e;
    }
    if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0) {
        int e = errno;
        (void)ptrace(PTRACE_DETACH, tid, NULL, NULL);
        return e == ESRCH ? 0 : -e;
    }
    for (;;) {
        int status = 0;
        pid_t got = waitpid(tid, &status, __WALL);
        if (got < 0) {
            if (errno == EINTR) continue;
            return errno == ECHILD ? 0 : -errno;
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) return 0;
        if (!WIFSTOPPED(status)) continue;
        if ((status >> 16) != PTRACE_EVENT_STOP) {
            /* A signal-delivery stop came first: keep the signal for the
             * detach; our interrupt's stop follows once it resumes, but
             * stopped is all we need. */
            t->pending_signal = WSTOPSIG(status);
        }
        break;
    }
    int rc = read_registers(t);
    if (rc != 0) {
        (void)ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)t->pending_signal);
        return rc == -ESRCH ? 0 : rc;
    }
    return 1;
#else
    (void)t;
    (void)tid;
    return -ENOSYS;
#endif
}

int hg_threads_stop(pid_t pid, hg_thread_state *threads, int capacity)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    int n = 0;
    /* Threads may start while we stop others: read the list until a pass adds none. */
    for (int pass = 0; pass < 64; pass++) {
        DIR *dir = opendir(path);
        if (dir == NULL) {
            int e = errno;
            hg_threads_resume(threads, n);
            return -e;
        }
        int added = 0;
        struct dirent *d;
        while ((d = readdir(dir)) != NULL) {
            pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);
            if (tid <= 0 || seized(threads, n, tid)) continue;
            if (n == capacity) {
                closedir(dir);
                hg_threads_resume(threads, n);
                return -E2BIG;
            }
            int rc = stop_one(&threads[n], tid);
            if (rc < 0) {
                closedir(dir);
                hg_threads_resume(threads, n);
                return rc;
            }
            if (rc == 1) {
                n++;
                added++;
            }
        }
        closedir(dir);
        if (added == 0) return n;
    }
    return n;
}

/* A thread killed while we held it stopped (SIGKILL ends even a ptrace-stop:
 * a pool terminating its workers mid-scan) cannot be detached (ESRCH). Its
 * exit is reported to us, its tracer, first, and its parent's wait blocks
 * until we have collected it: do, for a second at most (it is dying). */
static void collect_killed(pid_t tid)
{
    for (int i = 0; i < 1000; i++) {
        int status = 0;
        pid_t got = waitpid(tid, &status, __WALL | WNOHANG);
        if (got == tid && WIFSTOPPED(status)) {
            /* Not killed after all: stopped again, and now detachable. */
            (void)ptrace(PTRACE_DETACH, tid, NULL, NULL);
            return;
        }
        if (got == tid || (got < 0 && errno != EINTR)) return;
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

void hg_threads_resume(const hg_thread_state *threads, int n)
{
    for (int i = 0; i < n; i++) {
        if (ptrace(PTRACE_DETACH, threads[i].tid, NULL, (void *)(long)threads[i].pending_signal) != 0 && errno == ESRCH)
            collect_killed(threads[i].tid);
    }
}
