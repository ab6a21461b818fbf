/*
 * readahead.c: keeps 10 blocks from keep_blocks, then waits (up to 20 s, or
 * READAHEAD_WAIT_MS) until
 * its parent, heapgen, has a symbolizer child (llvm-symbolizer or addr2line,
 * by /proc/<pid>/stat), and prints whether it saw one while it was still
 * running: heapgen reads the modules' symbols while the program runs.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *volatile kept[10];   /* volatile: the blocks stay, and so do their mallocs */

__attribute__((noinline)) static void keep_blocks(void)
{
    for (int i = 0; i < 10; i++)
        kept[i] = malloc(100 + (size_t)i);
}

/* 1 if a process whose parent is `parent` is named like a symbolizer. */
static int symbolizer_child(pid_t parent)
{
    DIR *d = opendir("/proc");
    if (d == NULL)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[64], line[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        size_t n = fread(line, 1, sizeof line - 1, f);
        fclose(f);
        line[n] = 0;
        /* pid (comm) state ppid ...: comm may hold spaces, so from the last ')' */
        char *open = strchr(line, '('), *close = strrchr(line, ')');
        if (open == NULL || close == NULL)
            continue;
        *close = 0;
        int ppid = 0;
        char state;
        if (sscanf(close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent &&
            (strncmp(open + 1, "llvm-symbolize", 14) == 0 || strcmp(open + 1, "addr2line") == 0))
            found = 1;
    }
    closedir(d);
    return found;
}

int main(void)
{
    keep_blocks();
    const pid_t parent = getppid();
    const char *wait = getenv("READAHEAD_WAIT_MS");
    const long tries = (wait ? atol(wait) : 20000) / 10;
    const struct timespec gap = { 0, 10 * 1000 * 1000 };
    int seen = 0;
    for (long i = 0; i < tries && !seen; i++) {
        seen = symbolizer_child(parent);
        if (!seen)
            nanosleep(&gap, NULL);
    }
    printf("symbolizer while running: %s\n", seen ? "yes" : "no");
    return 0;
}
