/* The socketpair and the hello message (heapgen_protocol.h, "hg_hello"). */
#include "CHeapGenSupport.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

int hg_make_socketpair(int *collector_fd, int *shim_fd, int min_fd) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -errno;
    int one = 1;
    /* Lets the kernel tell us each sender's pid with every message. */
    (void)setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
    /* F_DUPFD (not _CLOEXEC): the program inherits this one. */
    int high = fcntl(sv[1], F_DUPFD, min_fd);
    if (high < 0 && errno == EINVAL) {
        /* min_fd is at or above RLIMIT_NOFILE: take a high one below it. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 16)
            high = fcntl(sv[1], F_DUPFD, (int)(rl.rlim_cur > 64 ? rl.rlim_cur - 32 : rl.rlim_cur / 2));
    }
    int err = errno;
    close(sv[1]);
    if (high < 0) {
        close(sv[0]);
        return -err;
    }
    *collector_fd = sv[0];
    *shim_fd = high;
    return 0;
}

static int reject(char *errbuf, size_t errlen, const char *fmt, long a) {
    if (errbuf && errlen) snprintf(errbuf, errlen, fmt, a);
    return HG_RECV_MALFORMED;
}

int hg_recv_hello(int sock, int timeout_ms, hg_hello *hello, int *fd, int32_t *sender_pid,
                  char *errbuf, size_t errlen) {
    *fd = -1;
    *sender_pid = 0;
    struct pollfd pfd = {.fd = sock, .events = POLLIN};
    int pr = poll(&pfd, 1, timeout_ms);
    if (pr == 0 || (pr < 0 && errno == EINTR)) return HG_RECV_AGAIN;
    if (pr < 0) {
        if (errbuf && errlen) snprintf(errbuf, errlen, "poll: %s", strerror(errno));
        return HG_RECV_ERROR;
    }

    /* One byte more than a hello, to notice longer messages; room for many
     * fds so that every fd of a bogus message is received and closed. */
    unsigned char data[sizeof(hg_hello) + 1];
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
        }
    }

    int status = HG_RECV_OK;
    if (n == 0 && nfds == 0 && (pfd.revents & POLLHUP)) return HG_RECV_EOF;
    if (msg.msg_flags & MSG_CTRUNC) status = reject(errbuf, errlen, "hello with too much ancillary data (%ld fds kept)", nfds);
    else if (msg.msg_flags & MSG_TRUNC || n != (ssize_t)sizeof(hg_hello))
        status = reject(errbuf, errlen, "hello of wrong size (%ld bytes)", (long)n);
    else if (nfds != 1) status = reject(errbuf, errlen, "hello with %ld fds instead of one", nfds);
    else {
        memcpy(hello, data, sizeof *hello);
        if (hello->magic != HG_PROTOCOL_MAGIC) status = reject(errbuf, errlen, "hello with bad magic%.0ld", 0);
        else if (hello->version != HG_PROTOCOL_VERSION)
            status = reject(errbuf, errlen, "hello with unsupported protocol version %ld", (long)hello->version);
        else if (*sender_pid != 0 && hello->pid != *sender_pid)
            status = reject(errbuf, errlen, "hello claims a pid other than its sender's (%ld)", (long)*sender_pid);
    }
    if (status != HG_RECV_OK) {
        for (int i = 0; i < nfds; i++) close(fds[i]);
        return status;
    }
    *fd = fds[0];
    return HG_RECV_OK;
}
