/* A SIGUSR1 handler that allocates (malloc 4321 B, kept); raised 3 times
 * from normal code. Nothing else allocates. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

void *volatile sink[8];
static volatile sig_atomic_t n;

static void handler(int sig)
{
    (void)sig;
    sink[n & 7] = malloc(4321);
    n++;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0) return 1;
    for (int i = 0; i < 3; i++) raise(SIGUSR1);
    return n == 3 ? 0 : 4;
}
