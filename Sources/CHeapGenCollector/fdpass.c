/* The collector's rendezvous socket and the hello message (heapgen_protocol.h, "Transport", "hg_hello"). */
#include "CHeapGenCollector.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* A directory of ours, mode 0700, to hold the socket? */
static int usable_dir(const char *dir) {
    struct stat st;
    return dir && dir[0] == '/' && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && access(dir, W_OK | X_OK) == 0;
}

/* The path of the one entry of a collector's directory, its socket ("s",
 * or a random name as root). 0 when there is none or more than one. */
static int socket_in(const char *dir, char *out, size_t len) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        if (found++ == 0) snprintf(out, len, "%s/%s", dir, de->d_name);
    }
    closedir(d);
    return found == 1;
}

/* Removes the directories of collectors that were killed (SIGKILL leaves
 * no chance to clean up) in `base`: ours, named heapgen-XXXXXX, whose
 * socket nobody listens on any more (refused). A live collector's socket
 * accepts, or says EAGAIN: left alone. */
static void remove_stale(const char *base) {
    DIR *d = opendir(base);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, "heapgen-", 8) != 0 || strlen(de->d_name) != 14) continue;
        char dir[160], sock[208];
        snprintf(dir, sizeof dir, "%s/%s", base, de->d_name);
        struct stat st;
        if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            ((st.st_mode & 0777) != 0700 && (st.st_mode & 0777) != 0711))
            continue;
        if (!socket_in(dir, sock, sizeof sock)) continue;
        /* Bound more than a minute ago: not one between its bind and listen. */
        if (lstat(sock, &st) != 0 || !S_ISSOCK(st.st_mode) || time(NULL) - st.st_ctime < 60 ||
            strlen(sock) >= sizeof(((struct sockaddr_un *)0)->sun_path))
            continue;
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) break;
        struct sockaddr_un addr;
        memset(&addr, 0, sizeof addr);
        addr.sun_family = AF_UNIX;
        memcpy(addr.sun_path, sock, strlen(sock));
        int r = connect(fd, (struct sockaddr *)&addr, sizeof addr);
        int err = errno;
        close(fd);
        if (r != 0 && err == ECONNREFUSED && unlink(sock) == 0) (void)rmdir(dir);
    }
    closedir(d);
}

/* As root, the program may drop its privileges and then fork or exec (servers
 * start their workers so): processes of any user must reach the socket. The
 * directory is then 0711 and the socket 0777, and the socket's name is 128
 * random bits that only processes given HEAPGEN_SOCK know (nobody else can
 * list the directory); hg_rendezvous_accept takes any user's connection. */
static int shared_rendezvous(void) { return geteuid() == 0; }

/* May a process of another user reach entries under `dir` (search permission
 * for others on it and on every directory above it)? Root's $XDG_RUNTIME_DIR
 * (/run/user/0, 0700) is not such a place. */
static int others_can_enter(const char *dir) {
    char path[4096];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof path) return 0;
    memcpy(path, dir, len + 1);
    for (;;) {
        struct stat st;
        if (stat(path[0] ? path : "/", &st) != 0 || !(st.st_mode & S_IXOTH)) return 0;
        char *slash = strrchr(path, '/');
        if (slash == NULL || path[0] == 0) return 1;
        *slash = 0;
    }
}

int hg_rendezvous_open(hg_rendezvous *rv) {
    memset(rv, 0, sizeof *rv);
    rv->fd = -1;
    char name[33] = "s";
    if (shared_rendezvous()) {
        unsigned char secret[16];
        if (getrandom(secret, sizeof secret, 0) != (ssize_t)sizeof secret) return -EIO;
        for (int i = 0; i < 16; i++) snprintf(name + 2 * i, 3, "%02x", secret[i]);
    }
    size_t name_len = strlen(name);
    const char *candidates[3] = {getenv("XDG_RUNTIME_DIR"), getenv("TMPDIR"), "/tmp"};
    int made = 0;
    int err = ENOENT;
    for (int i = 0; i < 3 && !made; i++) {
        const char *base = candidates[i];
        if (!usable_dir(base)) continue;
        if (shared_rendezvous() && !others_can_enter(base)) continue;
        if (i == 0) {
            /* $XDG_RUNTIME_DIR must be ours (the spec: owned by the user, 0700). */
            struct stat st;
            if (stat(base, &st) != 0 || st.st_uid != geteuid()) continue;
        }
        /* dir + "/heapgen-XXXXXX" + "/" + name must fit in sun_path. */
        if (strlen(base) + 15 + 1 + name_len >= sizeof(((struct sockaddr_un *)0)->sun_path)) continue;
        remove_stale(base);
        snprintf(rv->dir, sizeof rv->dir, "%s/heapgen-XXXXXX", base);
        if (mkdtemp(rv->dir) == NULL) {
            err = errno;
            continue;
        }
        made = 1;
    }
    if (!made) return -err;
    /* mkdtemp makes it 0700 already; say so even under an odd umask. */
    (void)chmod(rv->dir, shared_rendezvous() ? 0711 : 0700);
    size_t dlen = strlen(rv->dir);
    if (dlen + 1 + name_len + 1 > sizeof rv->path) { /* cannot happen: checked above */
        rmdir(rv->dir);
        return -ENAMETOOLONG;
    }
    memcpy(rv->path, rv->dir, dlen);
    rv->path[dlen] = '/';
    memcpy(rv->path + dlen + 1, name, name_len + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        err = errno;
        rmdir(rv->dir);
        return -err;
    }
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, rv->path, strlen(rv->path));
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        (shared_rendezvous() && chmod(rv->path, 0777) != 0) || listen(fd, 128) != 0) {
        err = errno;
        close(fd);
        unlink(rv->path);
        rmdir(rv->dir);
        return -err;
    }
    rv->fd = fd;
    return 0;
}

