/*
 * forgedhello.c: a traced program that speaks heapgen's protocol itself and
 * says hello as other processes: as pid 1, and as its parent (heapgen). The
 * collector must refuse both (the kernel's SCM_CREDENTIALS name the sender)
 * and close the connection; the program goes on traced as itself.
 * Keeps 5 × 32 B. Prints "refused N of 2".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "heapgen_protocol.h"

static void *volatile kept[5];

/* 1 when the collector closed the connection without accepting the segment. */
static int refused(const char *path, int32_t claimed) {
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strncpy(a.sun_path, path, sizeof a.sun_path - 1);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) return 0;
    int mfd = memfd_create("forged", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (mfd < 0 || ftruncate(mfd, 1 << 20) != 0) return 0;
    hg_hello h = {HG_PROTOCOL_MAGIC, HG_PROTOCOL_VERSION, HG_ORIGIN_INIT, claimed, getppid(), 1 << 20};
    struct iovec iov = {&h, sizeof h};
    union { struct cmsghdr align; char buf[CMSG_SPACE(sizeof(int))]; } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &mfd, sizeof mfd);
    if (sendmsg(s, &m, MSG_NOSIGNAL) != (ssize_t)sizeof h) return 0;
    char byte;
    ssize_t n = recv(s, &byte, 1, 0);   /* 0: the collector closed it */
    close(s);
    close(mfd);
    return n == 0;
}

int main(void) {
    const char *path = getenv("HEAPGEN_SOCK");
    if (path == NULL) return 2;
    for (int i = 0; i < 5; i++) kept[i] = malloc(32);
    int n = refused(path, 1) + refused(path, (int32_t)getppid());
    printf("refused %d of 2\n", n);
    return 0;
}
