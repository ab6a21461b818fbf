// Prints its arguments, one per line in brackets (empty ones too), and keeps one
// block: the program whose name and arguments the report and `heapgen info` show.
#include <stdio.h>
#include <stdlib.h>

void *kept;

int main(int argc, char **argv) {
    kept = malloc(64);
    printf("argc=%d\n", argc);
    for (int i = 1; i < argc; i++) printf("[%s]\n", argv[i]);
    return 0;
}
