/*
 * reload.c: a server's signals. Writes its pid to argv[1], then waits:
 * SIGHUP reloads (one 777-byte block kept per reload, and "reloaded N" in
 * argv[2]); SIGTERM ends it, exit 0; SIGINT too, exit 7 (a fast shutdown).
 * Gives up after 30 s (exit 4).
 * With argv[3] "daemon" it first forks, the parent exits 0 at once and the
 * child (in a session of its own) is the server.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t hangups, done, interrupted;
void *volatile kept[64];

static void on_hup(int sig) { (void)sig; hangups++; }
static void on_term(int sig) { (void)sig; done = 1; }
static void on_int(int sig) { (void)sig; interrupted = 1; done = 1; }

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
    if (argc > 3 && strcmp(argv[3], "daemon") == 0) {
        if (fork() != 0) _exit(0);
        setsid();
    }
    signal(SIGHUP, on_hup);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_int);
    char text[64];
    snprintf(text, sizeof text, "%d\n", (int)getpid());
    if (write_file(argv[1], text) != 0) return 3;
    int reloads = 0;
    for (int tick = 0; tick < 3000 && !done; tick++) {
        struct timespec d = { 0, 10000000 };
        nanosleep(&d, NULL);
        while (reloads < hangups && reloads < 64) {
            kept[reloads++] = malloc(777);
            snprintf(text, sizeof text, "reloaded %d\n", reloads);
            write_file(argv[2], text);
        }
    }
    return interrupted ? 7 : done ? 0 : 4;
}
