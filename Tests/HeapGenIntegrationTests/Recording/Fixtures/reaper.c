/* Issue 7, item 6: 50 children that end at once (child i exits with
 * status i, child 7 is killed by SIGTERM, child 13 by SIGKILL), reaped as
 * soon as they end, each through another member of the wait family. The
 * parent prints what it reaped: "<pid> exit <code>" or "<pid> signal <n>". */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

void *volatile sink;

int main(void)
{
    for (int i = 0; i < 50; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            sink = malloc(16 + (size_t)i);
            free(sink);
            if (i == 7)
                kill(getpid(), SIGTERM);
            if (i == 13)
                kill(getpid(), SIGKILL);
            _exit(i);
        }
    }
    for (int i = 0; i < 50; i++) {
        int st = 0;
        pid_t pid;
        switch (i % 5) {
        case 0: pid = wait(&st); break;
        case 1: pid = waitpid(-1, &st, 0); break;
        case 2: pid = wait3(&st, 0, NULL); break;
        case 3: { struct rusage ru; pid = wait4(-1, &st, 0, &ru); break; }
        default: {
            siginfo_t info = { 0 };
            if (waitid(P_ALL, 0, &info, WEXITED) != 0)
                return 1;
            pid = info.si_pid;
            st = info.si_code == CLD_EXITED ? info.si_status << 8 : info.si_status;
        }
        }
        if (WIFEXITED(st))
            printf("%d exit %d\n", (int)pid, WEXITSTATUS(st));
        else
            printf("%d signal %d\n", (int)pid, WTERMSIG(st));
    }
    return 0;
}
