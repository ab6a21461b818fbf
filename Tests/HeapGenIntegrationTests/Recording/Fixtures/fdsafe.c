/* fdsafe.c — a program that owns its descriptors. It closes every inherited
 * one (closefrom(3)), opens its own input (fd 3) and output (fd 4), then
 * allocates from code without unwind information (assembly with no CFI:
 * one function with a frame pointer, one that loads RBP with a heap
 * address), from a deep recursion and from a SIGUSR1 handler raised through
 * level1 → level2 → level3, reading its input 2 bytes at a time in between
 * and copying them to its output.
 *
 * stdout: the descriptors in /proc/self/fd at four points (heapgen keeps
 * none of its own, so all of them), the input as it was read, and the number of blocks. Usage: fdsafe IN OUT
 * (IN holds at least 26 bytes). Exit 0, or 2..6 on a failed check. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* No .cfi directives: no FDE covers these. noinfo_fp keeps a frame pointer;
 * noinfo_heap_fp(size, p) runs malloc with RBP = p (a heap block). */
__asm__(
    ".text\n"
    ".globl noinfo_fp\n"
    ".type noinfo_fp,@function\n"
    "noinfo_fp:\n"
    "  push %rbp\n"
    "  mov %rsp, %rbp\n"
    "  call malloc@PLT\n"
    "  pop %rbp\n"
    "  ret\n"
    ".size noinfo_fp, .-noinfo_fp\n"
    ".globl noinfo_heap_fp\n"
    ".type noinfo_heap_fp,@function\n"
    "noinfo_heap_fp:\n"
    "  push %rbp\n"
    "  push %rbx\n"
    "  sub $8, %rsp\n"
    "  mov %rsi, %rbp\n"
    "  call malloc@PLT\n"
    "  add $8, %rsp\n"
    "  pop %rbx\n"
    "  pop %rbp\n"
    "  ret\n"
    ".size noinfo_heap_fp, .-noinfo_heap_fp\n");
void *noinfo_fp(size_t n);
void *noinfo_heap_fp(size_t n, void *rbp);

enum { KEEP = 4096 };
static void *kept[KEEP];
static int nkept;
static void *fake_frame;        /* what noinfo_heap_fp puts in RBP */
static volatile int sink;

static void keep(void *p)
{
    if (p == NULL || nkept == KEEP) _exit(2);
    kept[nkept++] = p;
}

/* Allocates through both no-CFI functions, then moves 2 input bytes to the output. */
/* noipa: no clones (round_trip.constprop.0) and no tail calls, so the
 * recorded stacks name these functions as written. */
#define FRAME __attribute__((noipa))

static FRAME void round_trip(int in, int out, int tag)
{
    keep(noinfo_fp(100 + tag));
    keep(noinfo_heap_fp(200 + tag, fake_frame));
    char b[2];
    if (read(in, b, 2) != 2) _exit(3);
    if (write(out, b, 2) != 2) _exit(4);
    fwrite(b, 1, 2, stdout);
}

/* Descriptors >= `limit` are left out. */
static void list_fds(const char *when, int limit)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL) _exit(5);
    int seen[64], n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        int fd = atoi(e->d_name);
        if (fd != dirfd(d) && fd < limit && n < 64) seen[n++] = fd;
    }
    closedir(d);
    for (int i = 1; i < n; i++)          /* sort: readdir's order is the kernel's */
        for (int j = i; j > 0 && seen[j - 1] > seen[j]; j--) {
            int t = seen[j]; seen[j] = seen[j - 1]; seen[j - 1] = t;
        }
    printf("fds %s:", when);
    for (int i = 0; i < n; i++) printf(" %d", seen[i]);
    printf("\n");
    fflush(stdout);
}

static FRAME int recurse(int in, int out, int d)
{
    if (d == 0) {
        round_trip(in, out, 1);
        return sink;
    }
    int r = recurse(in, out, d - 1);
    return r + sink;
}

static FRAME void handler(int sig)
{
    (void)sig;
    keep(malloc(5151));
    round_trip(3, 4, 2);
    sink++;
}

FRAME void level3(void) { raise(SIGUSR1); sink++; }
FRAME void level2(void) { level3(); sink++; }
FRAME void level1(void) { level2(); sink++; }

int main(int argc, char **argv)
{
    if (argc != 3) return 6;
    list_fds("start", 1 << 30);
    closefrom(3);
    int in = open(argv[1], O_RDONLY);
    int out = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in != 3 || out != 4) return 6;
    list_fds("opened", 1 << 30);

    fake_frame = calloc(64, 8);
    for (int i = 0; i < 64; i++)       /* looks like a chain of frames */
        ((void **)fake_frame)[i] = i % 2 ? (void *)main : (char *)fake_frame + 16 * (i / 2 + 1);
    printf("read: ");
    for (int i = 0; i < 5; i++)
        round_trip(in, out, 0);
    recurse(in, out, 200);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0) return 6;
    for (int i = 0; i < 3; i++) level1();
    for (int i = 0; i < 3; i++)
        round_trip(in, out, 0);
    printf("\n");
    list_fds("after", 1 << 30);

    char rest[64];
    ssize_t r = read(in, rest, sizeof rest);
    printf("left in input: %zd\n", r);
    for (int i = 0; i < nkept; i++) free(kept[i]);
    free(fake_frame);
    printf("blocks: %d\n", nkept);
    list_fds("end", 1 << 30);
    return 0;
}
