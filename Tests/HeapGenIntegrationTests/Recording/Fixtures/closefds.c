/* Issue 7, item 13: a program that closes every inherited descriptor and
 * then execs another (argv[1], with the rest of argv): the exec'd program
 * must still be traced. */
#include <stdlib.h>
#include <unistd.h>

void *volatile sink;

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    sink = malloc(40);
    free(sink);
    closefrom(3);
    execv(argv[1], argv + 1);
    return 127;
}
