/*
 * sandboxed.c: a worker that locks itself into a seccomp allowlist, as
 * sshd's privilege-separated child does: memory, futex, I/O on open
 * descriptors, fork and wait, exit; anything else kills the process
 * (SIGSYS). Then, inside the sandbox:
 *   - PAIRS malloc/free pairs (argv[1]), enough to fill a small ring;
 *   - allocations from a recursion 1,500 calls deep, below any stack depth
 *     reached before the sandbox;
 *   - a forked child that allocates and exits with status 5;
 *   - one block lost for good (lose_in_sandbox), 48 bytes.
 * Prints "sum S", "deep D", "child 5", "mallocs M" (its own malloc calls
 * after the sandbox) and exits 0.
 * With argv[1] "probe" it only asks for a filter the kernel refuses (a NULL
 * program: EFAULT, as Chromium probes for seccomp), then forks a child that
 * allocates and exits 0; prints "refused 14, child 0".
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static long mallocs;
static void *volatile sink;

static void sandbox(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_brk), ALLOW(SYS_mmap), ALLOW(SYS_munmap),
        ALLOW(SYS_mremap), ALLOW(SYS_madvise), ALLOW(SYS_futex), ALLOW(SYS_newfstatat), ALLOW(SYS_fstat),
        ALLOW(SYS_clone), ALLOW(SYS_clone3), ALLOW(SYS_wait4), ALLOW(SYS_set_robust_list),
        ALLOW(SYS_rt_sigreturn), ALLOW(SYS_exit), ALLOW(SYS_exit_group),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = { sizeof f / sizeof f[0], f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("seccomp");
        exit(2);
    }
}

static long __attribute__((noinline)) deep(int n) {
    char pad[64];
    memset(pad, n, sizeof pad);
    if (n == 0) return pad[3];
    void *p = malloc(24);
    mallocs++;
    sink = p;
    long r = deep(n - 1) + pad[5];
    free(p);
    return r;
}

static void __attribute__((noinline)) lose_in_sandbox(void) {
    sink = malloc(48);
    mallocs++;
    sink = NULL;
}

static int probe(void) {
    const int rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, NULL);
    const int why = rc == 0 ? 0 : errno;
    pid_t child = fork();
    if (child == 0) {
        sink = malloc(40);
        _exit(0);
    }
    int status = -1;
    waitpid(child, &status, 0);
    printf("refused %d, child %d\n", why, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "probe") == 0) return probe();
    long pairs = argc > 1 ? atol(argv[1]) : 200000;
    setvbuf(stdout, NULL, _IONBF, 0);
    sink = malloc(16);   /* glibc's malloc asks getrandom once, on its first call */
    free(sink);
    sandbox();
    unsigned long sum = 0;
    void *keep[32] = { 0 };
    for (long i = 0; i < pairs; i++) {
        char *p = malloc(16 + (size_t)(i % 200));
        mallocs++;
        p[0] = (char)i;
        sum += (unsigned char)p[0];
        free(keep[i % 32]);
        keep[i % 32] = p;
    }
    for (int i = 0; i < 32; i++) free(keep[i]);
    printf("sum %lu\n", sum);
    printf("deep %ld\n", deep(1500));
    pid_t c = fork();
    if (c == 0) {
        sink = malloc(100);
        _exit(5);
    }
    int st = 0;
    waitpid(c, &st, 0);
    printf("child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    lose_in_sandbox();
    printf("mallocs %ld\n", mallocs);
    return 0;
}
