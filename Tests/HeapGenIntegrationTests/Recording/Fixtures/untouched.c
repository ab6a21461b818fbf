/*
 * untouched.c: a program that maps far more memory than it touches, as a JVM maps its
 * Java heap (G1 at -Xms2g: one private anonymous mapping of 2 GiB, committed, mostly
 * untouched): 2 GiB mapped, one page written, holding a pointer to a 100-byte block
 * (a second copy lives in a global). A 48-byte block is lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define REGION (2ul << 30)

void *volatile lost;

int main(void) {
    char *region = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED) { perror("mmap"); return 1; }
    void *kept = malloc(100);
    memcpy(region + (REGION / 2), &kept, sizeof kept);   /* one page touched, in the middle */
    kept = NULL;
    lost = malloc(48);
    lost = NULL;
    printf("mapped\n");
    return 0;
}
