/*
 * midrun.c: a server-like loop whose leak starts mid-run. Each of 16 batches
 * (one generation each) serves 4 requests whose buffers are freed before the
 * batch ends; from batch 9 on, every batch also keeps 3 session records of
 * 200 bytes for good. Nothing else allocates: no stdio.
 */
#include <stdlib.h>
#include <string.h>
#include "heapgen.h"

void *sessions[100];
int nsessions;
void *volatile sink;   /* keeps the compiler from eliding a malloc/free pair */

/* Request buffers: allocated and freed within the batch. */
__attribute__((noipa)) void serve_request(int k) {
    char *buffer = malloc(64);
    memset(buffer, k, 64);
    sink = buffer;
    free(buffer);
}

/* The leak: session records kept forever (from batch 9 on). */
__attribute__((noipa)) void keep_session(int k) {
    void *p = malloc(200);
    memset(p, k, 200);
    sessions[nsessions++] = p;
}

__attribute__((noipa)) void end_batch(void) { HEAPGEN_MARK("batch"); }

int main(int argc, char **argv) {
    int batches = argc > 1 ? atoi(argv[1]) : 16;
    int leakFrom = argc > 2 ? atoi(argv[2]) : 9;
    HEAPGEN_MARK("heapgen.start");
    for (int k = 1; k <= batches; k++) {
        for (int r = 0; r < 4; r++) serve_request(k);
        if (k >= leakFrom) {
            for (int s = 0; s < 3; s++) keep_session(k);
        }
        end_batch();
    }
    return 0;
}
