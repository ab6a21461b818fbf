/* Process helpers: pidfd, reaping, signals, spawning, /proc reads. */
#include "CHeapGenCollector.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

int hg_pidfd_open(pid_t pid) {
    long fd = syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) return -errno;
    /* pidfds are always close-on-exec. */
    return (int)fd;
}

int hg_pidfd_exited(int pidfd) {
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    int r;
    do r = poll(&p, 1, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0) return -errno;
    return r > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) ? 1 : 0;
}

int hg_reap(pid_t pid, int block, int *signaled, int *status) {
    siginfo_t info;
    for (;;) {
        memset(&info, 0, sizeof info);
        if (waitid(P_PID, (id_t)pid, &info, WEXITED | (block ? 0 : WNOHANG)) == 0) break;
        if (errno != EINTR) return -errno;
    }
    if (info.si_pid == 0) return 0;
    if (info.si_code == CLD_EXITED) {
        *signaled = 0;
        *status = info.si_status;
    } else {
        *signaled = 1;
        *status = info.si_status;
    }
    return 1;
}

/* ---------------------------------------------------------------- signals */

static volatile sig_atomic_t forward_target;
static volatile sig_atomic_t signal_count;
static volatile sig_atomic_t last_signal;
static unsigned initially_ignored;
static sigset_t initial_mask;       /* heapgen's signal mask as started: the program's too */
static int initial_checked;

static const int handled_signals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE};

unsigned hg_initial_ignored_signals(void) {
    if (!initial_checked) {
        for (size_t i = 0; i < sizeof handled_signals / sizeof handled_signals[0]; i++) {
            struct sigaction old;
            if (sigaction(handled_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
                initially_ignored |= 1u << handled_signals[i];
        }
        pthread_sigmask(SIG_SETMASK, NULL, &initial_mask);
        initial_checked = 1;
    }
    return initially_ignored;
}

static void on_signal(int sig, siginfo_t *info, void *context) {
    (void)context;
    int saved = errno;
    /* SIGHUP is passed on, not counted: a server reloads on it and runs on,
     * recorded (a terminal's hangup reaches the program by itself). Nor is a
     * signal heapgen was started with ignored: the program ignores it too,
     * unless it set a handler of its own, and runs on. */
    if (sig != SIGHUP && !((initially_ignored >> sig) & 1)) {
        signal_count++;
        last_signal = sig;
    }
    /* SIGINT and SIGQUIT from the terminal (the kernel's, SI_KERNEL) reach the
     * program too, in heapgen's process group; sent by a process (kill(2),
     * SI_USER or below: a service manager's stop, a script's `kill -INT`)
     * they were meant for the program, which is otherwise never told. */
    const int from_process = info != NULL && info->si_code <= 0;
    pid_t t = forward_target;
    if (t > 0 && (sig == SIGTERM || sig == SIGHUP || ((sig == SIGINT || sig == SIGQUIT) && from_process)))
        kill(t, sig);
    errno = saved;
}

static const int caught_signals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};

/* Catches with on_signal those of caught_signals that were (`ignored` 1) or
 * were not (0) ignored when heapgen started. */
static void catch_signals(int ignored) {
    unsigned initially = hg_initial_ignored_signals();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sa.sa_sigaction = on_signal;
    for (size_t i = 0; i < sizeof caught_signals / sizeof caught_signals[0]; i++)
        if (((initially >> caught_signals[i]) & 1) == (unsigned)ignored) sigaction(caught_signals[i], &sa, NULL);
}

void hg_install_collector_signals(void) {
    /* A signal heapgen was started with ignored stays ignored until the
     * program is started (it inherits that, as it would without heapgen). */
    catch_signals(0);
    signal(SIGPIPE, SIG_IGN);
}

void hg_forward_ignored_signals(void) { catch_signals(1); }

void hg_set_forward_target(pid_t target) { forward_target = target; }

unsigned hg_signal_count(void) { return (unsigned)signal_count; }

int hg_last_signal(void) { return (int)last_signal; }

/* ----------------------------------------------------------------- spawn */

int hg_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[], unsigned keep_ignored) {
    posix_spawnattr_t attr;
    int rc = posix_spawnattr_init(&attr);
    if (rc) return rc;
    sigset_t def;
    sigemptyset(&def);
    for (size_t i = 0; i < sizeof handled_signals / sizeof handled_signals[0]; i++)
        if (!(keep_ignored & (1u << handled_signals[i]))) sigaddset(&def, handled_signals[i]);
    /* glibc's posix_spawn ignores its two internal signals (32 and 33, which
     * have handlers in heapgen) in the child unless they are in this set, and
     * an ignored signal stays ignored across exec; sigaddset refuses them, so
     * their bits are set directly (a sigset_t is a bit mask: bit N-1 for N). */
#if defined(__GLIBC__)
    def.__val[0] |= (1ul << 31) | (1ul << 32);
#endif
    (void)hg_initial_ignored_signals();
    posix_spawnattr_setsigdefault(&attr, &def);
    /* The mask heapgen was started with, not heapgen's own now: a program
     * started with signals blocked (a supervisor's SIGCHLD) keeps them so. */
    posix_spawnattr_setsigmask(&attr, &initial_mask);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    rc = posix_spawn(pid, path, NULL, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    return rc;
}

ssize_t hg_read_proc_file(pid_t pid, const char *name, char *buf, size_t len) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    return (ssize_t)got;
}

