/* memcap: runs a command under an address-space limit and reports its peak memory.
 *
 *   memcap LIMIT_BYTES RESULT_FILE PROGRAM ARGS...
 *
 * The child gets RLIMIT_AS = LIMIT_BYTES (so a runaway allocation fails instead of
 * swapping the machine); its stdout and stderr are the caller's. When it ends, memcap
 * writes "status N maxrss_kb K seconds S" to RESULT_FILE (N = exit code, or 128+signal),
 * from wait4's rusage of that one child, and exits 0. Used by the scale tests of the
 * analysis (issue 7 item 10). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: memcap LIMIT_BYTES RESULT_FILE PROGRAM ARGS...\n");
        return 2;
    }
    rlim_t limit = (rlim_t)strtoull(argv[1], NULL, 10);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 2; }
    if (pid == 0) {
        struct rlimit rl = { limit, limit };
        if (setrlimit(RLIMIT_AS, &rl) != 0) { perror("setrlimit"); _exit(126); }
        execv(argv[3], argv + 3);
        perror("execv");
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) { perror("wait4"); return 2; }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    FILE *f = fopen(argv[2], "w");
    if (!f) { perror("fopen"); return 2; }
    fprintf(f, "status %d maxrss_kb %ld seconds %.3f\n", code, ru.ru_maxrss, seconds);
    fclose(f);
    return 0;
}
