/* Issue 7, item 2, with a dying collector: the program closes every
 * inherited descriptor, puts a socket of its own on fds 500..505 (where
 * heapgen's connection and segment were), writes its pid to argv[1], then
 * for argv[3] rounds allocates and frees 2,000 blocks and sleeps 10 ms. The
 * collector is killed meanwhile: the shim must notice without its
 * connection (never polling the program's socket) and detach. At the end it
 * writes "done <bytes its socket's peer received>" to argv[2]. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

void *volatile sink[2000];

static int write_file(const char *path, const char *text)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        return -1;
    close(fd);
    return rename(tmp, path);
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    closefrom(3);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0)
        return 3;
    for (int fd = 500; fd <= 505; fd++)
        if (dup2(sv[1], fd) != fd)
            return 4;
    char pid[32];
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (write_file(argv[1], pid) != 0)
        return 5;
    int rounds = atoi(argv[3]);
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 2000; i++)
            sink[i] = malloc(16 + (size_t)(i % 64));
        for (int i = 0; i < 2000; i++)
            free(sink[i]);
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    char buf[4096];
    long got = 0;
    for (;;) {
        ssize_t n = read(sv[0], buf, sizeof buf);
        if (n <= 0)
            break;
        got += n;
    }
    char done[64];
    snprintf(done, sizeof done, "done %ld\n", got);
    return write_file(argv[2], done) == 0 ? 0 : 6;
}
