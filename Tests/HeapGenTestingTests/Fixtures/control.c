/* control.c — drives heapgen_control from C for HeapGenTestingTests.
 *
 *   control objects   track; a live block, then the same block after free
 *   control malformed garbage, bad JSON, huge and oversized requests, then ping
 *   control latency N round trips of ping and object (prints µs)
 *   control untraced  what heapgen_control says without heapgen
 *   control retention why blocks are alive: one held by a global through another
 *                     block, a pair holding each other, a freed one
 *
 * Each answer is printed as "<tag> <rc> <json>" on one line. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "heapgen.h"

static char answer[1 << 20];

static long ask(const char *tag, const char *request)
{
    if (!heapgen_control) {
        printf("%s nosymbol\n", tag);
        return -ENOSYS;
    }
    long rc = heapgen_control(request, answer, sizeof answer);
    printf("%s %ld %s\n", tag, rc, rc >= 0 ? answer : "");
    fflush(stdout);
    return rc;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

__attribute__((noinline)) static void *make_block(size_t n)
{
    void *p = malloc(n);
    memset(p, 1, n);
    return p;
}

/* The root of the retention case: a global holding a block that holds the target at +0x8. */
void **g_holder;
/* A list of 20 blocks: its last one's path is too long to give whole. */
void **g_list;

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "objects";
    char req[256];
    if (strcmp(mode, "objects") == 0) {
        ask("TRACK", "{\"op\":\"track\"}");
        void *p = make_block(1234);
        snprintf(req, sizeof req, "{\"op\":\"object\",\"address\":\"%p\"}", p);
        ask("LIVE", req);
        free(p);
        ask("FREED", req);
        void *q = make_block(77);
        HEAPGEN_MARK("first");
        void *r = make_block(88);
        snprintf(req, sizeof req, "{\"op\":\"object\",\"address\":\"%p\"}", r);
        ask("GEN", req);
        ask("STATUS", "{\"op\":\"status\"}");
        free(q);
        free(r);
    } else if (strcmp(mode, "malformed") == 0) {
        ask("GARBAGE", "this is not json");
        ask("EMPTY", "");
        ask("NESTED", "{\"op\":\"object\",\"address\":{\"x\":1}}");
        ask("NOOP", "{\"address\":\"0x10\"}");
        ask("UNKNOWN", "{\"op\":\"explode\"}");
        ask("BADADDR", "{\"op\":\"object\",\"address\":\"zebra\"}");
        ask("UNTRACKED", "{\"op\":\"object\",\"address\":\"0x1000\"}");
        ask("NOSESSION", "{\"op\":\"growth\"}");
        ask("BADOPT", "{\"op\":\"begin\",\"warmUp\":-3}");
        ask("TRAILING", "{\"op\":\"ping\"} extra");
        ask("UNTERMINATED", "{\"op\":\"ping");
        ask("BADESCAPE", "{\"op\":\"p\\qing\"}");
        /* 60 KiB: fits the shim's request region, over the collector's 16 KiB limit */
        size_t big = 60 * 1024;
        char *huge = malloc(big + 1);
        memset(huge, '[', big);
        huge[big] = 0;
        ask("HUGE", huge);
        /* 100 KiB: more than the request region */
        char *huger = malloc(100 * 1024 + 1);
        memset(huger, 'x', 100 * 1024);
        huger[100 * 1024] = 0;
        long rc = heapgen_control(huger, answer, sizeof answer);
        printf("TOOBIG %ld %s\n", rc, rc == -E2BIG ? "E2BIG" : "?");
        /* deep nesting must not recurse */
        memset(huge, '{', 10 * 1024);    /* under the 16 KiB limit */
        huge[10 * 1024] = 0;
        ask("DEEP", huge);
        free(huge);
        free(huger);
        rc = heapgen_control("{\"op\":\"ping\"}", answer, 8);
        printf("SHORT %ld %s\n", rc, answer);
        ask("PING", "{\"op\":\"ping\"}");
        ask("STATUS", "{\"op\":\"status\"}");
    } else if (strcmp(mode, "latency") == 0) {
        int n = argc > 2 ? atoi(argv[2]) : 200;
        heapgen_control("{\"op\":\"track\"}", answer, sizeof answer);
        void *p = make_block(64);
        snprintf(req, sizeof req, "{\"op\":\"object\",\"address\":\"%p\"}", p);
        heapgen_control(req, answer, sizeof answer);   /* warm the symbolizer */
        double t0 = now_us();
        for (int i = 0; i < n; i++) heapgen_control("{\"op\":\"ping\"}", answer, sizeof answer);
        double t1 = now_us();
        for (int i = 0; i < n; i++) heapgen_control(req, answer, sizeof answer);
        double t2 = now_us();
        printf("LATENCY ping %.1f us object %.1f us (n=%d)\n", (t1 - t0) / n, (t2 - t1) / n, n);
        free(p);
    } else if (strcmp(mode, "retention") == 0) {
        long tid = syscall(SYS_gettid);
        snprintf(req, sizeof req, "{\"op\":\"retention\",\"address\":\"0x10\"}");
        ask("RUNTRACKED", req);
        ask("TRACK", "{\"op\":\"track\"}");
        g_holder = make_block(32);
        memset(g_holder, 0, 32);
        g_holder[1] = make_block(48);
        /* an address inside the target names the target */
        snprintf(req, sizeof req, "{\"op\":\"retention\",\"address\":\"%p\",\"tid\":%ld}",
                 (void *)((char *)g_holder[1] + 8), tid);
        ask("HELD", req);
        void **a = make_block(16), **b = make_block(16);
        memset(a, 0, 16);
        memset(b, 0, 16);
        a[0] = b;
        b[0] = a;
        snprintf(req, sizeof req, "{\"op\":\"retention\",\"address\":\"%p\",\"tid\":%ld}", (void *)a, tid);
        a = b = NULL;
        ask("PAIR", req);
        void **tail = NULL;
        for (int i = 0; i < 20; i++) {
            void **node = make_block(16);
            memset(node, 0, 16);
            if (tail) tail[0] = node; else g_list = node;
            tail = node;
        }
        snprintf(req, sizeof req, "{\"op\":\"retention\",\"address\":\"%p\",\"tid\":%ld}", (void *)tail, tid);
        tail = NULL;
        ask("LONG", req);
        void *gone = make_block(40);
        snprintf(req, sizeof req, "{\"op\":\"retention\",\"address\":\"%p\"}", gone);
        free(gone);
        ask("GONE", req);
    } else {
        ask("UNTRACED", "{\"op\":\"ping\"}");
    }
    return 0;
}
