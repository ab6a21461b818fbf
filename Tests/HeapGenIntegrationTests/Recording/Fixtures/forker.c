/* Parent: 5 mallocs of 50 B (freed), fork; child: 7 mallocs of 77 B, frees 2,
 * exits 0; parent waits, then 3 mallocs of 30 B (leaked). No stdio. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void *volatile sink[16];

int main(void)
{
    for (int i = 0; i < 5; i++) sink[i] = malloc(50);
    for (int i = 0; i < 5; i++) free(sink[i]);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        for (int i = 0; i < 7; i++) sink[i] = malloc(77);
        free(sink[0]);
        free(sink[1]);
        _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 2;
    for (int i = 0; i < 3; i++) sink[i] = malloc(30);
    return 0;
}