void hg_rendezvous_close(hg_rendezvous *rv) {
    if (rv->fd >= 0) close(rv->fd);
    rv->fd = -1;
    if (rv->path[0]) unlink(rv->path);
    if (rv->dir[0]) rmdir(rv->dir);
    rv->path[0] = rv->dir[0] = 0;
}

int hg_rendezvous_accept(int listen_fd, int *conn, int32_t *peer_pid) {
    *conn = -1;
    *peer_pid = 0;
    int fd;
    do fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED) ? 0 : -errno;
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || len != sizeof cr) {
        close(fd);
        return -EPERM;
    }
    *peer_pid = cr.pid;
    /* Our user only; as root, anybody who knew the socket's secret name
     * (a program that dropped its privileges after we started it). */
    if (cr.uid != geteuid() && geteuid() != 0) {
        close(fd);
        return -EPERM;
    }
    int one = 1;
    /* Lets the kernel tell us the sender's pid with the hello. */
    (void)setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
    *conn = fd;
    return 1;
}

static int reject(char *errbuf, size_t errlen, const char *fmt, long a) {
    if (errbuf && errlen) snprintf(errbuf, errlen, fmt, a);
    return HG_RECV_MALFORMED;
}

/* A sender in a PID namespace below ours (unshare, bwrap, a container) names
 * itself by its pid there: the kernel's own list of its pids must end in it. */
static int in_namespace_as(pid_t sender, pid_t claimed) {
    pid_t pids[HG_MAX_PID_NAMESPACES], ppid = 0;
    int n = hg_namespace_pids(sender, pids, HG_MAX_PID_NAMESPACES, &ppid);
    return n > 1 && pids[n - 1] == claimed;
}

int hg_recv_hello(int sock, int timeout_ms, hg_hello *hello, int *fd, int32_t *sender_pid,
                  char *errbuf, size_t errlen) {
    hg_mark_request mark;
    uint32_t uid;
    int status = hg_recv_message(sock, timeout_ms, hello, fd, sender_pid, &mark, &uid, errbuf, errlen);
    return status == HG_RECV_MARK ? reject(errbuf, errlen, "a mark request where a hello was due%.0ld", 0) : status;
}

