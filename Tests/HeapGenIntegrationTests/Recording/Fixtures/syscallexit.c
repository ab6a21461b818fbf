/*
 * syscallexit.c: two forked children leave by the exit_group system call
 * itself, as strace's and other tools' probe children do, so no exit
 * handler (and no exit scan) runs in either. Child "a" only makes system
 * calls; child "b" keeps a block of its own (40 B). The parent keeps 4 ×
 * 24 B, waits for both and prints "a PID 0" and "b PID 0".
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile kept[4];
static void *volatile own;

static pid_t child(int keeps) {
    pid_t p = fork();
    if (p == 0) {
        if (keeps) own = malloc(40);
        syscall(SYS_getpid);
        syscall(SYS_exit_group, 0);
    }
    return p;
}

int main(void) {
    for (int i = 0; i < 4; i++) kept[i] = malloc(24);
    pid_t a = child(0);
    pid_t b = child(1);
    int sa = 0, sb = 0;
    waitpid(a, &sa, 0);
    waitpid(b, &sb, 0);
    printf("a %d %d\nb %d %d\n", (int)a, WEXITSTATUS(sa), (int)b, WEXITSTATUS(sb));
    return 0;
}
