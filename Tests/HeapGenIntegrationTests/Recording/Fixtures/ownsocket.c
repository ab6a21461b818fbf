/* Issue 7, item 2: the program closes its inherited descriptors, puts a
 * socket of its own on the numbers heapgen's descriptors had (500..505),
 * and forks; the child says WORKER-HELLO on each of them. The parent prints
 * exactly what its peer received: heapgen must not speak on, or close, any
 * of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

void *volatile sink;

int main(void)
{
    sink = malloc(100);
    closefrom(3);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 2;
    for (int fd = 500; fd <= 505; fd++)
        if (dup2(sv[1], fd) != fd)
            return 3;
    close(sv[1]);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        for (int fd = 500; fd <= 505; fd++) {
            char line[64];
            int n = snprintf(line, sizeof line, "%d:WORKER-HELLO\n", fd);
            char *copy = malloc((size_t)n + 1);     /* the child allocates too */
            memcpy(copy, line, (size_t)n + 1);
            if (write(fd, copy, (size_t)n) != n)
                dprintf(2, "write on %d failed\n", fd);
            free(copy);
        }
        _exit(0);
    }
    for (int fd = 500; fd <= 505; fd++)
        close(fd);
    char buf[4096];
    size_t got = 0;
    for (;;) {
        ssize_t n = read(sv[0], buf + got, sizeof buf - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    int st = 0;
    waitpid(pid, &st, 0);
    printf("received %zu bytes:\n", got);
    fwrite(buf, 1, got, stdout);
    printf("child status %d\n", st);
    free(sink);
    return 0;
}