int hg_recv_message(int sock, int timeout_ms, hg_hello *hello, int *fd, int32_t *sender_pid,
                    hg_mark_request *mark, uint32_t *sender_uid, char *errbuf, size_t errlen) {
    *fd = -1;
    *sender_pid = 0;
    *sender_uid = UINT32_MAX;
    struct pollfd pfd = {.fd = sock, .events = POLLIN};
    int pr = poll(&pfd, 1, timeout_ms);
    if (pr == 0 || (pr < 0 && errno == EINTR)) return HG_RECV_AGAIN;
    if (pr < 0) {
        if (errbuf && errlen) snprintf(errbuf, errlen, "poll: %s", strerror(errno));
        return HG_RECV_ERROR;
    }

    /* One byte more than the longer message, to notice longer ones; room for
     * many fds so that every fd of a bogus message is received and closed. */
    unsigned char data[(sizeof(hg_hello) > sizeof(hg_mark_request) ? sizeof(hg_hello) : sizeof(hg_mark_request)) + 1];
    union {
        struct cmsghdr align;
        unsigned char buf[CMSG_SPACE(sizeof(int) * 64) + CMSG_SPACE(sizeof(struct ucred))];
    } control;
    struct iovec iov = {.iov_base = data, .iov_len = sizeof data};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;

    ssize_t n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return HG_RECV_AGAIN;
        if (errbuf && errlen) snprintf(errbuf, errlen, "recvmsg: %s", strerror(errno));
        return HG_RECV_ERROR;
    }

    int fds[64];
    int nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k && nfds < 64; i++) memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
                   c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
            struct ucred cr;
            memcpy(&cr, CMSG_DATA(c), sizeof cr);
            *sender_pid = cr.pid;
            *sender_uid = cr.uid;
        }
    }

    int status = HG_RECV_OK;
    if (n == 0 && nfds == 0 && (pfd.revents & POLLHUP)) return HG_RECV_EOF;
    uint64_t magic = 0;
    if ((size_t)n >= sizeof magic) memcpy(&magic, data, sizeof magic);
    if (msg.msg_flags & MSG_CTRUNC) status = reject(errbuf, errlen, "hello with too much ancillary data (%ld fds kept)", nfds);
    else if (magic == HG_MARK_MAGIC) {
        if (msg.msg_flags & MSG_TRUNC || n != (ssize_t)sizeof(hg_mark_request))
            status = reject(errbuf, errlen, "mark request of wrong size (%ld bytes)", (long)n);
        else if (nfds != 0) status = reject(errbuf, errlen, "mark request with %ld fds", nfds);
        else {
            memcpy(mark, data, sizeof *mark);
            mark->label[HG_MARK_LABEL - 1] = 0;
            if (mark->version != HG_PROTOCOL_VERSION)
                status = reject(errbuf, errlen, "mark request of unsupported protocol version %ld", (long)mark->version);
            else if (*sender_uid == UINT32_MAX)
                status = reject(errbuf, errlen, "mark request without its sender's credentials%.0ld", 0);
            else
                return HG_RECV_MARK;
        }
    }
    else if (msg.msg_flags & MSG_TRUNC || n != (ssize_t)sizeof(hg_hello))
        status = reject(errbuf, errlen, "hello of wrong size (%ld bytes)", (long)n);
    else if (nfds != 1) status = reject(errbuf, errlen, "hello with %ld fds instead of one", nfds);
    else {
        memcpy(hello, data, sizeof *hello);
        if (hello->magic != HG_PROTOCOL_MAGIC) status = reject(errbuf, errlen, "hello with bad magic%.0ld", 0);
        else if (hello->version != HG_PROTOCOL_VERSION)
            status = reject(errbuf, errlen, "hello with unsupported protocol version %ld", (long)hello->version);
        else if (*sender_pid == 0)
            status = reject(errbuf, errlen, "hello without its sender's credentials%.0ld", 0);
        else if (hello->pid != *sender_pid && !in_namespace_as(*sender_pid, hello->pid))
            status = reject(errbuf, errlen, "hello claims a pid other than its sender's (%ld)", (long)*sender_pid);
    }
    if (status != HG_RECV_OK) {
        for (int i = 0; i < nfds; i++) close(fds[i]);
        return status;
    }
    *fd = fds[0];
    return HG_RECV_OK;
}

/* ------------------------------------------------------------- mark requests */

int hg_answer_mark(int sock, int32_t answer) {
    ssize_t r;
    do r = send(sock, &answer, sizeof answer, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    return r == (ssize_t)sizeof answer ? 0 : -errno;
}

int hg_ask_mark(const char *path, int32_t collector, int32_t pid, const char *label, int timeout_ms) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof addr.sun_path) return -ENAMETOOLONG;
    memcpy(addr.sun_path, path, len);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    /* The collector reads our uid from the credentials the kernel attaches to
     * the request: SO_PASSCRED on the sending side is enough (as for a hello),
     * even before the collector has accepted our connection. */
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
    int r;
    do r = connect(fd, (const struct sockaddr *)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1));
    while (r != 0 && errno == EINTR);
    if (r != 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    struct ucred cr;
    socklen_t crlen = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0 || crlen != sizeof cr ||
        (cr.pid != collector && cr.pid != 0) || (cr.uid != geteuid() && cr.uid != 0)) {
        close(fd);
        return -EACCES;
    }
    hg_mark_request req;
    memset(&req, 0, sizeof req);
    req.magic = HG_MARK_MAGIC;
    req.version = HG_PROTOCOL_VERSION;
    req.pid = pid;
    snprintf(req.label, sizeof req.label, "%s", label);
    ssize_t n;
    do n = send(fd, &req, sizeof req, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof req) {
        int err = n < 0 ? errno : EIO;
        close(fd);
        return -err;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int pr;
    do pr = poll(&p, 1, timeout_ms);
    while (pr < 0 && errno == EINTR);
    int32_t answer = -ETIMEDOUT;
    if (pr == 1) {
        ssize_t got = recv(fd, &answer, sizeof answer, 0);
        if (got != (ssize_t)sizeof answer) answer = -ECONNRESET; /* closed unanswered */
    }
    close(fd);
    return answer;
}
