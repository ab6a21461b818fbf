/*
 * leakmaps.c: leak cases where malloc's memory and the program's own lie
 * side by side in the memory map, one per argv[1]. What probes of
 * LeakSanitizer's and valgrind's cases found the scan got wrong:
 *
 *   merged     a 1 MiB block (glibc maps it alone), with the program's own
 *              anonymous mappings right below it: the kernel merges them into
 *              one line of /proc/PID/maps. Just below the block, an arena
 *              holding the only pointer to a 56 B block; below that, the stack
 *              of a thread (pthread_attr_setstack) whose frame holds a 40 B
 *              block: none leaked. Both are placed right below the block's
 *              chunk (MAP_FIXED_NOREPLACE). With "strict" as argv[2] it
 *              exits 3 when the three are not one line (under valgrind they
 *              never are)
 *   coroutine  a coroutine parked on an mmap'd stack with a guard page below;
 *              its outer frame holds empty circular list heads (each word
 *              pair pointing at itself, as a thread descriptor's header
 *              does), a deeper frame the only pointer to an 88 B block: none
 *              leaked
 *   memfd      the only pointer to a 64 B block in the program's own shared
 *              memfd mapping, named "heapgen-cache": none leaked
 *   libcdata   libc holds the only pointers, into the middle of blocks:
 *              stdout's buffer (setvbuf at offset 64 of a 4,160 B block) and
 *              strtok's position in a 32 B string: none leaked
 *   sealed     a page of the program's .bss and an anonymous mapping hold the
 *              only pointers to 4 blocks of 72 B and one of 40 B, then are
 *              made read-only (mprotect), as a program seals a table it keeps
 *              reading: none leaked (valgrind: all 5 lost)
 *   arenatop   a thread's malloc arena outgrows its first 64 MiB heap, and
 *              every block of that heap is freed, so it holds only the
 *              arena's state, whose top pointer lies in the last 8 bytes of a
 *              24 B block carved just before the top chunk, and leaked:
 *              1 leaked, 24 B
 *
 * No stdio output: nothing else allocates.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

void *volatile keep[8];
static volatile int ready;

/* Overwrites the caller-saved registers and a stretch of stack below the
 * caller, where copies of the pointers the cases drop may linger. */
__attribute__((noipa)) static void scrub(void) {
    volatile char pad[8192];
    memset((char *)pad, 0, sizeof pad);
    __asm__ volatile("xor %%eax, %%eax\n\txor %%ecx, %%ecx\n\txor %%edx, %%edx\n\t"
                     "xor %%esi, %%esi\n\txor %%edi, %%edi\n\txor %%r8d, %%r8d\n\t"
                     "xor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\txor %%r11d, %%r11d"
                     : : : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11");
}

/* 1 if one line of /proc/self/maps covers [start, end). */
static int one_mapping(uintptr_t start, uintptr_t end) {
    static char text[1 << 16];
    int fd = open("/proc/self/maps", O_RDONLY);
    if (fd < 0) return 0;
    size_t len = 0;
    ssize_t got;
    while (len < sizeof text - 1 && (got = read(fd, text + len, sizeof text - 1 - len)) > 0) len += (size_t)got;
    close(fd);
    text[len] = 0;
    for (char *line = text; *line; ) {
        char *rest;
        uintptr_t a = strtoull(line, &rest, 16), b = strtoull(rest + 1, NULL, 16);
        if (a <= start && end <= b) return 1;
        char *next = strchr(line, '\n');
        if (next == NULL) break;
        line = next + 1;
    }
    return 0;
}

static void *hold_on_own_stack(void *arg) {
    (void)arg;
    void *volatile held = malloc(40);
    memset(held, 5, 40);
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    for (;;) pause();
    return held;
}

/* Maps size bytes ending exactly at end, or returns NULL when something is
 * there already (an older kernel takes the address as a hint only). */
static void *map_below(uintptr_t end, size_t size) {
    void *want = (void *)(end - size);
    void *got = mmap(want, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == MAP_FAILED) return NULL;
    if (got != want) { munmap(got, size); return NULL; }
    return got;
}

static int merged(int strict) {
    enum { ARENA = 1 << 16, STACK = 1 << 18, TRIES = 8 };
    void **arena = NULL;
    char *stack = NULL, *big = NULL;
    /* Placed, not left to the kernel: a plain mmap lands below the lowest
     * mapping only when no hole higher up fits, which ASLR does not promise.
     * A block whose neighbourhood is taken stays kept (keep[] is a root). */
    for (int i = 0; i < TRIES && stack == NULL; i++) {
        big = malloc(1 << 20);
        keep[i] = big;
        uintptr_t chunk = ((uintptr_t)big - 16) & ~(uintptr_t)4095;    /* glibc's mmapped chunk */
        if ((arena = map_below(chunk, ARENA)) == NULL) continue;
        if ((stack = map_below((uintptr_t)arena, STACK)) == NULL) { munmap(arena, ARENA); arena = NULL; }
    }
    if (stack == NULL) {
        /* Valgrind keeps the address space to itself: it refuses every
         * placement. Unplaced mappings still test the roots, not the merge. */
        if (strict) return 3;
        arena = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (arena == MAP_FAILED || stack == MAP_FAILED) return 4;
    }
    arena[100] = malloc(56);
    memset(arena[100], 6, 56);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, STACK);
    pthread_t t;
    if (pthread_create(&t, &attr, hold_on_own_stack, NULL) != 0) return 5;
    while (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {}
    if (strict && !one_mapping((uintptr_t)stack, (uintptr_t)big + (1 << 20))) return 3;
    return 0;
}

static ucontext_t main_context, coroutine_context;

struct list_head { struct list_head *next; size_t count; struct list_head *prev; };

__attribute__((noipa)) static void park_holding(void) {
    void *volatile held = malloc(88);
    memset(held, 7, 88);
    swapcontext(&coroutine_context, &main_context);    /* never resumed */
}

static void coroutine_body(void) {
    volatile struct list_head heads[2];
    for (int i = 0; i < 2; i++) {
        heads[i].next = heads[i].prev = (struct list_head *)&heads[i];
        heads[i].count = 0;
    }
    park_holding();
}

static int coroutine(void) {
    enum { SIZE = 1 << 16, PAGE = 4096 };
    char *stack = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED || mprotect(stack, PAGE, PROT_NONE) != 0) return 4;
    getcontext(&coroutine_context);
    coroutine_context.uc_stack.ss_sp = stack + PAGE;
    coroutine_context.uc_stack.ss_size = SIZE - PAGE;
    coroutine_context.uc_link = &main_context;
    makecontext(&coroutine_context, coroutine_body, 0);
    swapcontext(&main_context, &coroutine_context);
    return 0;
}

