/* untrackfork.c: with --leaks, the collector's one live tracker serves both the
 * program's control requests and the fork snapshots. The program starts a growth
 * session, sends untrack (its tracking and session end), keeps allocating, then
 * forks: the child must still inherit every block, those allocated after the
 * untrack included. The parent keeps 100 x 48 B before the untrack and 50 x 32 B
 * after; the child frees all 150 and allocates 2 x 64 B. No stdio before the fork
 * (its buffer would be one more inherited block): answers go out with write(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "heapgen.h"

static void *before[100], *after[50];
static char answer[4096];

static void ask(const char *tag, const char *request) {
    long rc = heapgen_control ? heapgen_control(request, answer, sizeof answer) : -1;
    write(1, tag, strlen(tag));
    write(1, " ", 1);
    if (rc >= 0) write(1, answer, strlen(answer));
    write(1, "\n", 1);
}

int main(void) {
    for (int i = 0; i < 100; i++) before[i] = malloc(48);
    ask("BEGIN", "{\"op\":\"begin\"}");
    ask("UNTRACK", "{\"op\":\"untrack\"}");
    ask("STATUS", "{\"op\":\"status\"}");
    for (int i = 0; i < 50; i++) after[i] = malloc(32);
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 100; i++) free(before[i]);
        for (int i = 0; i < 50; i++) free(after[i]);
        void *volatile mine[2];
        for (int i = 0; i < 2; i++) mine[i] = malloc(64);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ask("GROWTH", "{\"op\":\"growth\"}");
    ask("TRACK", "{\"op\":\"track\"}");
    printf("child %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "failed");
    return 0;
}
