/* movedenv.c: what PostgreSQL's save_ps_display_args does at start-up, to make room
 * for its process titles: it moves the environment and argv into blocks of its own,
 * both allocated in one function. A later setenv() makes glibc copy the environment
 * into an array of its own, so the moved array is lost; the argv copy stays
 * referenced from a global. Built without line numbers (-g0), as a distribution's
 * binary is, so both blocks are one finding: "blocks from move_environment". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;
static char **g_argv;

__attribute__((noinline)) static int move_environment(int argc, char **argv)
{
    int n = 0;
    while (environ[n]) n++;
    char **env = malloc((n + 1) * sizeof *env);
    for (int i = 0; i < n; i++) env[i] = environ[i];
    env[n] = NULL;
    environ = env;

    char **args = malloc((argc + 1) * sizeof *args);
    for (int i = 0; i < argc; i++) args[i] = argv[i];
    args[argc] = NULL;
    g_argv = args;
    return n;
}

int main(int argc, char **argv)
{
    int moved = move_environment(argc, argv);
    setenv("MOVEDENV_ADDED", "1", 1); /* glibc's own array replaces ours */
    printf("moved %d variables and %s, set %s\n", moved, g_argv[0] ? "argv" : "?", getenv("MOVEDENV_ADDED"));
    return 0;
}
