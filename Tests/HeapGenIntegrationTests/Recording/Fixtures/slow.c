/* Writes its pid to argv[1], then for about argv[3] (default 300) rounds
 * allocates and frees 2,000 blocks and sleeps 10 ms, then writes "done" to
 * argv[2] and exits 0. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void *volatile sink[2000];

static int write_file(const char *path, const char *text)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    if (write(fd, text, strlen(text)) != (ssize_t)strlen(text)) return -1;
    close(fd);
    return rename(tmp, path);
}

int main(int argc, char **argv)
{
    if (argc < 3) return 2;
    int rounds = argc > 3 ? atoi(argv[3]) : 300;
    char pid[32];
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (write_file(argv[1], pid) != 0) return 3;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 2000; i++) sink[i] = malloc(16 + (size_t)(i % 100));
        for (int i = 0; i < 2000; i++) free(sink[i]);
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    if (write_file(argv[2], "done\n") != 0) return 4;
    return 0;
}
