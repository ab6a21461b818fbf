/*
 * sigstate.c: the signal state a program starts with.
 *   sigstate launch PROGRAM ARGS...  blocks SIGUSR1 and ignores SIGUSR2, then
 *                                    execs PROGRAM (as a supervisor may), with
 *                                    glibc's signals 32 and 33 at their default
 *                                    (a test runner's posix_spawn left them
 *                                    ignored; a shell's fork and exec does not)
 *   sigstate show                    prints its SigBlk and SigIgn lines of
 *                                    /proc/self/status
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

/* The kernel's struct sigaction: glibc's sigaction refuses its internal signals. */
struct kernel_sigaction { void *handler; unsigned long flags; void *restorer; unsigned long mask; };

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "launch") == 0) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        sigprocmask(SIG_BLOCK, &set, NULL);
        signal(SIGUSR2, SIG_IGN);
        struct kernel_sigaction dfl = { SIG_DFL, 0, NULL, 0 };
        syscall(SYS_rt_sigaction, 32, &dfl, NULL, sizeof dfl.mask);
        syscall(SYS_rt_sigaction, 33, &dfl, NULL, sizeof dfl.mask);
        execvp(argv[2], argv + 2);
        return 127;
    }
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) return 1;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "SigBlk:", 7) == 0 || strncmp(line, "SigIgn:", 7) == 0) fputs(line, stdout);
    fclose(f);
    return 0;
}
