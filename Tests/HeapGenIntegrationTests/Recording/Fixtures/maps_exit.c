/*
 * maps_exit.c, built with the collector's process.c: hg_maps_contain asked
 * about a child whose /proc/PID/maps is long (30,000 mappings, the file it
 * looks for near the end) while the child is killed in the middle of the
 * reading. The list comes back cut short without that file; that must read
 * as "cannot tell" (-1), not as "not mapped" (0), which the collector takes
 * for an exec. First, as a control, the same question while the child lives
 * must find the file (1). Prints both tallies; exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "CHeapGenCollector.h"

struct question { pid_t pid; uint64_t dev, ino; int answer; };

static void *ask(void *arg) {
    struct question *q = arg;
    q->answer = hg_maps_contain(q->pid, q->dev, q->ino);
    return NULL;
}

/* A child mapping the memfd first (the highest address: listed after the
 * others), then 30,000 pages that do not merge; it says so and waits. */
static pid_t many_maps(int fd) {
    int ready[2];
    if (pipe(ready) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
        for (int i = 0; i < 30000; i++)
            mmap(NULL, 4096, (i & 1) ? PROT_READ : PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (write(ready[1], "r", 1) != 1) _exit(1);
        for (;;) pause();
    }
    char c;
    if (pid < 0 || read(ready[0], &c, 1) != 1) pid = -1;
    close(ready[0]);
    close(ready[1]);
    return pid;
}

static int round_of(int fd, int kill_while_reading) {
    struct stat st;
    fstat(fd, &st);
    struct question q = { many_maps(fd), (uint64_t)st.st_dev, (uint64_t)st.st_ino, 9 };
    if (q.pid < 0) return 9;
    pthread_t t;
    pthread_create(&t, NULL, ask, &q);
    if (kill_while_reading) {
        const struct timespec ms3 = { 0, 3000000 };   /* the reading takes ~100 ms */
        nanosleep(&ms3, NULL);
        kill(q.pid, SIGKILL);
    }
    pthread_join(t, NULL);
    kill(q.pid, SIGKILL);
    waitpid(q.pid, NULL, 0);
    return q.answer;
}

int main(void) {
    int fd = memfd_create("heapgen-maps-exit", 0);
    if (fd < 0 || ftruncate(fd, 4096) != 0) return 1;
    int alive[3] = {0}, killed[3] = {0};
    for (int i = 0; i < 3; i++) {
        int a = round_of(fd, 0);
        if (a >= -1 && a <= 1) alive[a + 1]++;
    }
    for (int i = 0; i < 8; i++) {
        int a = round_of(fd, 1);
        if (a >= -1 && a <= 1) killed[a + 1]++;
    }
    printf("alive: found %d, not mapped %d, cannot tell %d\n", alive[2], alive[1], alive[0]);
    printf("killed while reading: found %d, not mapped %d, cannot tell %d\n", killed[2], killed[1], killed[0]);
    return 0;
}
