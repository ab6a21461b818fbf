/*
 * settle.c: every cycle, pending_work() allocates 4 blocks that the next cycle
 * releases (like an autorelease pool drained late). After the last mark a
 * releaser thread frees the last cycle's blocks 50 ms later; the program stays
 * alive 400 ms after its last mark.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "heapgen.h"

static void *pending[4];
static sem_t go;

__attribute__((noipa)) void pending_work(void) {
    for (int i = 0; i < 4; i++) {
        pending[i] = malloc(120);
        memset(pending[i], i, 120);
    }
}

static void release_pending(void) {
    for (int i = 0; i < 4; i++) { free(pending[i]); pending[i] = NULL; }
}

static void *releaser(void *arg) {
    (void)arg;
    while (sem_wait(&go) != 0) {}
    usleep(50 * 1000);
    release_pending();
    return NULL;
}

int main(int argc, char **argv) {
    int cycles = argc > 1 ? atoi(argv[1]) : 8;
    sem_init(&go, 0, 0);
    pthread_t thread;
    pthread_create(&thread, NULL, releaser, NULL);
    HEAPGEN_MARK("heapgen.start");
    for (int k = 1; k <= cycles; k++) {
        release_pending();          /* the previous cycle's blocks */
        pending_work();
        HEAPGEN_MARK("cycle");
    }
    sem_post(&go);
    usleep(400 * 1000);
    pthread_join(thread, NULL);
    return 0;
}