static int own_memfd(void) {
    int fd = memfd_create("heapgen-cache", 0);
    if (fd < 0 || ftruncate(fd, 4096) != 0) return 4;
    void **shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (shared == MAP_FAILED) return 4;
    shared[3] = malloc(64);
    memset(shared[3], 8, 64);
    return 0;
}

__attribute__((noipa)) static void give_libc_pointers(void) {
    char *buffer = malloc(4160);
    setvbuf(stdout, buffer + 64, _IOFBF, 4096);
    char *text = malloc(32);
    strcpy(text, "alpha beta gamma");
    if (strtok(text, " ") != text) abort();    /* strtok keeps text + 6 */
}

/* A page of .bss of its own, to seal. */
void *sealed_table[4096 / sizeof(void *)] __attribute__((aligned(4096)));

static int seal(void) {
    for (int i = 0; i < 4; i++) {
        sealed_table[i] = malloc(72);
        memset(sealed_table[i], 9, 72);
    }
    void **anonymous = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (anonymous == MAP_FAILED) return 4;
    anonymous[7] = malloc(40);
    memset(anonymous[7], 9, 40);
    if (mprotect(sealed_table, sizeof sealed_table, PROT_READ) != 0 || mprotect(anonymous, 4096, PROT_READ) != 0)
        return 5;
    return 0;
}

void **volatile blocks;     /* extern: the stores stay */
size_t block_count;

static void *outgrow_first_heap(void *arg) {
    (void)arg;
    const uintptr_t heap = 64ul << 20;
    blocks = malloc(200000 * sizeof *blocks);
    uintptr_t first = 0;
    for (;;) {
        void *p = malloc(1000);
        blocks[block_count++] = p;
        if (first == 0) first = (uintptr_t)p & ~(heap - 1);
        if (((uintptr_t)p & ~(heap - 1)) != first || block_count == 200000) break;
    }
    void *volatile leak = malloc(24);           /* carved from the top chunk */
    leak = NULL;
    for (size_t i = 0; i < block_count; i++)
        if (((uintptr_t)blocks[i] & ~(heap - 1)) == first) { free(blocks[i]); blocks[i] = NULL; }
    return leak;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int status = 2;
    if (strcmp(mode, "merged") == 0) {
        status = merged(argc > 2 && strcmp(argv[2], "strict") == 0);
    } else if (strcmp(mode, "coroutine") == 0) {
        status = coroutine();
    } else if (strcmp(mode, "memfd") == 0) {
        status = own_memfd();
    } else if (strcmp(mode, "libcdata") == 0) {
        give_libc_pointers();
        status = 0;
    } else if (strcmp(mode, "sealed") == 0) {
        status = seal();
    } else if (strcmp(mode, "arenatop") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, outgrow_first_heap, NULL);
        pthread_join(t, NULL);
        status = 0;
    }
    scrub();
    if (status == 0) exit(0);      /* a thread may still run: exit, not return */
    return status;
}
