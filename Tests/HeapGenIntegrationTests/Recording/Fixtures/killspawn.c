/* killspawn.c — what test suites do to a child they only need to start:
 * posix_spawn /bin/sleep (with this program's environment, so heapgen's
 * shim is preloaded into it) and kill it at once. posix_spawn returns once
 * the child has exec'd, and the kill lands while the loader is still
 * mapping its libraries, before any constructor (heapgen's included) runs.
 * Prints "killed by N". Exit 0, or 2 when the spawn fails. */
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

extern char **environ;

int main(void)
{
    char *keep = malloc(32);             /* this image is traced */
    char *argv[] = {"sleep", "5", NULL};
    pid_t pid;
    if (posix_spawn(&pid, "/bin/sleep", NULL, NULL, argv, environ) != 0) return 2;
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("killed by %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    free(keep);
    return 0;
}
