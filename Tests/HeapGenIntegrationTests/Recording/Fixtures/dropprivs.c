/*
 * dropprivs.c: a server's start as root: it keeps 10 × 100 B, drops to
 * nobody (setgid, setuid), then starts its workers: a forked one that keeps
 * 20 × 200 B and exits 5, and one that execs this program again ("worker":
 * 7 × 70 B, exit 0). The workers of a privileged start can only reach
 * heapgen's socket if it lets processes of another user in.
 * Prints one line; exit 2 when the drop failed (not root).
 *
 * "rendezvous": prints the mode of HEAPGEN_SOCK's directory, the socket's
 * name, and, as nobody, what listing the directory and connecting to the
 * socket give.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile kept[32];

static void keep(int n, size_t size) {
    for (int i = 0; i < n; i++) kept[i] = malloc(size);
}

static int reap(pid_t p) {
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

static int rendezvous(void) {
    const char *path = getenv("HEAPGEN_SOCK");
    if (path == NULL) return 4;
    char dir[108];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == NULL) return 4;
    *slash = 0;
    struct stat st;
    if (stat(dir, &st) != 0) return 4;
    printf("mode %o name %s", (unsigned)(st.st_mode & 0777), slash + 1);
    if (setgid(65534) != 0 || setuid(65534) != 0) {
        printf("\n");
        return 0;
    }
    DIR *d = opendir(dir);
    printf(" list-as-nobody: %s", d ? "listed" : strerror(errno));
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
    printf(" connect-as-nobody: %s\n", connect(fd, (struct sockaddr *)&a, sizeof a) == 0 ? "ok" : strerror(errno));
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "rendezvous") == 0) return rendezvous();
    if (argc > 1 && strcmp(argv[1], "worker") == 0) {
        keep(7, 70);
        return getuid() == 65534 ? 0 : 3;
    }
    keep(10, 100);
    if (setgid(65534) != 0 || setuid(65534) != 0) {
        perror("dropprivs: setuid");
        return 2;
    }
    pid_t forked = fork();
    if (forked == 0) {
        keep(20, 200);
        _exit(5);
    }
    int a = reap(forked);
    pid_t execd = fork();
    if (execd == 0) {
        execl("/proc/self/exe", argv[0], "worker", (char *)NULL);
        _exit(127);
    }
    int b = reap(execd);
    printf("workers exited %d and %d as uid %d\n", a, b, (int)getuid());
    return a == 5 && b == 0 ? 0 : 1;
}
