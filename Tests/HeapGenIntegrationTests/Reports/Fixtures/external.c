/*
 * external.c: a program that does not mark its own cycles.
 *   external timed CYCLES PERIOD_MS
 *       every PERIOD_MS, half-way through the period, leak_two() leaks 2 blocks
 *       (absolute deadlines: no drift), then exits at the end of the last period.
 *   external teardown CYCLES PERIOD_MS TAIL_MS
 *       the same cycles, then frees every block it kept (a server's shutdown) and
 *       runs TAIL_MS more before exiting, so that timed marks land after the teardown.
 *   external idle CYCLES PERIOD_MS IDLE_MS
 *       the same cycles, then IDLE_MS without a heap event (a program that sleeps,
 *       or waits, before it exits), then exits keeping every block.
 *   external driven PIDFILE GO_FIFO DONE_FIFO CYCLES
 *       writes its pid to PIDFILE, then for each cycle reads one byte from GO_FIFO,
 *       runs the cycle and writes one byte to DONE_FIFO. No stdio.
 *   external driven-titled PIDFILE GO_FIFO DONE_FIFO CYCLES
 *       the same, after writing zeros over its initial environment, as PostgreSQL
 *       does to make room for its process titles: /proc/PID/environ is blank.
 */
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>      /* rename only: no stdio streams are used */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void *kept[1000];
int nkept;
void *volatile sink;
volatile int two = 2;   /* not a constant: gcc would unroll the loop into two call sites */

__attribute__((noipa)) void leak_two(void) {
    for (int i = 0; i < two; i++) {
        void *p = malloc(80);
        memset(p, i, 80);
        kept[nkept++] = p;
    }
    void *t = malloc(500);     /* transient */
    sink = t;
    free(t);
}

static void sleep_until(struct timespec *t) {
    /* Retry only when a signal interrupted the sleep: any other error would spin. */
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, t, NULL) == EINTR) {}
}

/* ms may be negative: keep tv_nsec in [0, 1e9) (clock_nanosleep refuses anything else). */
static void add_ms(struct timespec *t, long ms) {
    long long ns = (long long)t->tv_sec * 1000000000LL + t->tv_nsec + (long long)ms * 1000000LL;
    t->tv_sec = (time_t)(ns / 1000000000LL);
    t->tv_nsec = (long)(ns % 1000000000LL);
}

int main(int argc, char **argv) {
    if (argc >= 4 && (strcmp(argv[1], "timed") == 0 || strcmp(argv[1], "teardown") == 0
                      || strcmp(argv[1], "idle") == 0)) {
        int cycles = atoi(argv[2]);
        long period = atol(argv[3]);
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        add_ms(&t, period / 2);
        for (int k = 0; k < cycles; k++) {
            sleep_until(&t);
            leak_two();
            add_ms(&t, period);
        }
        add_ms(&t, -period / 2 + period / 4);
        sleep_until(&t);
        if (strcmp(argv[1], "teardown") == 0 && argc >= 5) {
            for (int k = 0; k < nkept; k++) free(kept[k]);
            nkept = 0;
            add_ms(&t, atol(argv[4]));
            sleep_until(&t);
        }
        if (strcmp(argv[1], "idle") == 0 && argc >= 5) {
            add_ms(&t, atol(argv[4]));
            sleep_until(&t);
        }
        return 0;
    }
    if (argc >= 6 && (strcmp(argv[1], "driven") == 0 || strcmp(argv[1], "driven-titled") == 0)) {
        if (strcmp(argv[1], "driven-titled") == 0) {
            extern char **environ;
            for (char **e = environ; *e != NULL; e++) memset(*e, 0, strlen(*e));
        }
        int cycles = atoi(argv[5]);
        char buf[32];
        int len = 0;
        pid_t pid = getpid();
        char digits[16];
        int nd = 0;
        do { digits[nd++] = '0' + pid % 10; pid /= 10; } while (pid);
        while (nd) buf[len++] = digits[--nd];
        buf[len++] = '\n';
        char tmp[4096];
        strcpy(tmp, argv[2]);
        strcat(tmp, ".tmp");
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, buf, len) != len) return 2;
        close(fd);
        rename(tmp, argv[2]);
        int go = open(argv[3], O_RDONLY);
        int done = open(argv[4], O_WRONLY);
        if (go < 0 || done < 0) return 2;
        char c = 0;
        for (int k = 0; k < cycles; k++) {
            if (read(go, &c, 1) != 1) return 3;
            leak_two();
            if (write(done, &c, 1) != 1) return 3;
        }
        /* wait for the test's last mark */
        if (read(go, &c, 1) != 1) return 3;
        return 0;
    }
    return 64;
}
