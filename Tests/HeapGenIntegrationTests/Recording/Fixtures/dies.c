/* 100,000 mallocs of 16 bytes kept live, then: argv[1] = "kill" → raise(SIGKILL),
 * "abort" → abort(), "segv" → a null store. No other allocation. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define N 100000
void *volatile keep[N];

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    for (int i = 0; i < N; i++) keep[i] = malloc(16);
    if (strcmp(argv[1], "kill") == 0) raise(SIGKILL);
    if (strcmp(argv[1], "abort") == 0) abort();
    if (strcmp(argv[1], "segv") == 0) *(volatile int *)0 = 1;
    return 3;
}