/* The value of "Key:" in /proc/<pid>/status, as up to `max` numbers; the count. */
static int status_numbers(pid_t pid, const char *key, long *out, int max) {
    char buf[4096];
    ssize_t n = hg_read_proc_file(pid, "status", buf, sizeof buf - 1);
    if (n <= 0) return 0;
    buf[n] = 0;
    size_t klen = strlen(key);
    for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, key, klen) != 0 || line[klen] != ':') continue;
        char *p = line + klen + 1;
        int count = 0;
        while (count < max) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) break;
            out[count++] = v;
            p = end;
        }
        return count;
    }
    return 0;
}

int hg_namespace_pids(pid_t pid, pid_t *pids, int max, pid_t *ppid) {
    long nspid[HG_MAX_PID_NAMESPACES];
    int depth = status_numbers(pid, "NSpid", nspid, HG_MAX_PID_NAMESPACES);
    long parent = 0;
    if (depth <= 0 || depth > max || nspid[0] != pid || status_numbers(pid, "PPid", &parent, 1) != 1) return 0;
    for (int i = 0; i < depth; i++) pids[i] = (pid_t)nspid[i];
    *ppid = (pid_t)parent;
    return depth;
}

/* ------------------------------------------------------------------ waits */

#include <sys/prctl.h>
#include <time.h>

int hg_poll_ns(struct pollfd *fds, unsigned long nfds, int64_t timeout_ns) {
    struct timespec ts, *tsp = NULL;
    if (timeout_ns >= 0) {
        ts.tv_sec = (time_t)(timeout_ns / 1000000000);
        ts.tv_nsec = (long)(timeout_ns % 1000000000);
        tsp = &ts;
    }
    int r = ppoll(fds, (nfds_t)nfds, tsp, NULL);
    return r < 0 ? -errno : r;
}

void hg_set_timer_slack(unsigned long ns) { (void)prctl(PR_SET_TIMERSLACK, ns, 0, 0, 0); }

int hg_proc_stat(pid_t pid, int field, char *state, unsigned long long *value) {
    char buf[1024];
    ssize_t n = hg_read_proc_file(pid, "stat", buf, sizeof buf - 1);
    if (n < 0) return -1;
    if (n == 0) return 0;
    buf[n] = 0;
    /* "pid (comm) S ..." — comm may contain anything, so parse after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ') return 0;
    p += 2;
    *state = *p;
    /* Field 3 is the state: skip a space per field up to `field`. */
    int at = 3;
    while (*p && at < field) {
        if (*p == ' ') at++;
        p++;
    }
    if (at != field || !*p) return 1;
    char *end;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p) return 1;
    *value = v;
    return 2;
}

int hg_zombie_status(pid_t pid, int *signaled, int *status) {
    char state = 0;
    unsigned long long code = 0;
    /* Field 52: exit_code, the raw wait status. */
    if (hg_proc_stat(pid, 52, &state, &code) != 2 || (state != 'Z' && state != 'X')) return 0;
    int wstatus = (int)code;
    if (WIFEXITED(wstatus)) {
        *signaled = 0;
        *status = WEXITSTATUS(wstatus);
        return 1;
    }
    if (WIFSIGNALED(wstatus)) {
        *signaled = 1;
        *status = WTERMSIG(wstatus);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ image checks */

#include <sys/sysmacros.h>

int hg_maps_contain(pid_t pid, uint64_t dev, uint64_t ino) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    /* "start-end perms offset MAJ:MIN inode path": lines may straddle reads. */
    char buf[8192];
    size_t have = 0;
    int lines = 0, found = 0;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - 1 - have);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        have += (size_t)n;
        buf[have] = 0;
        char *line = buf, *nl;
        while ((nl = memchr(line, '\n', (size_t)(buf + have - line))) != NULL) {
            *nl = 0;
            lines++;
            unsigned maj, min;
            unsigned long long inode;
            if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &inode) == 3 &&
                inode == ino && makedev(maj, min) == dev)
                found = 1;
            line = nl + 1;
        }
        size_t rest = (size_t)(buf + have - line);
        if (rest == sizeof buf - 1) rest = 0;   /* a line longer than the buffer: skip it */
        memmove(buf, line, rest);
        have = rest;
        if (found) break;
    }
    close(fd);
    if (found) return 1;
    if (lines == 0) return -1;
    /* Not there. A process that ended while we read gave a list cut short:
     * its memory went away between two reads. Its maps read empty now. */
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n;
    do n = read(fd, buf, 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    return n == 1 ? 0 : -1;
}

#include <dirent.h>

int hg_any_process_has_env(const char *entry) {
    size_t want = strlen(entry) + 1; /* with its NUL: the whole entry */
    DIR *d = opendir("/proc");
    if (!d) return -1;
    static char buf[1 << 18];
    int found = 0;
    pid_t self = getpid();
    struct dirent *de;
    while (!found && (de = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end != 0 || pid <= 0 || pid == self) continue;
        ssize_t n = hg_read_proc_file((pid_t)pid, "environ", buf, sizeof buf);
        if (n <= 0) continue;
        /* Entries start at 0 or after a NUL. */
        for (char *p = buf; p + want <= buf + n; p++) {
            p = memmem(p, (size_t)(buf + n - p), entry, want);
            if (!p) break;
            if (p == buf || p[-1] == 0) {
                found = 1;
                break;
            }
        }
    }
    closedir(d);
    return found;
}
