/* 4 mallocs of 40 B (leaked), then exec argv[1] with argv[2...]. */
#include <stdlib.h>
#include <unistd.h>

void *volatile sink[8];

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    for (int i = 0; i < 4; i++) sink[i] = malloc(40);
    execv(argv[1], argv + 1);
    return 3;
}
