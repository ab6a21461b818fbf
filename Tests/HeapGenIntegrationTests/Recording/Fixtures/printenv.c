/* Issue 7, item 3: prints its environment, forks a child that prints its
 * own and then execs `env` (which prints it once more). With
 * --no-follow-exec / --no-follow-fork every untraced one must see exactly
 * the environment it would have had without heapgen. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>

extern char **environ;
void *volatile sink;

static void print_env(const char *who)
{
    for (char **e = environ; *e; e++)
        printf("%s: %s\n", who, *e);
    fflush(stdout);
}

int main(void)
{
    sink = malloc(10);
    free(sink);
    print_env("parent");
    pid_t pid = fork();
    if (pid == 0) {
        sink = malloc(20);
        free(sink);
        print_env("child");
        execl("/usr/bin/env", "env", (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    printf("child status %d\n", st);
    return 0;
}
