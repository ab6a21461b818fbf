/*
 * transport.c — the shim's side of the rendezvous with the collector (see
 * "Transport" in heapgen_protocol.h), and the descriptors the shim keeps.
 *
 * The shim holds a descriptor only while it talks to the collector (a
 * hello and its verdict, a fork's connection for the child, a liveness
 * probe): a traced program's descriptor table is its own the rest of the
 * time. No descriptor number is trusted even then: the program (another
 * thread, a handler) may close any of them and get the number back for a
 * file or socket of its own. So each is recorded with its (st_dev, st_ino)
 * when it is created and checked again before each use, close() included.
 * One that no longer matches is forgotten, never touched.
 *
 * The collector is reached by path (a listening AF_UNIX socket in a private
 * directory), so a process whose inherited descriptors were all closed
 * (Python's subprocess, Foundation's Process) still finds it; the peer must
 * be the collector's pid, and of our user, before anything is sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "shim.h"

/* Kept descriptors go this high, out of the way of the program's own
 * numbering (it gets the numbers it would have had without heapgen). */
#define HG_FD_FLOOR 500

static struct sockaddr_un collector_addr;
static socklen_t collector_addr_len;
static pid_t collector_pid;

int hg_fd_owned(const hg_owned_fd *o)
{
    struct stat sb;
    return o->fd >= 0 && fstat(o->fd, &sb) == 0 &&
           sb.st_dev == o->dev && sb.st_ino == o->ino;
}

void hg_fd_release(hg_owned_fd *o)
{
    if (hg_fd_owned(o)) {
        int cancel = hg_cancel_off();   /* close is a cancellation point */
        close(o->fd);
        hg_cancel_restore(cancel);
    }
    o->fd = -1;
}

int hg_fd_adopt(hg_owned_fd *o, int fd)
{
    o->fd = -1;
    /* F_DUPFD_CLOEXEC fails (EINVAL) when RLIMIT_NOFILE is at or below the
     * floor: then keep the number we have. */
    int high = fcntl(fd, F_DUPFD_CLOEXEC, HG_FD_FLOOR);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return 0;
    }
    o->fd = fd;
    o->dev = sb.st_dev;
    o->ino = sb.st_ino;
    return 1;
}

/* "heapgen:<collector pid>:<socket path>": the segment's name, which shows
 * in /proc/PID/maps as "/memfd:heapgen:…". `heapgen mark PID` reads it there
 * to find the collector (the environment may be gone: PostgreSQL writes its
 * process titles over it). It tells no one more than the environment did:
 * maps and environ are readable by the same users. Plain "heapgen" when the
 * path is too long for a memfd's name (249 bytes). */
static char segment_name[250] = "heapgen";

const char *hg_transport_segment_name(void) { return segment_name; }

int hg_transport_configure(void)
{
    const char *path = getenv(HG_ENV_SOCK);
    const char *pid = getenv(HG_ENV_COLLECTOR);
    if (path == NULL || path[0] != '/' || pid == NULL)
        return 0;
    size_t len = strlen(path);
    if (len >= sizeof collector_addr.sun_path)
        return 0;
    char *end;
    long p = strtol(pid, &end, 10);
    if (*end != '\0' || p <= 0 || p > INT32_MAX)
        return 0;
    memset(&collector_addr, 0, sizeof collector_addr);
    collector_addr.sun_family = AF_UNIX;
    memcpy(collector_addr.sun_path, path, len);
    collector_addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
    collector_pid = (pid_t)p;
    /* Made here, at start-up, so that a forked child only reads it. */
    int n = snprintf(segment_name, sizeof segment_name, "heapgen:%d:%s", (int)collector_pid, path);
    if (n < 0 || (size_t)n >= sizeof segment_name)
        snprintf(segment_name, sizeof segment_name, "heapgen");
    return 1;
}

pid_t hg_transport_collector_pid(void) { return collector_pid; }

/* Is the peer of a connected socket the collector? Its pid, and our user
 * (or root: a collector started as root may trace a program that dropped
 * its privileges). Inside a PID namespace the collector is not in (unshare,
 * bwrap, a container it started) the kernel gives its pid as 0: the user,
 * and the private directory only that user can bind in, still vouch for it. */
static int peer_is_collector(int fd)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || len != sizeof cr)
        return 0;
    return (cr.pid == collector_pid || cr.pid == 0) &&
           (cr.uid == getuid() || cr.uid == geteuid() || cr.uid == 0);
}

/* 1: connected to the collector (verified), 0: nobody listens there (or
 * somebody else does), -1: we could not tell (out of descriptors). */
static int connect_verified(hg_owned_fd *out)
{
    out->fd = -1;
    if (collector_pid <= 0)
        return 0;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* Our credentials ride with the hello even when it is sent before the
     * collector accepted (and set SO_PASSCRED on) its end: it refuses a hello
     * without them, so that no one can race past its pid check. */
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
    int r;
    do {
        r = connect(fd, (const struct sockaddr *)&collector_addr, collector_addr_len);
    } while (r != 0 && errno == EINTR);
    if (r != 0) {
        int err = errno;
        close(fd);
        return err == ECONNREFUSED || err == ENOENT || err == ENOTDIR ? 0 : -1;
    }
    if (!peer_is_collector(fd)) {
        close(fd);
        return 0;
    }
    return hg_fd_adopt(out, fd) ? 1 : -1;
}

int hg_connect(hg_owned_fd *out)
{
    int cancel = hg_cancel_off();       /* connect and close are cancellation points */
    int r = connect_verified(out);
    hg_cancel_restore(cancel);
    return r == 1;
}

int hg_send_hello(const hg_owned_fd *conn, int memfd, const hg_hello *hello)
{
    if (!hg_fd_owned(conn))
        return 0;
    struct iovec iov = { (void *)hello, sizeof *hello };
    union { struct cmsghdr align; char buf[CMSG_SPACE(sizeof(int))]; } u;
    memset(&u, 0, sizeof u);
    struct msghdr msg = { 0 };
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &memfd, sizeof(int));
    ssize_t r;
    int cancel = hg_cancel_off();
    do {
        r = sendmsg(conn->fd, &msg, MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);
    hg_cancel_restore(cancel);
    return r == (ssize_t)sizeof *hello;
}

/* Called in waits, which have cancellation off (poll and connect are
 * cancellation points). */
int hg_collector_alive(void)
{
    /* Nothing to ask in a sandbox: a wait judges by the collector's
     * progress, a request by its own time limit. */
    if (hg_sandboxed())
        return 1;
    /* Before its verdict the collector holds the other end of our
     * connection; the kernel closes it when the collector exits, even while
     * it is an unreaped zombie (which kill(pid, 0) still finds). */
    if (hg_fd_owned(&g_hg.conn)) {
        struct pollfd p = { g_hg.conn.fd, POLLRDHUP, 0 };
        if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)))
            return 0;
        return 1;
    }
    /* After the verdict we hold no descriptor: ask the rendezvous. An
     * exited collector's listening socket is closed (refused) or gone. */
    g_hg.conn.fd = -1;
    hg_owned_fd probe;
    int r = connect_verified(&probe);
    if (r == 1) {
        hg_fd_release(&probe);
        return 1;
    }
    if (r == 0)
        return 0;
    return kill(collector_pid, 0) == 0 || errno != ESRCH;
}
