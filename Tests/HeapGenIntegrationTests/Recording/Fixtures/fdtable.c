/* fdtable.c — what Python's test_subprocess (test_pass_fds_redirected) and
 * fd-leak checkers do: list every descriptor in /proc/self/fd and expect
 * exactly the ones the program opened or inherited. It lists them in its
 * first image, in a forked child, and in the image it exec's (itself, with
 * "again", passing /dev/null on fd 7 as subprocess's pass_fds would). Each
 * image allocates, so each is traced under heapgen. Exit 0. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void list_fds(const char *when)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) _exit(5);
    int seen[256], n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        int fd = atoi(e->d_name);
        if (fd != dirfd(d) && n < 256) seen[n++] = fd;
    }
    closedir(d);
    for (int i = 1; i < n; i++)          /* readdir's order is the kernel's */
        for (int j = i; j > 0 && seen[j - 1] > seen[j]; j--) {
            int t = seen[j]; seen[j] = seen[j - 1]; seen[j - 1] = t;
        }
    printf("%s:", when);
    for (int i = 0; i < n; i++) printf(" %d", seen[i]);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    char *block = strdup(argv[0]);       /* each image allocates */
    if (argc > 1 && strcmp(argv[1], "again") == 0) {
        list_fds("exec'd image");
        free(block);
        return 0;
    }
    list_fds("first image");
    pid_t child = fork();
    if (child == 0) {
        void *p = malloc(64);
        list_fds("forked child");
        free(p);
        _exit(0);
    }
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child || status != 0) return 2;
    int null = open("/dev/null", O_RDONLY);
    if (null < 0 || dup2(null, 7) != 7) return 3;
    close(null);
    free(block);
    execl("/proc/self/exe", argv[0], "again", (char *)NULL);
    return 4;
}
